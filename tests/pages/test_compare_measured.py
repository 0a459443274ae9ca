"""/compare: an option a stored run measured shows the measured figure beside its estimate, marked, and the gap."""

from datetime import UTC, datetime

import pytest

from catalog import find_gpu
from catalog.quantization import find_quant
from db import init_db, make_engine
from db.recorder import add_level, create_run, finish_run
from probes.config import RunSettings
from probes.deployment import Deployment
from probes.importers.common import level_of_aggregates
from probes.models import RunStatus, Stats
from tests.pages.apptest import open_page

NARROW = {"engines": "vllm", "counts": "1", "model": "qwen2.5-7b", "in_tokens": "500", "out_tokens": "200"}
TIMEOUT_S = 180


@pytest.fixture(autouse=True)
def _fresh_db(database_url: str) -> None:
    from ui.resources import get_engine

    get_engine.clear()


def _store_measured_run(database_url: str, gpu: str, quant: str, concurrency: int, output_tok_s: float) -> str:
    """A completed run of one replica of the option's deployment, at its concurrency and the page's lengths."""
    engine = make_engine(database_url)
    init_db(engine)
    deployment = Deployment(gpu=gpu, gpu_count=1, model="qwen2.5-7b", engine="vllm", quant=quant)
    settings = RunSettings(
        base_url="http://gpu-box.invalid/v1",
        model="Qwen/Qwen2.5-7B-Instruct",
        concurrency=(concurrency,),
        deployment=deployment,
    )
    run_id = create_run(engine, settings)
    level = level_of_aggregates(
        0,
        concurrency,
        started_at=datetime(2026, 12, 1, tzinfo=UTC),
        duration_s=60.0,
        completed=100,
        failed=0,
        input_tokens=100 * 500,
        output_tokens=100 * 200,
        ttft_ms=Stats(count=100, mean=200.0, p50=180.0, p90=300.0, p99=400.0),
        tpot_ms=Stats(count=100, mean=20.0, p50=19.0, p90=25.0, p99=30.0),
        itl_ms=Stats(),
        e2e_ms=Stats(count=100, mean=4000.0, p50=3900.0, p90=4500.0, p99=5000.0),
        req_s=output_tok_s / 200,
        output_tok_s=output_tok_s,
        total_tok_s=output_tok_s * 3.5,
    )
    add_level(engine, run_id, level)
    finish_run(engine, run_id, RunStatus.COMPLETED)
    engine.dispose()
    return run_id


def test_a_measured_option_shows_the_run_beside_its_estimate_and_the_distance(database_url: str) -> None:
    at = open_page("compare", NARROW, timeout_s=TIMEOUT_S)
    assert not at.exception and not at.error
    table = at.dataframe[0].value
    assert (table["measured"] == "").all()  # no stored run: nothing is marked
    top = table.iloc[0]
    run_id = _store_measured_run(
        database_url,
        find_gpu(str(top["GPU"])).id,
        find_quant(str(top["quantization"])).id,
        int(top["concurrency"]),
        output_tok_s=float(top["tok/s per replica"]) * 1.2,
    )

    at = open_page("compare", NARROW, timeout_s=TIMEOUT_S)
    assert not at.exception and not at.error
    table = at.dataframe[0].value
    marked = table[table["measured"] != ""]
    assert len(marked) >= 1
    row = marked[(marked["GPU"] == top["GPU"]) & (marked["quantization"] == top["quantization"])].iloc[0]
    assert row["measured"].startswith(f"✓ run {run_id[:8]}")
    measured = float(top["tok/s per replica"]) * 1.2
    assert row["measured tok/s per replica"] == pytest.approx(measured)
    if row["concurrency"] == top["concurrency"]:  # the distance is shown where the run measured this concurrency
        assert row["measured vs estimate"] == f"{measured / row['tok/s per replica'] - 1:+.0%}"
    else:
        assert row["measured vs estimate"] == "at another concurrency"
    others = table[(table["GPU"] != top["GPU"]) | (table["quantization"] != top["quantization"])]
    assert (others["measured"] == "").all()  # another GPU or quantization: not this run's deployment
