"""Trace replay wired end to end: flags, refusal before sending, the runner's one open-loop level, the JSON."""

import asyncio
import io
import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from db import make_engine
from db.run_queries import get_run, list_runs
from fakeserver import FakeServer
from probes.__main__ import main
from probes.cli import EXIT_OK, EXIT_USAGE
from probes.config import WorkloadKind
from probes.export import samples_csv
from probes.models import RequestSample, RunResult, RunStatus
from probes.runner import run_probe
from probes.sink import NullSink
from settings import get_settings
from tests.probes.conftest import settings_for

# Offsets of the small trace, ms; replayed at speed 2 they arrive at half of these.
OFFSETS_MS = (0, 40, 100, 150, 260, 300, 420, 500)
SPEED = 2.0
TOLERANCE_S = 0.05  # CI shares 2 cores: a generous bound on how late a send may be


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def mooncake(path: Path, offsets_ms: tuple[int, ...] = OFFSETS_MS, start_ms: int = 1_700_000) -> Path:
    lines = [
        json.dumps({"timestamp": start_ms + t, "input_length": 40 + 10 * i, "output_length": 3 + i % 3, "hash_ids": []})
        for i, t in enumerate(offsets_ms)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_the_cli_replays_a_mooncake_trace_at_its_arrival_times(fake: FakeServer, tmp_path: Path) -> None:
    trace = mooncake(tmp_path / "trace.jsonl")
    output = tmp_path / "run.json"
    code, _, err = cli(
        *("--base-url", fake.base_url, "--model", "fake", "--workload", "trace", "--trace", str(trace)),
        *("--trace-speed", str(SPEED), "--no-db", "--quiet", "--output", str(output)),
    )
    assert code == EXIT_OK, err
    data = json.loads(output.read_text())
    assert data["status"] == "completed" and len(data["levels"]) == 1
    assert data["best_concurrency_within_slo"] is None  # a replay has no concurrency levels
    level = data["levels"][0]
    assert level["requests"] == len(OFFSETS_MS) and level["completed"] == len(OFFSETS_MS)
    lag = level["schedule_lag_ms"]
    assert set(lag) == {"p50", "p99"} and lag["p50"] is not None and lag["p99"] >= lag["p50"]
    samples = sorted(data["samples"], key=lambda s: s["trace_line"])
    assert [s["trace_line"] for s in samples] == list(range(1, len(OFFSETS_MS) + 1))
    for sample, offset_ms in zip(samples, OFFSETS_MS, strict=True):
        scheduled_s = offset_ms / 1000 / SPEED
        assert scheduled_s - 0.001 <= sample["start_s"] <= scheduled_s + TOLERANCE_S, (sample, scheduled_s)
    # The fake server counts one token per word: calibrated prompts have exactly the trace's input lengths.
    assert [s["input_tokens"] for s in samples] == [40 + 10 * i for i in range(len(OFFSETS_MS))]
    settings = data["settings"]
    assert settings["workload"] == "trace" and settings["trace"] == str(trace) and settings["trace_speed"] == SPEED
    result = RunResult.model_validate(data)
    assert "trace_line" in samples_csv(result).splitlines()[0].split(",")


def test_a_malformed_trace_is_refused_with_its_line_numbers_and_nothing_is_sent(
    fake: FakeServer, tmp_path: Path
) -> None:
    trace = mooncake(tmp_path / "bad.jsonl")
    lines = trace.read_text().splitlines()
    lines[2] = '{"timestamp": 1700100, "input_length": -3, "output_length": 4}'
    lines[5] = "not json"
    trace.write_text("\n".join(lines) + "\n")
    seen = len(fake.records())
    code, _, err = cli(
        *("--base-url", fake.base_url, "--model", "fake", "--workload", "trace", "--trace", str(trace), "--no-db"),
    )
    assert code == EXIT_USAGE
    assert "line 3" in err and "line 6" in err
    assert len(fake.records()) == seen  # nothing sent


def test_a_slice_over_the_request_cap_is_refused(
    fake: FakeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PROBE_MAX_REQUESTS_PER_RUN", "5")
    get_settings.cache_clear()
    try:
        trace = mooncake(tmp_path / "trace.jsonl")
        seen = len(fake.records())
        code, _, err = cli(
            *("--base-url", fake.base_url, "--model", "fake", "--workload", "trace", "--trace", str(trace), "--no-db")
        )
        assert code == EXIT_USAGE and "over the cap of 5" in err and "--trace-limit" in err
        assert len(fake.records()) == seen
    finally:
        get_settings.cache_clear()


def test_a_built_in_trace_by_name_with_a_limit_and_a_speed(fake: FakeServer, tmp_path: Path) -> None:
    output = tmp_path / "run.json"
    code, _, err = cli(
        *("--base-url", fake.base_url, "--model", "fake", "--workload", "trace", "--trace", "azure-code"),
        *("--trace-limit", "20", "--trace-speed", "50", "--max-in-flight", "8", "--ttft-timeout", "30"),
        *("--no-db", "--quiet", "--output", str(output)),
    )
    assert code == EXIT_OK, err
    data = json.loads(output.read_text())
    assert len(data["levels"]) == 1 and data["levels"][0]["requests"] == 20
    assert data["settings"]["trace"] == "azure-code" and data["settings"]["trace_limit"] == 20
    lines = sorted(s["trace_line"] for s in data["samples"])
    assert lines == list(range(2, 22))  # the header is line 1


def test_without_usage_the_lengths_are_said_to_be_uncalibrated(fake: FakeServer, tmp_path: Path) -> None:
    trace = mooncake(tmp_path / "trace.jsonl", offsets_ms=(0, 10, 20))
    output = tmp_path / "run.json"
    code, _, err = cli(
        *("--base-url", fake.base_url, "--model", "fake:usage=false", "--workload", "trace", "--trace", str(trace)),
        *("--no-db", "--output", str(output)),
    )
    assert code == EXIT_OK, err
    assert "uncalibrated" in err
    data = json.loads(output.read_text())
    assert sorted(s["trace_line"] for s in data["samples"]) == [1, 2, 3]


def test_cancelling_a_replay_keeps_what_finished(fake: FakeServer, tmp_path: Path) -> None:
    """A replay waiting for a far-off arrival ends CANCELLED at once, with the finished request kept."""
    trace = mooncake(tmp_path / "slow.jsonl", offsets_ms=(0, 600_000))
    settings = settings_for(fake, workload=WorkloadKind.TRACE, trace=str(trace))

    async def replay() -> RunResult:
        finished = asyncio.Event()

        class Finished(NullSink):
            def samples(self, samples: Sequence[RequestSample]) -> None:
                finished.set()

        task = asyncio.create_task(run_probe(settings, sink=Finished()))
        await finished.wait()
        task.cancel()
        return await task

    result = asyncio.run(replay())
    assert result.status == RunStatus.CANCELLED
    assert [s.trace_line for s in result.samples] == [1]
    assert len(result.levels) == 1 and result.levels[0].schedule_lag_ms is not None


def test_the_uncalibrated_note_is_kept_with_the_stored_run(fake: FakeServer, tmp_path: Path, database_url: str) -> None:
    trace = mooncake(tmp_path / "trace.jsonl", offsets_ms=(0, 10))
    code, _, err = cli(
        *("--base-url", fake.base_url, "--model", "fake:usage=false", "--workload", "trace", "--trace", str(trace)),
        "--quiet",
    )
    assert code == EXIT_OK, err
    engine = make_engine(database_url)
    (row,) = list_runs(engine)
    stored = get_run(engine, row.id)
    assert stored is not None and any("uncalibrated" in note for note in stored.notes)


def test_outputs_longer_than_max_tokens_come_whole_when_the_trace_asks_for_them(
    fake: FakeServer, tmp_path: Path
) -> None:
    """The trace's output length is each request's max_tokens: the overlength guard counts from it, not the run's."""
    trace = tmp_path / "long.csv"
    trace.write_text("timestamp_s,input_tokens,output_tokens\n0,20,40\n0.01,20,60\n", encoding="utf-8")
    output = tmp_path / "run.json"
    code, _, err = cli(
        *("--base-url", fake.base_url, "--model", "fake:tokens=60", "--workload", "trace", "--trace", str(trace)),
        *("--max-tokens", "8", "--overlength-extra-tokens", "2", "--no-db", "--quiet", "--output", str(output)),
    )
    assert code == EXIT_OK, err
    data = json.loads(output.read_text())
    assert sorted(s["output_tokens"] for s in data["samples"]) == [40, 60]
    assert all(s["error_kind"] is None for s in data["samples"])
