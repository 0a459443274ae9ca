"""Runs by deployment (SQLite and PostgreSQL): only completed runs of exactly that deployment, level by level; the
deployment a run detects is stored as it is told; runs stored before deployments existed still load."""

import json
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import Engine, text

from db import CalibrationLevel, calibration_runs, get_run, init_db, list_runs, make_engine
from db.migrate import upgrade
from db.recorder import RunRecorder, add_level, create_run, finish_run
from db.run_queries import get_run_row
from fakeserver import Behaviour, serve_in_thread
from probes import ProbeRun, RunSettings, RunStatus
from probes.deployment import Deployment
from probes.metrics import summarize_level
from probes.models import RequestSample, TokenSource

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
H100_LLAMA = Deployment(gpu="h100-80gb-sxm", gpu_count=2, model="llama3.1-8b", engine="vllm", quant="fp8")
ASKED = {"gpu": "h100-80gb-sxm", "gpus": 2, "model": "llama3.1-8b", "engine": "vllm", "quant": "fp8"}


def engine_for(url: str) -> Engine:
    engine = make_engine(url)
    init_db(engine)
    return engine


def _samples(concurrency: int, ttft_ms: float, tpot_ms: float) -> list[RequestSample]:
    return [
        RequestSample(
            level_index=0,
            concurrency=concurrency,
            index=i,
            start_s=0.1 * i,
            ttft_ms=ttft_ms,
            tpot_ms=tpot_ms,
            e2e_ms=ttft_ms + 99 * tpot_ms,
            input_tokens=200,
            output_tokens=100,
            token_source=TokenSource.USAGE,
        )
        for i in range(4)
    ]


def store_run(
    engine: Engine,
    deployment: Deployment,
    *,
    status: RunStatus = RunStatus.COMPLETED,
    levels: tuple[int, ...] = (1, 4),
    started: int = 0,
    rate: float | None = None,
) -> str:
    settings = RunSettings(
        base_url="http://gpu-box:8000/v1",
        model="served",
        concurrency=levels,
        deployment=deployment,
        label=f"run {started}",
        request_rate_rps=rate,
    )
    run_id = create_run(engine, settings, started_at=T0 + timedelta(minutes=started))
    for index, concurrency in enumerate(levels):
        samples = [
            s.model_copy(update={"level_index": index}) for s in _samples(concurrency, 100.0 * concurrency, 10.0)
        ]
        level = summarize_level(
            index,
            concurrency,
            samples,
            started_at=T0,
            finished_at=T0,
            duration_s=2.0,
            slo=settings.slo,
            request_rate_rps=rate,
        )
        add_level(engine, run_id, level)
    finish_run(engine, run_id, status)
    return run_id


def test_only_completed_runs_of_exactly_that_deployment_come_back_newest_first(any_database_url: str) -> None:
    engine = engine_for(any_database_url)
    first = store_run(engine, H100_LLAMA, started=0)
    second = store_run(engine, H100_LLAMA, started=5, rate=3.0)
    store_run(engine, H100_LLAMA, started=9, status=RunStatus.CANCELLED)
    store_run(engine, H100_LLAMA, started=9, status=RunStatus.FAILED)
    for change in ({"gpu_count": 1}, {"gpu": "a800-80gb-sxm"}, {"model": "qwen2.5-7b"}, {"engine": "sglang"}):
        store_run(engine, H100_LLAMA.model_copy(update=change), started=7)
    store_run(engine, H100_LLAMA.model_copy(update={"quant": None}), started=8)  # partly unknown: never a match
    store_run(engine, Deployment(), started=8)
    found = calibration_runs(engine, **ASKED)
    assert [r.run_id for r in found] == [second, first]
    run = found[0]
    assert (run.gpu, run.gpu_count, run.model, run.engine, run.quant) == (
        "h100-80gb-sxm",
        2,
        "llama3.1-8b",
        "vllm",
        "fp8",
    )
    assert (run.label, run.served_model, run.endpoint, run.workload) == (
        "run 5",
        "served",
        "http://gpu-box:8000/v1",
        "seed",
    )
    assert run.started_at == T0 + timedelta(minutes=5)
    assert [lv.concurrency for lv in run.levels] == [1, 4]
    four = run.levels[1]
    assert isinstance(four, CalibrationLevel)
    assert four.request_rate_rps == 3.0 and four.ttft_p50_ms == 400.0 and four.tpot_p50_ms == 10.0
    assert four.input_tokens_mean == 200.0 and four.output_tokens_mean == 100.0
    assert four.completed == 4 and four.failed == 0
    assert four.output_tok_s == 200.0 and four.req_s == 2.0  # 4 requests of 100 tokens in 2 s
    assert found[1].levels[0].request_rate_rps is None  # a closed loop
    engine.dispose()


def test_without_filters_every_completed_run_of_a_known_deployment_comes_back(any_database_url: str) -> None:
    engine = engine_for(any_database_url)
    mine = store_run(engine, H100_LLAMA, started=1)
    other = store_run(engine, H100_LLAMA.model_copy(update={"engine": "sglang"}), started=2)
    store_run(engine, H100_LLAMA.model_copy(update={"quant": None}), started=3)  # partly unknown
    store_run(engine, H100_LLAMA, started=4, status=RunStatus.FAILED)
    found = calibration_runs(engine)
    assert [(r.run_id, r.engine) for r in found] == [(other, "sglang"), (mine, "vllm")]
    assert [r.run_id for r in calibration_runs(engine, engine="sglang")] == [other]
    engine.dispose()


def test_names_are_matched_forgivingly_and_an_unknown_one_is_refused(any_database_url: str) -> None:
    engine = engine_for(any_database_url)
    run_id = store_run(engine, H100_LLAMA)
    found = calibration_runs(
        engine, gpu="H100", gpus=2, model="meta-llama/Llama-3.1-8B-Instruct", engine="vLLM", quant="FP8"
    )
    assert [r.run_id for r in found] == [run_id]
    with pytest.raises(ValueError, match="GPU 'H1000' is not in the catalog"):
        calibration_runs(engine, **{**ASKED, "gpu": "H1000"})
    assert calibration_runs(engine, **{**ASKED, "gpus": 8}) == []
    engine.dispose()


def test_the_deployment_a_run_detects_is_stored_as_it_is_told(any_database_url: str) -> None:
    engine = engine_for(any_database_url)
    roots = {"served": "meta-llama/Llama-3.1-8B-Instruct"}
    with serve_in_thread(defaults=Behaviour(ttft_ms=5, tpot_ms=1, tokens=4), models=("served",), roots=roots) as server:
        given = Deployment(gpu="H100", gpu_count=2, quant="fp8")
        settings = RunSettings(
            base_url=server.base_url, model="served", concurrency=(1, 2), requests_per_level=2, deployment=given
        )
        before: list[object] = []

        class Recorder(RunRecorder):  # what the row held when the server told the deployment
            def deployment(self, deployment: Deployment) -> None:
                before.append(get_run_row(engine, self._id()))
                super().deployment(deployment)

        recorder = Recorder(engine)
        probe = ProbeRun(settings, sink=recorder).start()
        assert probe.wait(30)
    assert probe.sink_errors == []
    (row,) = before
    assert row is not None and row.deploy_engine is None and row.deploy_gpu == "h100-80gb-sxm"
    stored = get_run(engine, recorder.run_id, with_samples=False)
    assert stored is not None and stored.status == RunStatus.COMPLETED
    assert stored.settings.deployment == H100_LLAMA.model_copy(
        update={"source": {"engine": "metrics", "model": "/v1/models"}}
    )
    (found,) = calibration_runs(engine, **ASKED)
    assert found.run_id == recorder.run_id and [lv.concurrency for lv in found.levels] == [1, 2]
    assert all(lv.completed == 2 and lv.ttft_p50_ms is not None for lv in found.levels)
    engine.dispose()


def test_runs_stored_before_deployments_existed_still_load(any_database_url: str) -> None:
    engine = make_engine(any_database_url)
    upgrade(engine, "0003")
    settings = {"base_url": "http://127.0.0.1:9/v1", "model": "m", "concurrency": [1], "requests_per_level": 2}
    with engine.begin() as connection:
        connection.execute(
            text(
                "INSERT INTO probe_runs (id, endpoint, model, api, workload, status, settings_json, started_at,"
                " finished_at, heartbeat_at, owner, label) VALUES ('r1', 'http://127.0.0.1:9/v1', 'm', 'chat',"
                " 'seed', 'completed', :s, :t, :t, :t, 'old', 'before')"
            ),
            {"s": json.dumps(settings), "t": T0},
        )
    upgrade(engine)
    assert [r.id for r in list_runs(engine)] == ["r1"]
    result = get_run(engine, "r1")
    assert result is not None and result.settings.deployment == Deployment() and result.settings.label == ""
    assert calibration_runs(engine, **ASKED) == []
    engine.dispose()
