"""Runs whose process died: who owns a run (host, PID namespace, pid, process token), and marking them interrupted."""

import os
import socket
import uuid
from datetime import UTC, datetime, timedelta
from functools import cache

from sqlalchemy import Engine, select, update

from db.engine import rowcount, session_factory
from db.run_tables import RunRow
from probes.models import RunStatus
from probes.worker import HEARTBEAT_INTERVAL_S

MISSED_HEARTBEATS = 4  # a running run that missed this many heartbeats in a row is taken as interrupted
HEARTBEAT_STALE_S = MISSED_HEARTBEATS * HEARTBEAT_INTERVAL_S
INTERRUPTED_ERROR = "the process running this probe stopped (crash or restart); finished requests are kept"


_PROCESS_TOKEN = uuid.uuid4().hex[:12]  # tells this process from an earlier one that had the same pid


@cache
def _host() -> str:
    """The host part of an owner: the host name, and the PID namespace where there is one.

    Two containers can share a host name, and their pids mean nothing to each other.
    """
    try:
        namespace = os.readlink("/proc/self/ns/pid")  # "pid:[4026531836]"
    except OSError:
        return socket.gethostname()
    return f"{socket.gethostname()}/{namespace.removeprefix('pid:[').removesuffix(']')}"


def owner() -> str:
    """The owner of the runs this process starts: host, PID namespace, pid and a token for this very process."""
    return f"{_host()}:{os.getpid()}:{_PROCESS_TOKEN}"[:200]


def _owner_is_dead(owner: str) -> bool:
    """True when the owner ran on this host and its process is gone (or its pid now belongs to this process)."""
    host, _, rest = owner.partition(":")
    pid_text, _, token = rest.partition(":")
    if host != _host() or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if pid == os.getpid():
        return token != _PROCESS_TOKEN
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def recover_interrupted_runs(
    engine: Engine, stale_after_s: float = HEARTBEAT_STALE_S, now: datetime | None = None
) -> int:
    """Mark RUNNING runs whose heartbeat is stale as INTERRUPTED (their samples stay); safe with several replicas.

    The heartbeat was written with its writer's clock and is compared with this one's: hosts keep NTP time.
    """
    cutoff = (now or datetime.now(UTC)) - timedelta(seconds=stale_after_s)
    with session_factory(engine)() as session, session.begin():
        result = session.execute(
            update(RunRow)
            .where(RunRow.status == RunStatus.RUNNING.value, RunRow.heartbeat_at < cutoff)
            .values(status=RunStatus.INTERRUPTED.value, finished_at=RunRow.heartbeat_at, error=INTERRUPTED_ERROR)
        )
        return rowcount(result)


def recover_orphaned_runs(engine: Engine) -> int:
    """Mark RUNNING runs of this host whose process is gone INTERRUPTED at once (samples stay); returns how many.

    Runs of other hosts wait for their heartbeat to go stale (recover_interrupted_runs).
    """
    with session_factory(engine)() as session:  # read, then write only when needed (SQLite: no lock upgrade)
        rows = session.execute(select(RunRow.id, RunRow.owner).where(RunRow.status == RunStatus.RUNNING.value)).all()
    dead = [run_id for run_id, owner in rows if _owner_is_dead(owner)]
    if not dead:
        return 0
    with session_factory(engine)() as session, session.begin():
        result = session.execute(
            update(RunRow)
            .where(RunRow.id.in_(dead), RunRow.status == RunStatus.RUNNING.value)
            .values(status=RunStatus.INTERRUPTED.value, finished_at=RunRow.heartbeat_at, error=INTERRUPTED_ERROR)
        )
        return rowcount(result)
