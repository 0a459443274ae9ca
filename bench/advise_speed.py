"""Speed: how long advise() takes per call over every option a comparison would rank (model x GPU x count x priority).

Usage: .venv/bin/python bench/advise_speed.py [--repeat 3] [--limit-ms 20]
Method: build one AdviceRequest per (catalog model, catalog GPU, GPU count in 1/2/4/8, priority), warm the caches
with one pass, then time every call `--repeat` times with time.perf_counter and report the median of each call's
times: p50, p95, p99 and the slowest, with the slowest request named. Exit 1 when p99 exceeds --limit-ms.
"""

import argparse
import contextlib
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from catalog import load_gpus, load_models  # noqa: E402
from selector import AdviceRequest, SelectorError, advise  # noqa: E402

GPU_COUNTS = (1, 2, 4, 8)
PRIORITIES = ("latency", "throughput", "cost")


def requests() -> list[AdviceRequest]:
    """Every option of a full comparison grid."""
    return [
        AdviceRequest(gpu=gpu.id, gpus=count, model=model.id, priority=priority, concurrency=64)
        for model in load_models()
        for gpu in load_gpus()
        for count in GPU_COUNTS
        for priority in PRIORITIES
    ]


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--limit-ms", type=float, default=20.0)
    args = parser.parse_args()
    grid = requests()
    for request in grid:  # warm the cached catalogs and rules
        with contextlib.suppress(SelectorError):
            advise(request)
    times_ms: list[tuple[float, AdviceRequest]] = []
    for request in grid:
        runs: list[float] = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            with contextlib.suppress(SelectorError):
                advise(request)
            runs.append((time.perf_counter() - start) * 1000)
        times_ms.append((statistics.median(runs), request))
    values = [t for t, _ in times_ms]
    slowest, slow_request = max(times_ms, key=lambda item: item[0])
    print(f"advise() over {len(grid)} options ({args.repeat} timings each, median per option)")
    print(f"p50 {_percentile(values, 0.5):.2f} ms  p95 {_percentile(values, 0.95):.2f} ms  ", end="")
    print(f"p99 {_percentile(values, 0.99):.2f} ms  max {slowest:.2f} ms")
    print(f"slowest: {slow_request.model} on {slow_request.gpus}x {slow_request.gpu}, {slow_request.priority.value}")
    return 0 if _percentile(values, 0.99) <= args.limit_ms else 1


if __name__ == "__main__":
    raise SystemExit(main())
