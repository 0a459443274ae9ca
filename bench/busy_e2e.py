"""The browser tests on a busy machine: keep every core busy, run the e2e suite N times, report each run.

Usage: python bench/busy_e2e.py [--runs 3] [--load N] [--run-timeout 1800] (or `make busy-e2e`; docs/reliability.md).

The load is N pure-Python busy loops (default: one per core, `nproc`), started before the first run and stopped when
the script ends, however it ends (done, a failed run, a time limit, Ctrl-C or SIGTERM). Each run is
`python -m pytest -m e2e -p no:cacheprovider -q`, bounded by --run-timeout; its output is kept in a log folder.
The exit status is 0 only if every run passed.
"""

import argparse
import datetime as dt
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

ROOT = Path(__file__).resolve().parents[1]
BUSY_LOOP = "while True: pass"
SUITE = ["-m", "pytest", "-m", "e2e", "-p", "no:cacheprovider", "-q"]
COUNTS = re.compile(r"(\d+) (passed|failed|errors?|skipped|deselected)")


@dataclass(frozen=True)
class RunResult:
    """One run of the suite: pytest's counts, its wall time and how it ended."""

    index: int
    passed: int
    failed: int
    errors: int
    duration_s: float
    exit_code: int | None  # None: stopped at the time limit
    load_1m: float  # the 1-minute load average when the run ended
    log: Path
    failures: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and self.failed == 0 and self.errors == 0 and self.passed > 0


def parse_counts(output: str) -> dict[str, int]:
    """pytest's final line ('20 passed, 1 failed, 541 deselected in 268.61s') as counts; 'error' counted as errors."""
    summary = [line for line in output.splitlines() if re.search(r"\b(passed|failed|errors?)\b.* in [\d.]+s", line)]
    counts = {"passed": 0, "failed": 0, "errors": 0}
    for number, kind in COUNTS.findall(summary[-1] if summary else ""):
        key = "errors" if kind.startswith("error") else kind
        if key in counts:
            counts[key] = int(number)
    return counts


def failed_tests(output: str) -> tuple[str, ...]:
    """The test ids pytest's short summary names as FAILED or ERROR."""
    return tuple(m.group(2) for m in re.finditer(r"^(FAILED|ERROR) (\S+)", output, flags=re.MULTILINE))


def load_average_1m() -> float:
    return os.getloadavg()[0]


@contextmanager
def cpu_load(processes: int) -> Iterator[list[subprocess.Popen[bytes]]]:
    """Keep `processes` cores busy with pure-Python loops for the duration of the block; always stop them."""
    loops = [subprocess.Popen([sys.executable, "-c", BUSY_LOOP]) for _ in range(processes)]
    try:
        yield loops
    finally:
        for loop in loops:
            loop.terminate()
        for loop in loops:
            try:
                loop.wait(timeout=10)
            except subprocess.TimeoutExpired:
                loop.kill()
                loop.wait()


def _group_alive(proc: subprocess.Popen[bytes]) -> bool:
    """Whether any process of the run's group (pytest, its app servers, Chromium) is still there."""
    proc.poll()  # reap pytest itself, or it counts as a member
    try:
        os.killpg(proc.pid, 0)
    except ProcessLookupError:
        return False
    return True


def _stop_group(proc: subprocess.Popen[bytes]) -> None:
    """Stop a pytest run and everything it started: its whole process group, politely first, then for good."""
    for sig, wait_s in ((signal.SIGTERM, 20.0), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            if not _group_alive(proc):
                return
            time.sleep(0.2)


def run_suite(index: int, log_dir: Path, timeout_s: float, extra: Sequence[str]) -> RunResult:
    """One run of the browser suite; its output goes to log_dir/run-<index>.log."""
    log = log_dir / f"run-{index}.log"
    started = time.perf_counter()
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, *SUITE, *extra], cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            exit_code: int | None = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            exit_code = None
        finally:
            if _group_alive(proc):  # a time limit, Ctrl-C, or a server a finished run left behind
                _stop_group(proc)
    duration_s = time.perf_counter() - started
    output = log.read_text(encoding="utf-8", errors="replace")
    counts = parse_counts(output)
    return RunResult(
        index=index,
        passed=counts["passed"],
        failed=counts["failed"],
        errors=counts["errors"],
        duration_s=duration_s,
        exit_code=exit_code,
        load_1m=load_average_1m(),
        log=log,
        failures=failed_tests(output),
    )


def _minutes(seconds: float) -> str:
    return f"{int(seconds // 60)}:{int(seconds % 60):02d}"


def table(results: Sequence[RunResult], load: int, date: str) -> str:
    """The runs as the Markdown table of docs/reliability.md."""
    rows = [
        "| date | machine | load | run | passed | failed | errors | duration (m:ss) | load avg 1 min at end |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in results:
        ended = "" if r.exit_code is not None else " (time limit)"
        rows.append(
            f"| {date} | {os.cpu_count()} cores | {load} busy loops | {r.index} | {r.passed} | {r.failed} | "
            f"{r.errors} | {_minutes(r.duration_s)}{ended} | {r.load_1m:.1f} |"
        )
    return "\n".join(rows)


def _raise_interrupt(signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=3, help="how many runs of the suite, one after the other")
    parser.add_argument("--load", type=int, default=os.cpu_count() or 2, help="busy loops (default: one per core)")
    parser.add_argument("--run-timeout", type=float, default=1800.0, help="time limit of one run, seconds")
    parser.add_argument("--log-dir", type=Path, default=None, help="where the runs' output goes (default: a temp dir)")
    parser.add_argument("pytest_args", nargs="*", help="more pytest arguments after --, e.g. -- -k probe")
    args = parser.parse_args(argv)
    log_dir: Path = args.log_dir or Path(tempfile.mkdtemp(prefix="busy-e2e-"))
    log_dir.mkdir(parents=True, exist_ok=True)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):  # Ctrl-C or a kill stops the load too (finally below)
        signal.signal(sig, _raise_interrupt)  # SIGINT too: a background job inherits it ignored
    date = dt.date.today().isoformat()
    print(
        f"{date}: {args.runs} run(s) of the browser suite, {args.load} busy loop(s) on {os.cpu_count()} core(s), "
        f"at most {args.run_timeout:.0f} s each; logs in {log_dir}",
        flush=True,
    )
    results: list[RunResult] = []
    interrupted = False
    try:
        with cpu_load(args.load):
            for index in range(1, args.runs + 1):
                result = run_suite(index, log_dir, args.run_timeout, args.pytest_args)
                results.append(result)
                verdict = "ok" if result.ok else "FAILED" if result.exit_code is not None else "TIME LIMIT"
                print(
                    f"run {index}: {verdict}: {result.passed} passed, {result.failed} failed, {result.errors} errors "
                    f"in {_minutes(result.duration_s)} (load average {result.load_1m:.1f}); log {result.log}",
                    flush=True,
                )
                for test_id in result.failures:
                    print(f"    {test_id}", flush=True)
    except KeyboardInterrupt:
        interrupted = True
        print("interrupted: the run and the load are stopped", file=sys.stderr, flush=True)
    print()
    print(table(results, args.load, date))
    if interrupted:
        return 130
    return 0 if len(results) == args.runs and all(r.ok for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
