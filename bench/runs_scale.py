"""Scale: fill a database with a million request samples, then time what /runs does (list runs, open one).

Usage: .venv/bin/python bench/runs_scale.py [--samples 1000000] [--runs 200] [--database-url URL] [--keep]
Method: runs of 5 levels (concurrency 1..16) with realistic samples (128 output tokens, so each sample's JSON
carries 127 inter-token gaps, ~3 KB) are written with bulk inserts; then each query is timed 5 times warm and
the median reported, on the run with the most samples. The page-level figure uses AppTest on /runs?runs=<id>.
"""

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sqlalchemy import insert  # noqa: E402

from db import init_db, make_engine  # noqa: E402
from db.run_queries import (  # noqa: E402
    error_summary,
    get_run,
    level_aggregates,
    list_runs,
    load_levels,
    run_filters,
    sample_counts,
)
from db.run_tables import LevelRow, RunRow, SampleRow  # noqa: E402
from probes.config import RunSettings  # noqa: E402
from probes.metrics import best_concurrency_within_slo, summarize_level  # noqa: E402
from probes.models import RequestSample, TokenSource  # noqa: E402

LEVELS = (1, 2, 4, 8, 16)
TOKENS = 128
TEMPLATES_PER_LEVEL = 50


def _template(rng: random.Random, level: int, concurrency: int, index: int) -> RequestSample:
    ttft = 180 + 6 * concurrency + rng.random() * 40
    tpot = 20 + concurrency * 0.3 + rng.random()
    itl = [round(tpot + rng.uniform(-1, 1), 3) for _ in range(TOKENS - 1)]
    return RequestSample(
        level_index=level,
        concurrency=concurrency,
        index=index,
        start_s=index * 0.05,
        ttft_ms=ttft,
        tpot_ms=sum(itl) / len(itl),
        e2e_ms=ttft + sum(itl),
        itl_ms=itl,
        input_tokens=400,
        output_tokens=TOKENS,
        token_source=TokenSource.USAGE,
        finish_reason="length",
    )


def fill(url: str, total_samples: int, runs: int, seed: int = 7) -> str:
    """Write the runs; return the id of the largest one."""
    engine = make_engine(url)
    init_db(engine)
    rng = random.Random(seed)
    per_run = max(len(LEVELS), total_samples // runs)
    per_level = per_run // len(LEVELS)
    templates = {lv: [_template(rng, lv, c, i) for i in range(TEMPLATES_PER_LEVEL)] for lv, c in enumerate(LEVELS)}
    start = datetime(2026, 11, 1, tzinfo=UTC)
    largest = ""
    written = 0
    t0 = time.perf_counter()
    for r in range(runs):
        run_id = uuid.uuid4().hex
        largest = largest or run_id
        endpoint = f"http://gpu-{r % 7}.internal:8000/v1"
        model = ("Qwen/Qwen2.5-7B-Instruct", "meta-llama/Llama-3.1-8B-Instruct", "Qwen/Qwen3-8B")[r % 3]
        settings = RunSettings(base_url=endpoint, model=model, concurrency=LEVELS, requests_per_level=per_level)
        started = start + timedelta(hours=r)
        levels = []
        for lv, concurrency in enumerate(LEVELS):
            levels.append(
                summarize_level(
                    lv,
                    concurrency,
                    templates[lv],
                    started_at=started,
                    finished_at=started + timedelta(seconds=60),
                    duration_s=60.0,
                    slo=settings.slo,
                )
            )
        with engine.begin() as connection:
            connection.execute(
                insert(RunRow),
                [
                    {
                        "id": run_id,
                        "endpoint": endpoint,
                        "model": model,
                        "api": "chat",
                        "workload": "seed",
                        "status": "completed",
                        "settings_json": settings.model_dump_json(),
                        "error": None,
                        "started_at": started,
                        "finished_at": started + timedelta(minutes=5),
                        "heartbeat_at": started,
                        "owner": "bench",
                        "label": f"bench run {r}",
                        "best_concurrency_within_slo": best_concurrency_within_slo(levels),
                    }
                ],
            )
            connection.execute(
                insert(LevelRow),
                [
                    {
                        "run_id": run_id,
                        "level_index": lv.index,
                        "concurrency": lv.concurrency,
                        "completed": lv.completed,
                        "failed": lv.failed,
                        "output_tok_s": lv.output_tok_s,
                        "ttft_p50_ms": lv.ttft_ms.p50,
                        "tpot_p50_ms": lv.tpot_ms.p50,
                        "slo_met": lv.slo.met,
                        "result_json": lv.model_dump_json(),
                    }
                    for lv in levels
                ],
            )
            for lv, concurrency in enumerate(LEVELS):
                batch = []
                for i in range(per_level):
                    t = templates[lv][i % TEMPLATES_PER_LEVEL]
                    payload = t.model_dump(mode="json")
                    payload["index"] = i
                    batch.append(
                        {
                            "run_id": run_id,
                            "level_index": lv,
                            "concurrency": concurrency,
                            "request_index": i,
                            "ok": True,
                            "error_kind": None,
                            "ttft_ms": t.ttft_ms,
                            "tpot_ms": t.tpot_ms,
                            "e2e_ms": t.e2e_ms,
                            "input_tokens": t.input_tokens,
                            "output_tokens": t.output_tokens,
                            "token_source": "usage",
                            "sample_json": json.dumps(payload),
                        }
                    )
                connection.execute(insert(SampleRow), batch)
                written += len(batch)
        if r % 20 == 0:
            print(f"  {written:,} samples written ({time.perf_counter() - t0:.0f} s)", file=sys.stderr)
    print(f"filled {written:,} samples in {runs} runs in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    engine.dispose()
    return largest


def timed(label: str, func: Callable[[], object], repeat: int = 5) -> float:
    func()  # warm
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        func()
        times.append((time.perf_counter() - t) * 1000)
    median = statistics.median(times)
    print(f"{label:<44} {median:9.1f} ms")
    return median


def page_open_ms(url: str, run_id: str) -> float:
    from streamlit.testing.v1 import AppTest

    os.environ["DATABASE_URL"] = url
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.query_params.update({"runs": run_id})
    at.switch_page("views/runs.py")
    at.run()
    if at.exception:
        raise RuntimeError(at.exception)
    times = []
    for _ in range(5):
        t = time.perf_counter()
        at.run()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--reuse", action="store_true", help="the database is already filled")
    args = parser.parse_args()
    url = args.database_url or f"sqlite:///{tempfile.mkdtemp(prefix='scale-')}/scale.db"
    print(f"database: {url}", file=sys.stderr)
    engine = make_engine(url)
    run_id = list_runs(engine, limit=1)[0].id if args.reuse else fill(url, args.samples, args.runs)
    print(f"{'query':<44} {'median':>12}")
    timed("list_runs (newest 200)", lambda: list_runs(engine))
    timed("run_filters (endpoints, models)", lambda: run_filters(engine))
    timed(
        "list_runs filtered by endpoint and model",
        lambda: list_runs(engine, endpoint="http://gpu-0.internal:8000/v1", model="Qwen/Qwen2.5-7B-Instruct"),
    )
    timed("load_levels (open one run: its levels)", lambda: load_levels(engine, run_id))
    timed("level_aggregates (SQL over its samples)", lambda: level_aggregates(engine, run_id))
    timed("get_run without samples (what /runs opens)", lambda: get_run(engine, run_id, with_samples=False))
    timed("sample_counts + error_summary (SQL)", lambda: (sample_counts(engine, run_id), error_summary(engine, run_id)))
    timed("get_run with its 5,000 samples (exports)", lambda: get_run(engine, run_id), repeat=3)
    if (ROOT / "views" / "runs.py").exists():
        print(f"{'/runs?runs=<id> page script (AppTest, warm)':<44} {page_open_ms(url, run_id):9.1f} ms")


if __name__ == "__main__":
    main()
