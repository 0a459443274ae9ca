"""A run's scaling with concurrency, told beside the handbook's benchmark."""

from datetime import UTC, datetime

from probes.baseline import scaling, scaling_sentence
from probes.config import RunSettings
from probes.metrics import summarize_level
from probes.models import RequestSample, RunResult, RunStatus

NOW = datetime(2026, 11, 29, tzinfo=UTC)


def _level(index: int, concurrency: int, tokens: int, duration_s: float, settings: RunSettings) -> object:
    sample = RequestSample(
        level_index=index,
        concurrency=concurrency,
        index=0,
        start_s=0.0,
        ttft_ms=100.0,
        tpot_ms=20.0,
        e2e_ms=1000.0,
        output_tokens=tokens,
    )
    return summarize_level(
        index, concurrency, [sample], started_at=NOW, finished_at=NOW, duration_s=duration_s, slo=settings.slo
    )


def test_scaling_from_the_lowest_to_the_highest_level_beside_the_handbook() -> None:
    settings = RunSettings(base_url="http://127.0.0.1:9/v1", model="m", concurrency=(1, 16))
    # 46.7 tok/s at 1 and 588 tok/s at 16: the handbook's own 12.6x.
    levels = [_level(0, 1, 467, 10.0, settings), _level(1, 16, 5880, 10.0, settings)]
    result = RunResult(
        run_id=None,
        endpoint="x",
        model="m",
        settings=settings,
        status=RunStatus.COMPLETED,
        started_at=NOW,
        levels=levels,
        samples=[],
    )
    found = scaling(result)
    assert (found.low_concurrency, found.high_concurrency) == (1, 16)
    assert round(found.factor, 1) == 12.6
    sentence = scaling_sentence(result)
    assert "12.6× from concurrency 1" in sentence and "588 tok/s at concurrency 16" in sentence
    assert "30 tok/s" in sentence and "TPOT 24 ms" in sentence


def test_no_scaling_with_a_single_level() -> None:
    settings = RunSettings(base_url="http://127.0.0.1:9/v1", model="m", concurrency=(4,))
    result = RunResult(
        run_id=None,
        endpoint="x",
        model="m",
        settings=settings,
        status=RunStatus.COMPLETED,
        started_at=NOW,
        levels=[_level(0, 4, 100, 1.0, settings)],
        samples=[],
    )
    assert scaling(result) is None and scaling_sentence(result) is None
