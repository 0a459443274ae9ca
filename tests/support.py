"""Test support: free ports, waiting for a port, starting the app as the README does."""

import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT_SCALE = float(os.environ.get("TEST_TIMEOUT_SCALE", "1"))
"""Multiplies the tests' time limits, which already leave room for a busy 2-core machine; raise it on a slower one."""
APP_START_S = 120.0 * TIMEOUT_SCALE  # `streamlit run app.py` answering its health check, other work on the cores


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_http(url: str, timeout_s: float = 60.0, proc: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout_s
    last: Exception | None = None
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"process exited with {proc.returncode} before {url} answered")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except Exception as exc:
            last = exc
        time.sleep(0.2)
    raise TimeoutError(f"{url} did not answer within {timeout_s}s: {last}")


@contextmanager
def running_app(
    database_url: str,
    extra_env: dict[str, str] | None = None,
    log_path: Path | None = None,
    port: int | None = None,
    cwd: Path | None = None,
) -> Iterator[str]:
    """Start `streamlit run app.py` on a free port with this database; yield its base URL.

    Its stdout and stderr go to log_path (or a temporary file), so tests can search what it logged. With cwd it runs
    there (a relative SQLite path such as the README's `sqlite:///data/llm-serving.db` then lands under cwd).
    """
    port = port or free_port()
    env = {**os.environ, "DATABASE_URL": database_url, **(extra_env or {})}
    cmd = [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        "app.py" if cwd is None else str(ROOT / "app.py"),
        "--server.port",
        str(port),
        "--server.address",
        "127.0.0.1",
        "--server.headless",
        "true",
    ]
    log = open(log_path, "ab") if log_path else tempfile.TemporaryFile()  # noqa: SIM115
    proc = subprocess.Popen(cmd, cwd=cwd or ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_http(f"{base}/_stcore/health", timeout_s=APP_START_S, proc=proc)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        log.close()


def wait_until(condition: Callable[[], bool], timeout_s: float = 20.0) -> None:
    """Poll until `condition` holds (a state, not a time), failing after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "the state never came"
        time.sleep(0.005)
