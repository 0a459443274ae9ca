"""Open-loop send lag: how late the probe's trace replay writes each request at a fixed rate (Poisson, uniform)."""

import argparse
import contextlib
import json
import math
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from common import PROJECT_PY, ROOT, FakeServer, pin

BENCH = ROOT / "bench"
sys.path.insert(0, str(ROOT))

from probes.traces import TraceFormat, read_trace  # noqa: E402  (the project root is put on the path just above)

RATE_RPS = 100.0
DURATION_S = 20.0
LIMIT_P99_MS = 2.0
TTFT_MS = 20.0
TPOT_MS = 5.0
INPUT_TOKENS = (16, 64)  # uniform, inclusive: short prompts
OUTPUT_TOKENS = (16, 64)  # short outputs: about 0.2 s per request, some 20 in flight at 100 requests/s
MAX_IN_FLIGHT = 256
ARRIVALS = ("poisson", "uniform")
RUN_TIMEOUT_S = 300.0


@dataclass
class ReplayResult:
    """One replay: the probe's own percentiles, and what the samples say against the trace's schedule."""

    arrivals: str
    rate_rps: float
    duration_s: float
    requests: int
    sent: int
    completed: int
    failed: int
    errors: dict[str, int]
    lag_p50_ms: float | None  # the probe's levels[0].schedule_lag_ms
    lag_p99_ms: float | None
    lag_max_ms: float  # sample start_s minus the trace's arrival, every request
    lag_p999_ms: float
    late_over_limit: int  # requests sent more than the limit late
    elapsed_s: float
    load_before: str
    load_after: str
    client_cpu_s: float
    other_cpu_pct: float  # the client core's busy time not spent by the probe, over the replay's wall time


def loadavg() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _cpu_lines() -> dict[str, list[int]]:
    with open("/proc/stat") as f:
        return {p[0]: [int(x) for x in p[1:9]] for p in (line.split() for line in f) if p[0].startswith("cpu")}


def core_busy_s(core: int) -> float:
    """Seconds the core spent busy (neither idle nor waiting for I/O) since boot, steal included."""
    ticks = _cpu_lines()[f"cpu{core}"]
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


def idle_ratio(window_s: float = 3.0) -> float:
    """Share of CPU time both cores spent idle over the window (from /proc/stat)."""
    a = _cpu_lines()["cpu"]
    time.sleep(window_s)
    b = _cpu_lines()["cpu"]
    deltas = [y - x for x, y in zip(a, b, strict=True)]
    return deltas[3] / max(1, sum(deltas))


def wait_idle(min_ratio: float, log: Callable[[str], None], max_wait_s: float = 600.0) -> None:
    """Before a replay: wait until the machine is this idle (other work on the cores shows in the figures)."""
    deadline = time.monotonic() + max_wait_s
    while (ratio := idle_ratio()) < min_ratio:
        if time.monotonic() > deadline:
            log(f"  still only {ratio:.0%} idle after {max_wait_s:g} s; running anyway")
            return
        log(f"  machine {ratio:.0%} idle, waiting for {min_ratio:.0%}")


def percentile(values: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default)."""
    if not values:
        return math.nan
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


# The fake server: fixed TTFT and per-token delay, no metrics, no records (bench/common.py starts it, pinned).
SERVER_FLAGS = (
    *("--ttft-ms", str(TTFT_MS), "--tpot-ms", str(TPOT_MS), "--tokens", str(OUTPUT_TOKENS[1])),
    *("--no-metrics", "--no-records"),
)


def arrival_times(arrivals: str, rate_rps: float, duration_s: float, rng: random.Random) -> list[float]:
    """Seconds from the first request: Poisson (exponential gaps) or uniform (equal gaps), over the duration."""
    count = max(1, round(rate_rps * duration_s))
    if arrivals == "uniform":
        return [i / rate_rps for i in range(count)]
    times, t = [0.0], 0.0
    while len(times) < count:
        t += rng.expovariate(rate_rps)
        times.append(t)
    return times


def write_trace(path: Path, fmt: TraceFormat, times_s: list[float], rng: random.Random) -> None:
    """The trace file: one request per arrival, short prompts and outputs."""
    rows = [(t, rng.randint(*INPUT_TOKENS), rng.randint(*OUTPUT_TOKENS)) for t in times_s]
    if fmt == TraceFormat.MOONCAKE:
        text = "".join(
            json.dumps({"timestamp": round(t * 1000.0, 3), "input_length": i, "output_length": o, "hash_ids": []})
            + "\n"
            for t, i, o in rows
        )
    else:
        text = "timestamp_s,input_tokens,output_tokens\n" + "".join(f"{t:.6f},{i},{o}\n" for t, i, o in rows)
    path.write_text(text, encoding="utf-8")


def run_replay(
    server: FakeServer, arrivals: str, args: argparse.Namespace, core: int, work: Path, log: Callable[[str], None]
) -> ReplayResult:
    """One replay by the probe's CLI in a fresh process pinned to the client core; lags read from its JSON."""
    rng = random.Random(f"{args.seed}-{arrivals}")
    fmt = TraceFormat(args.trace_format)
    trace = work / f"trace-{arrivals}.{'jsonl' if fmt == TraceFormat.MOONCAKE else 'csv'}"
    write_trace(trace, fmt, arrival_times(arrivals, args.rate, args.duration_s, rng), rng)
    # The schedule exactly as the probe reads it (same file, same reader): line -> arrival_s.
    schedule = {req.line: req.arrival_s for req in read_trace(trace, fmt, start_s=0.0, duration_s=None)}
    out = work / f"run-{arrivals}.json"
    cmd = [
        str(PROJECT_PY),
        "-m",
        "probes",
        *("--base-url", server.base_url, "--model", "fake", "--workload", "trace"),
        *("--trace", str(trace), "--trace-format", str(fmt), "--max-in-flight", str(MAX_IN_FLIGHT)),
        *("--ttft-timeout", "30", "--no-metrics", "--no-db", "--quiet", "--output", str(out)),
    ]
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "PROBE_MAX_REQUESTS_PER_RUN": str(len(schedule) + 10),
        "PROBE_MAX_CONCURRENCY": str(max(MAX_IN_FLIGHT, 512)),
    }
    load_before = loadavg()
    usage_before = os.times()
    busy_before = core_busy_s(core)
    started = time.monotonic()
    proc = subprocess.run(
        cmd, cwd=ROOT, preexec_fn=pin(core), timeout=RUN_TIMEOUT_S, env=env, capture_output=True, text=True
    )
    elapsed_s = time.monotonic() - started
    busy_s = core_busy_s(core) - busy_before
    usage_after = os.times()
    load_after = loadavg()
    if proc.returncode != 0 or not out.exists():
        raise RuntimeError(f"the probe exited with {proc.returncode}: {proc.stderr.strip()[-2000:]}")
    data = json.loads(out.read_text())
    level = data["levels"][0]
    lag = level.get("schedule_lag_ms") or {}
    lags = [s["start_s"] * 1000.0 - schedule[s["trace_line"]] * 1000.0 for s in data["samples"]]
    client_cpu_s = (usage_after.children_user + usage_after.children_system) - (
        usage_before.children_user + usage_before.children_system
    )
    result = ReplayResult(
        arrivals=arrivals,
        rate_rps=args.rate,
        duration_s=args.duration_s,
        requests=len(schedule),
        sent=len(data["samples"]),
        completed=int(level["completed"]),
        failed=int(level["failed"]),
        errors=dict(level.get("errors") or {}),
        lag_p50_ms=lag.get("p50"),
        lag_p99_ms=lag.get("p99"),
        lag_max_ms=max(lags) if lags else math.nan,
        lag_p999_ms=percentile(lags, 99.9),
        late_over_limit=sum(1 for x in lags if x > args.limit_ms),
        elapsed_s=elapsed_s,
        load_before=load_before,
        load_after=load_after,
        client_cpu_s=client_cpu_s,
        other_cpu_pct=max(0.0, busy_s - client_cpu_s) / elapsed_s * 100.0,
    )
    mine = percentile(lags, 99)
    if result.lag_p99_ms is not None and abs(mine - result.lag_p99_ms) > 0.01:
        log(f"  note: p99 from the samples {mine:.3f} ms, the probe reports {result.lag_p99_ms:.3f} ms")
    return result


@contextlib.contextmanager
def workdir(keep: Path | None) -> Iterator[Path]:
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        yield keep
        return
    with tempfile.TemporaryDirectory(prefix="schedule-lag-") as tmp:
        yield Path(tmp)


def ms(x: float | None) -> str:
    return "n/a" if x is None or math.isnan(x) else f"{x:.3f}"


def report(results: list[ReplayResult], meta: dict[str, Any]) -> str:
    """The Markdown table, one row per replay."""
    lines = [
        f"{meta['started']} UTC; client core {meta['client_core']}, server core {meta['server_core']}; "
        f"fake server TTFT {TTFT_MS:g} ms, {TPOT_MS:g} ms per token; trace ({meta['trace_format']}) of "
        f"{meta['rate_rps']:g} requests/s for {meta['duration_s']:g} s, input {INPUT_TOKENS[0]}-{INPUT_TOKENS[1]} "
        f"and output {OUTPUT_TOKENS[0]}-{OUTPUT_TOKENS[1]} tokens; limit: lag p99 <= {meta['limit_ms']:g} ms.",
        "",
        "Lag: when the probe wrote the request's bytes to its connection minus the request's arrival time in the "
        "trace, both on the probe's clock from the replay's start; p50 and p99 as the probe reports them "
        "(levels[0].schedule_lag_ms), p99.9 and max from its samples. Other work on its core: the client core's "
        "busy time (/proc/stat) not spent by the probe, over the replay's wall time.",
        "",
        "| arrivals | requests | sent | failed | lag p50 ms | lag p99 ms | lag p99.9 ms | lag max ms "
        f"| > {meta['limit_ms']:g} ms | probe CPU s | other work on its core | load avg before | load avg after |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r.arrivals} | {r.requests} | {r.sent} | {r.failed} | {ms(r.lag_p50_ms)} | {ms(r.lag_p99_ms)} "
            f"| {ms(r.lag_p999_ms)} | {ms(r.lag_max_ms)} | {r.late_over_limit} | {r.client_cpu_s:.1f} "
            f"| {r.other_cpu_pct:.0f}% | {r.load_before} | {r.load_after} |"
        )
    lines += ["", f"Versions: python {meta['python']}, linux {meta['linux']}."]
    return "\n".join(lines)


def verdict(results: list[ReplayResult], limit_ms: float) -> list[str]:
    """Why the bench fails, one reason a line (none: it passes)."""
    reasons = []
    for r in results:
        if r.lag_p99_ms is None:
            reasons.append(f"{r.arrivals}: the probe reported no send lag")
        elif r.lag_p99_ms > limit_ms:
            busy = f" (other work took {r.other_cpu_pct:.0f}% of the probe's core)" if r.other_cpu_pct >= 5 else ""
            reasons.append(f"{r.arrivals}: lag p99 {r.lag_p99_ms:.3f} ms > {limit_ms:g} ms{busy}")
        if r.sent != r.requests:
            reasons.append(f"{r.arrivals}: {r.sent} of {r.requests} requests sent")
        if r.failed:
            reasons.append(f"{r.arrivals}: {r.failed} requests failed {r.errors}")
    return reasons


def main() -> None:
    import platform

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rate", type=float, default=RATE_RPS, help="requests per second of the trace")
    parser.add_argument("--duration-s", type=float, default=DURATION_S, help="seconds of trace per replay")
    parser.add_argument("--arrivals", default=",".join(ARRIVALS), help="comma-separated: poisson, uniform")
    parser.add_argument("--trace-format", choices=("csv", "mooncake"), default="csv")
    parser.add_argument("--limit-ms", type=float, default=LIMIT_P99_MS, help="fail when a lag p99 is above this")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--wait-idle",
        type=float,
        default=0.0,
        metavar="RATIO",
        help="before each replay, wait (up to 10 min) until both cores are this idle, e.g. 0.9",
    )
    parser.add_argument("--out", type=Path, default=BENCH / "results", help="JSON and Markdown results here")
    parser.add_argument("--work", type=Path, default=None, help="keep the traces and the probe's JSON here")
    args = parser.parse_args()
    if args.rate <= 0 or args.duration_s <= 0:
        parser.error("--rate and --duration-s must be > 0")
    wanted = [a for a in args.arrivals.split(",") if a]
    if not wanted or set(wanted) - set(ARRIVALS):
        parser.error(f"--arrivals: any of {', '.join(ARRIVALS)}")
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        parser.error("needs two cores: one for the server, one for the probe")
    client_core, server_core = cores[0], cores[1]
    os.sched_setaffinity(0, {server_core})  # this driver idles on the server's core while the probe runs

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    meta: dict[str, Any] = {
        "started": datetime.now(UTC).strftime("%Y-%m-%d %H:%M"),
        "client_core": client_core,
        "server_core": server_core,
        "rate_rps": args.rate,
        "duration_s": args.duration_s,
        "trace_format": args.trace_format,
        "limit_ms": args.limit_ms,
        "python": platform.python_version(),
        "linux": platform.release(),
    }
    results: list[ReplayResult] = []
    with FakeServer(*SERVER_FLAGS, core=server_core) as server, workdir(args.work) as work:
        for arrivals in wanted:
            if args.wait_idle:
                wait_idle(args.wait_idle, log)
            r = run_replay(server, arrivals, args, client_core, work, log)
            results.append(r)
            log(
                f"{arrivals}: {r.sent}/{r.requests} sent, {r.failed} failed, lag p50 {ms(r.lag_p50_ms)} ms, "
                f"p99 {ms(r.lag_p99_ms)} ms, max {ms(r.lag_max_ms)} ms ({r.elapsed_s:.1f} s)"
            )
    text = report(results, meta)
    print(text)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "schedule_lag.md").write_text(text + "\n")
    (args.out / "schedule_lag.json").write_text(
        json.dumps({"meta": meta, "runs": [asdict(r) for r in results]}, indent=1)
    )
    reasons = verdict(results, args.limit_ms)
    if reasons:
        print("\nFAIL: " + "; ".join(reasons), file=sys.stderr)
        if any(r.other_cpu_pct >= 5 for r in results):
            print("(on a shared machine, rerun with --wait-idle 0.9)", file=sys.stderr)
        sys.exit(1)
    print(f"\nOK: every lag p99 within {args.limit_ms:g} ms.", file=sys.stderr)


if __name__ == "__main__":
    main()
