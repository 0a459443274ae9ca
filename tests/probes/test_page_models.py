"""The probe pages' input models, "Cost this" parameters and figures, without a browser."""

from datetime import UTC, datetime

import pytest

from probes import ProbeSettingsError, RunSettings, RunStatus
from probes.cli import parse_options
from probes.figures import compare_rows, latency_figure, level_rows, plot_text, throughput_figure
from probes.form import ProbeForm, RunsView, cost_params, default_cost_level
from probes.models import LevelResult, RunResult, SloOutcome, Stats
from probes.options import prepare_run
from ui.params import to_params, validate_params

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def level(
    index: int,
    concurrency: int,
    tok_s: float,
    met: bool,
    ttft: float = 100.0,
    in_tok: float | None = 40.0,
    out_tok: float = 127.6,
) -> LevelResult:
    stats = Stats(count=4, mean=ttft, p50=ttft, p90=ttft * 1.5, p99=ttft * 2, min=ttft, max=ttft * 2)
    return LevelResult(
        index=index,
        concurrency=concurrency,
        started_at=NOW,
        finished_at=NOW,
        duration_s=1.0,
        requests=4,
        completed=4,
        failed=0,
        input_tokens=160 if in_tok else 0,
        output_tokens=510,
        input_tokens_per_request=in_tok,
        output_tokens_per_request=out_tok,
        req_s=4.0,
        output_tok_s=tok_s,
        total_tok_s=tok_s + 160,
        ttft_ms=stats,
        tpot_ms=stats,
        itl_ms=stats,
        e2e_ms=stats,
        slo=SloOutcome(
            met=met, attainment_ratio=1.0 if met else 0.5, goodput_req_s=4.0, violations=[] if met else ["ttft_p50"]
        ),
    )


def run(levels: list[LevelResult], label: str = "", best: int | None = None) -> RunResult:
    settings = RunSettings(base_url="http://h:8000/v1", model="m", label=label)
    return RunResult(
        run_id="ab" * 16,
        endpoint="http://h:8000/v1",
        model="m",
        settings=settings,
        status=RunStatus.COMPLETED,
        started_at=NOW,
        levels=levels,
        best_concurrency_within_slo=best,
    )


def test_cost_this_defaults_to_the_highest_concurrency_within_slo() -> None:
    result = run([level(0, 1, 100.0, True), level(1, 4, 350.25, True), level(2, 16, 588.0, False)], best=4)
    chosen = default_cost_level(result)
    assert chosen is not None and chosen.concurrency == 4
    assert cost_params(chosen) == {"tps": "350.2", "out_tokens": "128", "in_tokens": "40"}


def test_cost_this_without_any_level_in_slo_takes_the_highest_throughput_and_skips_unmeasured_input() -> None:
    result = run([level(0, 1, 100.0, False, in_tok=None), level(1, 8, 588.0, False, in_tok=None)])
    chosen = default_cost_level(result)
    assert chosen is not None and chosen.concurrency == 8
    assert cost_params(chosen) == {"tps": "588", "out_tokens": "128"}
    assert default_cost_level(run([])) is None


def test_the_form_round_trips_through_the_url_and_never_holds_a_key() -> None:
    form, errors, _ = validate_params(
        ProbeForm, {"url": "http://h:8000/v1/", "model": "m", "levels": "1, 4,16", "ttft_p50": "200", "rate": "2.5"}
    )
    assert not errors
    assert to_params(form) == {
        "url": "http://h:8000/v1",
        "model": "m",
        "levels": "1,4,16",
        "ttft_p50": "200",
        "rate": "2.5",
    }
    assert "key" not in " ".join(ProbeForm.model_fields) and "api_key" not in to_params(form)
    settings = form.run_settings("sk-secret")
    assert settings.concurrency == (1, 4, 16) and settings.slo.ttft_p50_ms == 200
    assert settings.request_rate_rps == (2.5,) and "sk-secret" not in settings.model_dump_json()


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        ({"levels": "1,1024"}, "cap"),
        ({"levels": "1", "requests": "20000"}, "over the cap"),
        ({"model": ""}, "model"),
        ({"url": "http://169.254.169.254/v1"}, "link-local"),
    ],
)
def test_prepare_run_refuses_absurd_settings_with_a_message(raw: dict[str, str], says: str) -> None:
    form, errors, _ = validate_params(ProbeForm, {"model": "m", **raw})
    assert not errors
    with pytest.raises(ProbeSettingsError, match=says):
        prepare_run(form)


def test_credentials_in_the_url_are_refused_by_the_page_and_stripped_by_the_command_line() -> None:
    """A link must not carry a key, so the page refuses it; the command line keeps it out of what it stores."""
    _, errors, rejected = validate_params(ProbeForm, {"url": "http://user:pw@h:8000/v1"})
    assert list(rejected) == ["url"] and "API key field" in errors[0]
    settings = parse_options(["--base-url", "http://user:pw@h:8000/v1", "--model", "m"], environ={}).run_settings()
    assert settings.endpoint == "http://h:8000/v1" and "pw" not in settings.model_dump_json()


def test_runs_view_keeps_ids_once_and_refuses_others() -> None:
    view, errors, _ = validate_params(RunsView, {"runs": "abcdef12,abcdef12,0123456789"})
    assert not errors and view.runs == ("abcdef12", "0123456789")
    _, errors, _ = validate_params(RunsView, {"runs": "1;DROP TABLE"})
    assert len(errors) == 1 and "`runs`" in errors[0]


def test_figures_show_percentiles_slo_lines_and_the_best_level() -> None:
    result = run(
        [level(0, 1, 100.0, True), level(1, 4, 350.0, True, ttft=200), level(2, 16, 588.0, False, 400)], best=4
    )
    latency = latency_figure([result])
    names = [t.name for t in latency.data if t.showlegend is not False]
    assert names == ["p50", "p90", "p99"]
    ttft_p50 = next(t for t in latency.data if t.meta == "ttft_ms" and t.name == "p50")
    assert list(ttft_p50.x) == [1, 4, 16] and list(ttft_p50.y) == [100, 200, 400]
    slo_lines = sorted(shape.y0 for shape in latency.layout.shapes)
    assert slo_lines == [50, 300, 1000]
    throughput = throughput_figure([result])
    star = next(t for t in throughput.data if t.name == "highest within SLO")
    assert list(star.x) == [4] and list(star.y) == [350]
    assert level_rows(result)[2]["SLO met"] is False and level_rows(result)[2]["why not"] == "ttft_p50"


def test_compared_runs_get_one_trace_per_run_with_inert_labels() -> None:
    a = run([level(0, 1, 100.0, True)], label="<b>mine</b>")
    b = run([level(0, 1, 120.0, True)], label="theirs")
    names = [t.name for t in throughput_figure([a, b]).data]
    assert names[0].startswith(plot_text("<b>mine</b>")) and names[1].startswith("theirs")
    assert len(compare_rows([a, b])) == 2
