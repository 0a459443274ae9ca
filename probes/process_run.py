"""A probe run in a process of its own: the page's handle on it, and the child's side of their socket.

A probe in a thread of the web server shares its GIL and its cores with every page rerun: its requests go out late
and its clock reads late. ProcessProbeRun starts `python -m probes` as a child (CHILD_COMMAND) and talks to it over a
socket pair: the settings go down once (the API key with them, never on a command line, in the environment or in a
log), progress comes up every PROGRESS_INTERVAL_S, then the end. The child stores the run itself, through the sink
its entry point opens (probes/__main__.py: the database's recorder), so samples reach the database as they arrive and
its heartbeat is its own: a child that dies leaves a run the sweeper marks interrupted. A parent that dies closes
its end of the socket: the child cancels the run (finished requests stay) and exits.
"""

import contextlib
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path

from probes import errors
from probes.config import RunSettings
from probes.errors import ProbeError
from probes.handle import RunHandle
from probes.models import RunStatus
from probes.sink import RunSink
from probes.wording import CHILD_LOST, CHILD_SLOW
from probes.worker import ProbeRun

CHILD_COMMAND = "_run-child"  # python -m probes _run-child FD: not for people (no help, no contract)
PROGRESS_INTERVAL_S = 0.25  # how often the child sends its progress up (the page polls every 0.5 s)
START_TIMEOUT_S = 120.0  # a child that has not started (or refused) the run by then is stopped
STOP_WAIT_S = 10.0  # after its last word, a child that has not exited by then is killed

_CODE_ROOT = Path(__file__).resolve().parent.parent  # the folder that holds probes/ and the packages it imports
ErrorText = tuple[str, str]  # an exception sent over the socket: its class name and its message


def _as_text(error: BaseException | None) -> ErrorText | None:
    return None if error is None else (type(error).__name__, str(error))


def _as_error(text: ErrorText | None) -> BaseException | None:
    """The exception again: a ProbeError subclass by its name, anything else as a ProbeError with its message."""
    if text is None:
        return None
    name, message = text
    kind = getattr(errors, name, None)
    if isinstance(kind, type) and issubclass(kind, ProbeError):
        return kind(message)
    return ProbeError(f"{name}: {message}")


class ProcessProbeRun(RunHandle):
    """ProbeRun's interface (start, cancel, progress, done, wait, result, error, sink_errors) for a run in a child.

    The child stores the run in the database at database_url; start() returns once it is recorded and started, and
    raises the child's ProbeError when the settings are refused, as ProbeRun.start() does.
    """

    def __init__(self, settings: RunSettings, *, database_url: str, start_timeout_s: float = START_TIMEOUT_S) -> None:
        super().__init__()
        self.settings = settings
        self.run_id: str | None = None
        self.sink_errors: list[str] = []
        self.pid: int | None = None  # the child's process id, once started
        self._database_url = database_url
        self._start_timeout_s = start_timeout_s
        self._send_lock = threading.Lock()
        self._conn: Connection | None = None
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> "ProcessProbeRun":
        """Start the child and hand it the run; raises its refusal (ProbeError) or a child that did not start."""
        ours, theirs = socket.socketpair()
        path = os.environ.get("PYTHONPATH")  # the child imports this very code, whatever the working directory
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (str(_CODE_ROOT), path)))}
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-m", "probes", CHILD_COMMAND, str(theirs.fileno())],
                pass_fds=(theirs.fileno(),),
                env=env,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # a Ctrl-C in the app's terminal reaches the app; the child hears of it by EOF
            )
        finally:
            theirs.close()
        self.pid = self._process.pid
        conn = self._conn = Connection(ours.detach())
        try:
            conn.send((self.settings, self._database_url))
            if not conn.poll(self._start_timeout_s):
                raise ProbeError(CHILD_SLOW.format(seconds=f"{self._start_timeout_s:g}"))
            kind, payload = conn.recv()
        except (EOFError, OSError, ProbeError) as exc:
            self._stop_child()
            if isinstance(exc, ProbeError):
                raise
            raise ProbeError(CHILD_LOST.format(code=self._process.returncode)) from exc
        if kind == "refused":
            self.run_id = payload[0]
            self._stop_child()
            error = _as_error(payload[1])
            raise error if isinstance(error, ProbeError) else ProbeError(str(error))
        self.run_id = payload
        threading.Thread(target=self._listen, name="probe-child", daemon=True).start()
        return self

    def cancel(self) -> None:
        """Ask the child to stop sending; what finished stays (the run ends CANCELLED)."""
        self._send(("cancel", None))

    def _send(self, message: tuple[str, object]) -> None:
        conn = self._conn
        if conn is None or self._finished.is_set():
            return
        with self._send_lock, contextlib.suppress(OSError):  # the child is gone; the listener reports it
            conn.send(message)

    def _listen(self) -> None:
        """Take the child's reports until its last one, or until it dies."""
        conn = self._conn
        assert conn is not None
        ended = False
        try:
            while not ended:
                kind, payload = conn.recv()
                if kind == "progress":
                    self._progress = payload
                elif kind == "finished":
                    result, error, sink_errors, progress = payload
                    self._result, self._error, self.sink_errors = result, _as_error(error), sink_errors
                    self._progress = progress
                    ended = True
        except (EOFError, OSError):
            pass
        finally:
            self._stop_child()
            if not ended:
                code = self._process.returncode if self._process is not None else None
                self._error = ProbeError(CHILD_LOST.format(code=code))
                self._progress.update(status=RunStatus.FAILED, phase="finished", message=str(self._error))
            self._finished.set()

    def _stop_child(self) -> None:
        """Close our end (the child cancels on EOF) and reap the child, killing it if it lingers."""
        with self._send_lock:
            if self._conn is not None:
                self._conn.close()
        process = self._process
        if process is None:
            return
        try:
            process.wait(STOP_WAIT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def serve_child(fd: int, open_sink: Callable[[str], RunSink]) -> int:
    """The child's side: take the run from the parent on fd, run it into open_sink(database_url), report; exit code.

    A parent that goes away (EOF, or a send that fails) cancels the run; it still ends in the sink.
    """
    conn = Connection(fd)
    settings, database_url = conn.recv()
    run: ProbeRun | None = None
    try:
        run = ProbeRun(settings, sink=open_sink(database_url))
        run.start()
    except Exception as exc:  # a refusal (ProbeError) or a database that cannot record it: the parent raises it
        conn.send(("refused", (run.run_id if run is not None else None, _as_text(exc))))
        return 2
    conn.send(("started", run.run_id))
    threading.Thread(target=_obey, args=(conn, run), name="probe-parent", daemon=True).start()
    parent_gone = False
    while not run.wait(PROGRESS_INTERVAL_S):
        if not parent_gone:
            parent_gone = not _report(conn, ("progress", run.progress()))
            if parent_gone:
                run.cancel()
    _report(conn, ("finished", (run.result(), _as_text(run.error), list(run.sink_errors), run.progress())))
    return 0


def _report(conn: Connection, message: tuple[str, object]) -> bool:
    """Send one report up; False when the parent is gone."""
    try:
        conn.send(message)
        return True
    except OSError:
        return False


def _obey(conn: Connection, run: ProbeRun) -> None:
    """The child's listener: a cancel from the parent, or its end of the socket closing, cancels the run."""
    try:
        while conn.recv()[0] != "cancel":
            pass
    except (EOFError, OSError):
        pass
    if not run.done():
        run.cancel()
