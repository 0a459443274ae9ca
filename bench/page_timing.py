"""Time each page's script, warm: AppTest runs the whole app (router + page) repeatedly; report p50/p90/max.

Usage: .venv/bin/python bench/page_timing.py [--runs 20] [--database-url URL]
Method: one cold run per page (imports, catalog loads, engine creation), then N timed reruns with the same
session, as a user's interactions rerun the script. The figure is wall time of AppTest.run(), which includes
AppTest's own overhead, so the page's script alone is a little faster than reported.
"""

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PAGES: dict[str, dict[str, str]] = {
    "home": {},
    "tco": {"price": "15", "currency": "CNY", "tps": "588", "out_tokens": "200", "hours": "720"},
    "selector": {"gpu": "H100", "model": "llama3.1-70b", "gpus": "2", "workload": "rag", "concurrency": "64"},
    "probe": {},
    "runs": {},
}


def time_page(page: str, params: dict[str, str], runs: int) -> list[float]:
    from streamlit.testing.v1 import AppTest

    from ui.first_paint import painted_key

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.query_params.update(params)
    at.session_state[painted_key(page)] = True  # the whole page, as after the browser's first paint (no browser here)
    at.switch_page(f"views/{page}.py")
    at.run()
    if at.exception:
        raise RuntimeError(f"{page}: {at.exception}")
    timings = []
    for _ in range(runs):
        start = time.perf_counter()
        at.run()
        timings.append((time.perf_counter() - start) * 1000)
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--database-url", default=None)
    args = parser.parse_args()
    os.environ["DATABASE_URL"] = args.database_url or f"sqlite:///{tempfile.mkdtemp()}/bench.db"
    print(f"{'page':<10} {'p50 ms':>8} {'p90 ms':>8} {'max ms':>8}")
    for page, params in PAGES.items():
        if not (ROOT / "views" / f"{page}.py").exists():
            continue
        t = sorted(time_page(page, params, args.runs))
        p90 = t[min(len(t) - 1, int(len(t) * 0.9))]
        print(f"{page:<10} {statistics.median(t):8.1f} {p90:8.1f} {t[-1]:8.1f}")


if __name__ == "__main__":
    main()
