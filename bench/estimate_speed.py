"""Speed: how long perf.estimate() takes for one configuration, as `python -m perf` asks it (four levels + SLO search).

Usage: .venv/bin/python bench/estimate_speed.py [--limit-ms 100]
Method: in a fresh process, estimate every catalog model x (H100, A100, L40S, RTX 4090, H20, MI300X) x 1/2/4/8 GPUs
x engine that fits (about a thousand configurations) at concurrency 1, 10, 50 and 100 with 1,000 input and 200
output tokens. Each is timed once with time.perf_counter, perf's result cache cleared before every call, closed-loop
traces kept (as in a running app). Reports the first call (set-up included), p50, p95, p99 and the slowest, and
exits 1 when p99 passes --limit-ms.
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from catalog import load_models  # noqa: E402
from perf import ENGINE_FAMILIES, PerfError, PerfRequest, estimate  # noqa: E402
from perf.estimate import _estimate  # noqa: E402

GPUS = ("h100", "a100", "l40s", "rtx 4090", "h20", "mi300x")
COUNTS = (1, 2, 4, 8)


def main() -> int:
    """Time every configuration once; print the table row for docs/performance.md."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--limit-ms", type=float, default=100.0)
    args = parser.parse_args()
    times_ms: list[tuple[float, str]] = []
    first_ms = None
    for model in load_models():
        for gpu in GPUS:
            for count in COUNTS:
                for engine in ENGINE_FAMILIES:
                    request = PerfRequest(gpu=gpu, gpus=count, model=model.id, engine=engine)
                    _estimate.cache_clear()
                    started = time.perf_counter()
                    try:
                        estimate(request)
                    except PerfError:
                        continue
                    elapsed = (time.perf_counter() - started) * 1000
                    if first_ms is None:
                        first_ms = elapsed
                        continue
                    times_ms.append((elapsed, f"{count}x {gpu}, {model.id}, {engine}"))
    values = sorted(t for t, _ in times_ms)
    slowest = max(times_ms)
    p95, p99 = (values[min(len(values) - 1, int(q * len(values)))] for q in (0.95, 0.99))
    print(
        f"| {len(values) + 1} configurations | {first_ms:.0f} ms | {statistics.median(values):.1f} ms | "
        f"{p95:.1f} ms | {p99:.1f} ms | {slowest[0]:.0f} ms ({slowest[1]}) |"
    )
    return 0 if p99 <= args.limit_ms else 1


if __name__ == "__main__":
    sys.exit(main())
