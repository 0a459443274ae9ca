"""The /runs page under AppTest: listing and filters in the link, open one, compare two, exports, delete with a
confirmation, bad and stale links, and labels typed by users shown as text."""

import json
from collections.abc import Iterator

import pytest

from db.recorder import RunRecorder
from db.run_queries import get_run, get_run_row
from fakeserver import Behaviour, FakeServer, serve_in_thread
from probes import ProbeRun, RunSettings, Timeouts
from probes.deployment import Deployment, deployment_text
from probes.export import levels_csv, result_json
from tests.pages.apptest import metric, newest_list, open_page, open_tab, runs_grid, texts, url_params
from ui.text import escape_markdown

HOSTILE = "<img src=x onerror=alert(1)> **bold** [link](http://evil)"


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeServer]:
    with serve_in_thread(defaults=Behaviour(ttft_ms=5, tpot_ms=1, tokens=8), max_running=None) as server:
        yield server


def record(
    engine: object,
    fake: FakeServer,
    model: str,
    label: str = "",
    levels: tuple[int, ...] = (1, 2),
    **changes: object,
) -> str:
    """A real probe run against the fake server, stored as the page stores it."""
    settings = RunSettings(
        base_url=fake.base_url,
        model=model,
        label=label,
        concurrency=levels,
        requests_per_level=3,
        timeouts=Timeouts(connect_s=2, ttft_s=5, stall_s=5),
        **changes,
    )
    recorder = RunRecorder(engine)
    run = ProbeRun(settings, sink=recorder).start()
    assert run.wait(30)
    return recorder.run_id


def test_empty_database_says_how_to_get_a_run(engine: object) -> None:
    at = open_page("runs")
    assert not at.exception and not at.error and not at.warning
    assert any("No stored runs" in i for i in texts(at.info))
    assert url_params(at) == {}


def test_lists_runs_filters_by_model_and_the_link_keeps_the_filter(engine: object, fake: FakeServer) -> None:
    first = record(engine, fake, "fake:tokens=8")
    second = record(engine, fake, "fake:tokens=4")
    at = open_page("runs")
    listed = newest_list(at)  # the newest runs as text first, every column of the grid
    assert listed.startswith("| started | status | label | model | endpoint | workload |")
    assert f"`{first}`" in listed and f"`{second}`" in listed
    table = runs_grid(at)
    assert set(table["id"]) == {first, second}
    at.selectbox(key="runs.model").set_value("fake:tokens=4").run()
    assert list(at.dataframe[0].value["id"]) == [second]
    assert url_params(at) == {"model": "fake:tokens=4"}
    again = open_page("runs", url_params(at))
    assert list(runs_grid(again)["id"]) == [second]
    assert again.selectbox(key="runs.model").value == "fake:tokens=4"


def test_open_one_run_shows_its_figures_and_exports(engine: object, fake: FakeServer) -> None:
    run_id = record(engine, fake, "fake:tokens=8", label="baseline")
    at = open_page("runs")
    at.multiselect(key="runs.runs").set_value([run_id]).run()
    assert url_params(at) == {"runs": run_id}
    assert not at.exception and not at.error
    assert metric(at, "Max concurrency in SLO") == "2"
    assert len(at.get("plotly_chart")) == 0  # lazy tabs: the levels table first, the charts once opened
    assert len(open_tab(at, f"runs.run.{run_id}.tab", "Latency").get("plotly_chart")) == 1
    buttons = {b.proto.label: b.proto for b in at.get("download_button")}
    assert set(buttons) == {
        "Download JSON",
        "Download levels CSV",
        "Download requests CSV",
        "Download llm-d Benchmark Report",
        "Download vLLM result JSON",
    }
    assert all(b.deferred_file_id for b in buttons.values())  # built on click, not on every rerun
    # What the JSON button serves: the CLI's schema, every request, units in the keys.
    result = get_run(engine, run_id)
    exported = json.loads(result_json(result))
    assert exported["run_id"] == run_id and exported["settings"]["label"] == "baseline"
    assert len(exported["samples"]) == 6 and "output_tok_s" in exported["levels"][0]
    assert levels_csv(result).splitlines()[0].startswith("concurrency,")
    cost = next(p for p in at.get("page_link") if p.proto.label == "Cost this")
    assert "tps=" in cost.proto.query_string and "out_tokens=8" in cost.proto.query_string


def test_compare_two_runs_overlays_them(engine: object, fake: FakeServer) -> None:
    a = record(engine, fake, "fake:tokens=8", label="eight")
    b = record(engine, fake, "fake:tokens=4", label="four", levels=(1, 4))
    at = open_page("runs", {"runs": f"{a},{b}"})
    assert not at.exception and not at.error
    assert any("Comparing 2 runs" in s for s in texts(at.subheader))
    latency = open_tab(at, "runs.compare.tab", "Latency").get("plotly_chart")[0]
    figure = json.loads(latency.proto.spec)
    names = {trace.get("name", "") for trace in figure["data"]}
    assert any(n.startswith("eight") for n in names) and any(n.startswith("four") for n in names)
    table = next(d.value for d in at.dataframe if "concurrency" in d.value.columns)  # the levels side by side
    assert len(table) == 4 and {"run", "concurrency", "output tok/s"} <= set(table.columns)
    assert len(at.get("download_button")) == 10  # each run keeps its own exports


def test_delete_asks_first_then_removes_the_run_and_its_link(engine: object, fake: FakeServer) -> None:
    keep = record(engine, fake, "fake:tokens=8")
    doomed = record(engine, fake, "fake:tokens=4")
    at = open_page("runs", {"runs": doomed})
    at.button(key=f"runs.delete.{doomed}").click().run()
    assert get_run_row(engine, doomed) is not None  # nothing deleted yet
    assert any("cannot be undone" in w for w in texts(at.warning))
    at.button(key=f"runs.keep.{doomed}").click().run()
    assert get_run_row(engine, doomed) is not None and not at.warning
    at.button(key=f"runs.delete.{doomed}").click().run()
    at.button(key=f"runs.confirm_delete.{doomed}").click().run()
    assert not at.exception
    assert get_run_row(engine, doomed) is None and get_run_row(engine, keep) is not None
    assert any("Deleted" in s for s in texts(at.success))
    assert url_params(at) == {}
    assert list(runs_grid(at)["id"]) == [keep]


@pytest.mark.parametrize(
    ("params", "named"),
    [({"runs": "zz"}, "`runs`"), ({"runs": ",".join(f"abcdef{i:02}" for i in range(13))}, "`runs`")],
)
def test_bad_link_names_the_parameter(engine: object, params: dict[str, str], named: str) -> None:
    at = open_page("runs", params)
    assert not at.exception
    warnings = texts(at.warning)
    assert len(warnings) == 1 and named in warnings[0]


def test_a_link_to_a_deleted_run_says_so(engine: object, fake: FakeServer) -> None:
    run_id = record(engine, fake, "fake:tokens=8")
    at = open_page("runs", {"runs": f"{run_id},{'0' * 32}"})
    assert not at.exception
    assert any("No stored run" in w and "0" * 32 in w for w in texts(at.warning))
    assert url_params(at) == {"runs": run_id}
    assert metric(at, "Max concurrency in SLO") == "2"


def test_labels_typed_by_users_are_shown_as_text(engine: object, fake: FakeServer) -> None:
    run_id = record(engine, fake, "fake:tokens=8", label=HOSTILE)
    other = record(engine, fake, "fake:tokens=4", label="plain")
    at = open_page("runs", {"runs": run_id})
    heading = texts(at.subheader)[0]
    assert "\\<img" in heading and "\\*\\*bold\\*\\*" in heading and "\\[link\\]" in heading
    assert "\\<img" in newest_list(at) and "\\*\\*bold" in newest_list(at)  # escaped in the Markdown list
    assert HOSTILE in list(runs_grid(at)["label"])  # a grid cell is text already
    compared = open_page("runs", {"runs": f"{run_id},{other}"})
    assert any("\\<img" in e.label for e in compared.expander)
    figure = json.loads(open_tab(compared, "runs.compare.tab", "Latency").get("plotly_chart")[0].proto.spec)
    names = [trace.get("name", "") for trace in figure["data"]]
    assert any("&lt;img" in n for n in names) and not any("<img" in n for n in names)


def test_a_run_shows_its_deployment_when_known(engine: object, fake: FakeServer) -> None:
    given = Deployment(gpu="L40S", gpu_count=4, model="qwen2.5-7b", quant="awq")
    known = record(engine, fake, "fake", deployment=given)
    at = open_page("runs", {"runs": known})
    assert not at.exception
    (shown,) = [c for c in texts(at.caption) if c.startswith("Deployment:")]
    told = given.model_copy(update={"engine": "vllm", "source": {"engine": "metrics"}})
    assert shown == f"Deployment: {escape_markdown(deployment_text(told))}"
    assert "4 × L40S 48GB" in shown and "vLLM" in shown and "engine from metrics" in shown
    unknown = record(engine, fake, "fake", scrape_metrics=False)
    at = open_page("runs", {"runs": unknown})
    assert not at.exception and not [c for c in texts(at.caption) if c.startswith("Deployment:")]


def test_a_run_of_a_known_deployment_sits_beside_the_estimate_and_calibrates_later_ones(
    engine: object, fake: FakeServer
) -> None:
    from db import calibration_runs
    from perf import PerfRequest, estimate
    from ui.calibration import from_stored

    given = Deployment(gpu="L40S", gpu_count=1, model="qwen2.5-7b", engine="vllm", quant="awq")
    run_id = record(engine, fake, "fake", deployment=given, levels=(1, 2))
    at = open_page("runs", {"runs": run_id})
    assert not at.exception
    assert [e.label for e in at.expander if e.label == "Estimated against measured"]
    (table,) = [d.value for d in at.dataframe if "Load" in d.value.columns]
    assert list(table["Load"]) == ["concurrency 1", "concurrency 2"]
    assert table["Output tok/s estimated"].notna().all() and table["Output tok/s measured"].notna().all()
    assert (table["Measured / estimated"] > 0).all()
    caption = " ".join(texts(at.caption))
    assert f"Measured: this run (`{run_id}`)" in caption and "Estimated: perf's estimate" in caption

    stored = [from_stored(r) for r in calibration_runs(engine)]  # type: ignore[arg-type]
    (mine,) = [c for c in stored if c.run_id == run_id]
    assert mine.served_model == "fake" and not mine.confirmed
    lengths = {"input_tokens": round(mine.levels[0].input_tokens), "output_tokens": round(mine.levels[0].output_tokens)}
    request = PerfRequest(gpu="L40S", model="qwen2.5-7b", engine="vllm", quant="awq", concurrency=(1, 2), **lengths)
    assert estimate(request).basis.kind != "calibrated"
    assert estimate(request, stored).basis.kind != "calibrated", "a server that named 'fake' vouches for no Qwen"
    assert any("'fake'" in w.value and "does not calibrate estimates of" in w.value for w in at.warning)
    assert "This run does not calibrate estimates until it is confirmed." in caption

    at.button(key=f"runs.confirm.{run_id}").click().run()
    assert not at.exception and not at.warning
    confirmed = [from_stored(r) for r in calibration_runs(engine)]  # type: ignore[arg-type]
    calibrated = estimate(request, confirmed)
    assert calibrated.basis.kind == "calibrated" and calibrated.basis.run_ids == (run_id,)
    far = request.model_copy(update={"input_tokens": 3900, "output_tokens": 300})
    assert estimate(far, confirmed).basis.kind != "calibrated", "a run of short requests says little of long ones"
