"""Request-rate sweeps and the rate search, wired end to end: settings, flags, runner, JSON, storage, "Cost this"."""

import asyncio
import io
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from db import init_db, make_engine
from db.run_queries import get_run, list_runs
from fakeserver import Batching, Behaviour, serve_in_thread
from probes import RunSettings
from probes.__main__ import main
from probes.cli import EXIT_OK, EXIT_USAGE, parse_options
from probes.deployment import STORED
from probes.errors import ProbeSettingsError
from probes.form import ProbeForm, cost_params, default_cost_level
from probes.models import LevelResult, RunResult, RunStatus, SloOutcome, Stats, StopReason
from probes.ratesearch import search_of_levels
from probes.runner import run_probe
from settings import Settings
from tco import TcoInputs, estimate
from tests.probes.conftest import settings_for
from ui.params import to_params, validate_params

# The batching mode: 2 slots; with both busy a request takes TTFT + (TOKENS - 1) * (TPOT + TPOT_PER_RUNNING) =
# 100 ms, so the server serves at most 20 requests/s.
SLOTS, TTFT_MS, TPOT_MS, TOKENS, PER_RUNNING_MS = 2, 20.0, 5.0, 9, 5.0
CAPACITY_RPS = SLOTS / ((TTFT_MS + (TOKENS - 1) * (TPOT_MS + PER_RUNNING_MS * (SLOTS - 1))) / 1000)
BATCHING_MODEL = f"fake:slots={SLOTS},tpot_per_running_ms={PER_RUNNING_MS:g},ttft_ms={TTFT_MS:g},tpot_ms={TPOT_MS:g}"
SLO_FLAGS = ("--slo-ttft-p50-ms", "150", "--slo-ttft-p99-ms", "60000", "--slo-tpot-p50-ms", "1000")


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize(("stored", "rates"), [(None, ()), (4.0, (4.0,)), (2, (2.0,)), ([1, 2.5], (1.0, 2.5))])
def test_runs_stored_with_one_rate_or_none_still_load(stored: object, rates: tuple[float, ...]) -> None:
    record = RunSettings(base_url="http://h:8000/v1", model="m").model_dump(mode="json")
    record["request_rate_rps"] = stored
    for key in ("burstiness", "max_in_flight", "find_max_rate", "search_max_levels", "search_max_duration_s"):
        del record[key]  # runs stored before had none of these
    loaded = RunSettings.model_validate_json(json.dumps(record), context={STORED: True})
    assert loaded.request_rate_rps == rates and loaded.rate_mode == bool(rates)
    assert loaded.burstiness == 1.0 and not loaded.find_max_rate


def test_the_rate_flags_round_trip_through_the_command_line_and_the_link() -> None:
    options = parse_options(
        [
            *("--base-url", "http://h:8000/v1", "--model", "m", "--request-rate", "1, 2,4.5"),
            *("--burstiness", "3", "--max-in-flight", "12", "--find-max-rate"),
            *("--search-max-levels", "7", "--search-max-duration-s", "120"),
        ],
        environ={},
    )
    settings = options.run_settings()
    assert settings.request_rate_rps == (1.0, 2.0, 4.5) and settings.burstiness == 3.0
    assert settings.max_in_flight == 12 and settings.in_flight_cap == 12 and settings.find_max_rate
    assert (settings.search_max_levels, settings.search_max_duration_s, settings.search_start_rps) == (7, 120.0, 1.0)
    form, errors, _ = validate_params(ProbeForm, to_params(ProbeForm(**options.model_dump(exclude=set(_cli_only())))))
    assert not errors and form.run_settings() == settings.model_copy(update={"api_key": None})
    assert to_params(form)["rate"] == "1,2,4.5" and to_params(form)["find_max_rate"] == "true"
    # without a cap of its own, a rate level keeps at most the highest concurrency level in flight
    plain = RunSettings(base_url="http://h/v1", model="m", concurrency=(1, 4, 16), request_rate_rps=(2.0,))
    assert plain.in_flight_cap == 16 and plain.level_count == 1 and plain.total_requests == 32


def _cli_only() -> list[str]:
    from probes.cli_options import CliOptions
    from probes.options import ProbeOptions

    return [name for name in CliOptions.model_fields if name not in ProbeOptions.model_fields]


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (("--request-rate", "1,abc"), "--request-rate: request rate 'abc' is not a number"),
        (("--request-rate", "3,3"), "--request-rate: request rate 3 repeats"),
        (("--burstiness", "-1"), "--burstiness:"),
        (("--max-in-flight", "0"), "--max-in-flight:"),
        (("--search-max-levels", "0"), "--search-max-levels:"),
        (("--search-max-duration-s", "0"), "--search-max-duration-s:"),
    ],
)
def test_bad_rate_values_name_the_flag(flags: tuple[str, ...], message: str) -> None:
    code, _, err = cli("--base-url", "http://127.0.0.1:9/v1", "--model", "m", *flags, "--no-db")
    assert code == EXIT_USAGE and err.startswith(f"error: {message}"), err


def test_a_cap_in_flight_over_the_limit_is_refused() -> None:
    settings = RunSettings(base_url="http://127.0.0.1:9/v1", model="m", request_rate_rps=(1.0,), max_in_flight=64)
    with pytest.raises(ProbeSettingsError, match="max in flight 64 is over the cap of 8"):
        asyncio.run(run_probe(settings, limits=Settings(probe_max_concurrency=8)))


def test_a_sweep_of_three_rates_runs_one_level_per_rate() -> None:
    defaults = Behaviour(ttft_ms=TTFT_MS, tpot_ms=TPOT_MS, tokens=TOKENS)
    with serve_in_thread(defaults=defaults, batching=Batching(slots=SLOTS, tpot_per_running_ms=PER_RUNNING_MS)) as fake:
        settings = settings_for(
            fake,
            concurrency=(1, 2, 4, 8),
            request_rate_rps=(20.0, 40.0, 80.0),
            requests_per_level=8,
            burstiness=0.5,
            slo=settings_for(fake).slo.model_copy(update={"ttft_p50_ms": 60_000.0, "ttft_p99_ms": 60_000.0}),
        )
        result = asyncio.run(run_probe(settings))
    assert result.status == RunStatus.COMPLETED
    assert [(lv.index, lv.request_rate_rps, lv.concurrency) for lv in result.levels] == [
        (0, 20.0, 8),
        (1, 40.0, 8),
        (2, 80.0, 8),
    ]
    assert all(lv.completed == 8 for lv in result.levels)
    assert result.best_request_rate_within_slo_rps == 80.0 and result.best_concurrency_within_slo is None
    assert result.rate_search is None


def test_find_max_rate_finds_the_servers_capacity_and_is_stored(database_url: str, tmp_path: Path) -> None:
    output = tmp_path / "search.json"
    defaults = Behaviour(ttft_ms=TTFT_MS, tpot_ms=TPOT_MS, tokens=TOKENS)
    with serve_in_thread(defaults=defaults, keep_records=False) as fake:
        code, _, err = cli(
            *("--base-url", fake.base_url, "--model", BATCHING_MODEL, "--find-max-rate"),
            *("--request-rate", f"{CAPACITY_RPS / 4:g}", "--requests", "30", "--duration", "1.2"),
            *("--max-in-flight", "48", "--search-max-levels", "10", "--search-max-duration-s", "120"),
            *SLO_FLAGS,
            *("--output", str(output)),
        )
    assert code == EXIT_OK, err
    data = json.loads(output.read_text())
    best = data["best_request_rate_within_slo_rps"]
    search = data["rate_search"]
    # At a quarter of the capacity requests rarely wait; at twice it the queue grows by 20 requests/s.
    assert best is not None and CAPACITY_RPS / 4 <= best < 2 * CAPACITY_RPS, search
    assert search["best_rate_rps"] == best and search["stop_reason"] in {"converged", "max_levels"}
    assert set(search) == {
        "best_rate_rps",
        "lowest_missed_rate_rps",
        "stop_reason",
        "stop_detail",
        "precision",
        "requests",
        "duration_s",
        "levels",
    }
    rates = [lv["rate_rps"] for lv in search["levels"]]
    assert rates == [lv["request_rate_rps"] for lv in data["levels"]]  # one stored level per rate measured
    assert rates[:2] == [CAPACITY_RPS / 4, CAPACITY_RPS / 2] and search["levels"][0]["phase"] == "grow"
    assert "highest request rate within SLO" in err
    engine = make_engine(database_url)
    init_db(engine)
    (row,) = list_runs(engine)
    stored = get_run(engine, row.id)
    assert stored is not None and stored.best_request_rate_within_slo_rps == best
    assert [lv.request_rate_rps for lv in stored.levels] == rates and stored.settings.find_max_rate
    rebuilt = stored.rate_search  # not stored as such: rebuilt from the stored levels and the budgets
    assert rebuilt is not None and rebuilt.best_rate_rps == best
    assert [lv.rate_rps for lv in rebuilt.levels] == rates and rebuilt.stop_reason == search["stop_reason"]
    assert [lv.phase for lv in rebuilt.levels] == [lv["phase"] for lv in search["levels"]]
    # "Cost this" carries the rate within the SLO, naming the run, and the tokens per request.
    chosen = default_cost_level(stored)
    assert chosen is not None and chosen.request_rate_rps == best
    params = cost_params(chosen, stored.run_id)
    assert params["rps"] == f"{best:.6g}@{row.id}" and "tps" not in params and params["out_tokens"] == str(TOKENS)


def _level(index: int, rate: float | None, met: bool, tok_s: float) -> LevelResult:
    stats = Stats(count=1, p50=1.0, p99=1.0)
    when = datetime(2026, 1, 1, tzinfo=UTC)
    return LevelResult(
        index=index,
        concurrency=16,
        request_rate_rps=rate,
        started_at=when,
        finished_at=when,
        duration_s=1.0,
        requests=8,
        completed=8,
        failed=0,
        input_tokens=400,
        output_tokens=1600,
        input_tokens_per_request=50.0,
        output_tokens_per_request=200.0,
        output_tok_s=tok_s,
        ttft_ms=stats,
        tpot_ms=stats,
        itl_ms=stats,
        e2e_ms=stats,
        slo=SloOutcome(met=met, attainment_ratio=1.0, goodput_req_s=1.0),
    )


def test_cost_this_from_a_rate_run_prices_the_rate_in_the_cost_calculator() -> None:
    levels = [_level(0, 1.0, True, 200.0), _level(1, 2.94, True, 588.0), _level(2, 5.0, False, 700.0)]
    result = RunResult(
        run_id="9f0c1a2b",
        endpoint="http://h/v1",
        model="m",
        settings=RunSettings(base_url="http://h/v1", model="m", request_rate_rps=(1.0, 2.94, 5.0)),
        status=RunStatus.COMPLETED,
        started_at=levels[0].started_at,
        best_request_rate_within_slo_rps=2.94,
        levels=levels,
    )
    params = cost_params(default_cost_level(result) or levels[0], result.run_id)
    assert params == {"rps": "2.94@9f0c1a2b", "out_tokens": "200", "in_tokens": "50"}
    inputs, errors, _ = validate_params(TcoInputs, params)
    assert not errors and inputs.requests_per_s_per_replica == 2.94 and inputs.rps_run_id == "9f0c1a2b"
    tco = estimate(inputs)
    assert tco.capacity.requests_per_s == pytest.approx(2.94)
    assert inputs.output_tok_s_per_replica == pytest.approx(588.0)
    # The handbook's example: 15 CNY/h at 2.94 requests/s is about 0.0014 CNY per request, as with 588 tok/s.
    assert tco.capacity.cost_per_request == pytest.approx(estimate(TcoInputs()).capacity.cost_per_request)
    assert estimate(TcoInputs()).capacity.cost_per_request == pytest.approx(0.0014, abs=0.00005)
    assert to_params(inputs) == {"rps": "2.94@9f0c1a2b", "in_tokens": "50"}  # 200 output tokens: the default


@pytest.mark.parametrize("bad", ["0", "-2", "abc", "3@not-hex", "1e9"])
def test_a_bad_rps_falls_back_and_names_the_parameter(bad: str) -> None:
    inputs, errors, rejected = validate_params(TcoInputs, {"rps": bad})
    assert list(rejected) == ["rps"] and "`rps`" in errors[0] and inputs.requests_per_s_per_replica is None


def test_a_search_is_rebuilt_from_its_stored_levels() -> None:
    levels = [_level(0, 1.0, True, 1), _level(1, 2.0, True, 2), _level(2, 4.0, False, 3), _level(3, 3.0, True, 3)]
    search = search_of_levels(levels, max_levels=4, max_requests=1000, max_duration_s=600)
    assert search is not None and search.stop_reason == StopReason.MAX_LEVELS
    assert (search.best_rate_rps, search.lowest_missed_rate_rps) == (3.0, 4.0)
    assert [lv.phase for lv in search.levels] == ["grow", "grow", "grow", "bisect"]
    converged = search_of_levels(
        [*levels, _level(4, 3.8, True, 3)], max_levels=9, max_requests=1000, max_duration_s=600
    )
    assert converged is not None and converged.stop_reason == StopReason.CONVERGED
    missed = search_of_levels([_level(0, 1.0, False, 1)], max_levels=9, max_requests=1000, max_duration_s=600)
    assert missed is not None and missed.stop_reason == StopReason.FIRST_RATE_MISSED and missed.best_rate_rps is None
    requests = search_of_levels(levels[:2], max_levels=9, max_requests=20, max_duration_s=600)
    assert requests is not None and requests.stop_reason == StopReason.MAX_REQUESTS
    assert search_of_levels(levels[:2], max_levels=9, max_requests=1000, max_duration_s=600) is None  # cancelled
    assert search_of_levels([_level(0, None, True, 1)], max_levels=9, max_requests=9, max_duration_s=9) is None
