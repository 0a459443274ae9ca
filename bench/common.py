"""What the bench scripts share: the project's paths, free ports, pinning to a core, and servers started and awaited.

A script run as `python bench/<name>.py` has bench/ on its path, so it imports this module as `common`.
"""

import contextlib
import json
import os
import socket
import subprocess
import time
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PROJECT_PY = ROOT / ".venv" / "bin" / "python"  # the project's venv (make bench), not the bench's own
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 10.0


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def pin(core: int) -> Callable[[], None]:
    """A preexec_fn that pins the child (and everything it starts) to one core."""
    return lambda: os.sched_setaffinity(0, {core})


def wait_http(url: str, proc: subprocess.Popen[bytes], timeout_s: float = START_TIMEOUT_S) -> None:
    """Wait until url answers 200; fail when the process exits first or after timeout_s."""
    deadline = time.monotonic() + timeout_s
    last: Exception | None = None
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the process exited with {proc.returncode} before {url} answered")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except Exception as exc:
            last = exc
        time.sleep(0.1)
    raise TimeoutError(f"{url} did not answer within {timeout_s:.0f} s: {last}")


def stop(proc: subprocess.Popen[bytes]) -> None:
    """Terminate the process, and kill it when it does not end in STOP_TIMEOUT_S."""
    proc.terminate()
    try:
        proc.wait(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=STOP_TIMEOUT_S)


@contextlib.contextmanager
def process(
    cmd: Sequence[str],
    ready_url: str,
    *,
    env: dict[str, str] | None = None,
    log: Path | None = None,
    core: int | None = None,
    timeout_s: float = START_TIMEOUT_S,
) -> Iterator[subprocess.Popen[bytes]]:
    """Run cmd in ROOT (output to log, else dropped; pinned to core if given) until the block ends.

    The block starts once ready_url answers 200.
    """
    with contextlib.ExitStack() as stack:
        out = stack.enter_context(open(log, "ab")) if log is not None else subprocess.DEVNULL
        proc = subprocess.Popen(
            list(cmd),
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT if log is not None else None,
            preexec_fn=pin(core) if core is not None else None,
        )
        try:
            wait_http(ready_url, proc, timeout_s)
            yield proc
        finally:
            stop(proc)


class FakeServer:
    """The project's fake server (fakeserver/) in its own process on a free port: `with FakeServer(...) as server:`."""

    def __init__(
        self,
        *flags: str,
        core: int | None = None,
        python: Path | str = PROJECT_PY,
        env: dict[str, str] | None = None,
        log: Path | None = None,
        timeout_s: float = START_TIMEOUT_S,
    ) -> None:
        self.port = free_port()
        self.cmd = [str(python), "-m", "fakeserver", "--port", str(self.port), *flags]
        self.core, self.env, self.log, self.timeout_s = core, env, log, timeout_s
        self._stack = contextlib.ExitStack()

    @property
    def url(self) -> str:
        """The server's root (http://127.0.0.1:PORT)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """The OpenAI base URL (…/v1)."""
        return f"{self.url}/v1"

    def __enter__(self) -> "FakeServer":
        ready = f"{self.url}/health"
        self._stack.enter_context(
            process(self.cmd, ready, env=self.env, log=self.log, core=self.core, timeout_s=self.timeout_s)
        )
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    def take_records(self) -> list[dict[str, Any]]:
        """Every request the server recorded since the last call (and forget them)."""
        with urllib.request.urlopen(f"{self.url}/fake/records?clear=1", timeout=30) as resp:
            records: list[dict[str, Any]] = json.loads(resp.read())
            return records
