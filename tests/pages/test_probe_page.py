"""The /probe page under AppTest: smoke, URL round trip, bad links named, a probe against the local fake server
(live progress, results, "Cost this", stored run, no key anywhere), cancel, unreachable endpoint, refused settings."""

import time
from collections.abc import Iterator
from urllib.parse import parse_qsl

import pytest
from sqlalchemy import text

from db import init_db, make_engine
from db.run_queries import get_run, list_runs
from fakeserver import Behaviour, FakeServer, serve_in_thread
from probes import RunStatus
from probes.export import result_json
from tests.pages.apptest import finish_probe, metric, open_page, open_result_tab, texts, url_params
from tests.support import free_port

KEY = "sk-probe-page-SECRET-4711"


@pytest.fixture(autouse=True)
def _fresh_db(database_url: str) -> None:
    from ui.resources import get_engine

    get_engine.clear()


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeServer]:
    with serve_in_thread(defaults=Behaviour(ttft_ms=5, tpot_ms=1, tokens=8), max_running=None) as server:
        yield server


def _engine(database_url: str) -> object:
    engine = make_engine(database_url)
    init_db(engine)
    return engine


def test_default_page_shows_the_form_and_an_empty_link() -> None:
    at = open_page("probe")
    assert not at.exception and not at.error and not at.warning
    assert at.text_input(key="probe.url").value == "http://localhost:8000/v1"
    assert at.text_input(key="probe.levels").value == "1,2,4,8,16"
    assert at.number_input(key="probe.requests").value == 32
    assert at.button(key="probe.start").disabled is False
    assert url_params(at) == {}


def test_the_form_takes_its_labels_help_and_limits_from_the_settings_model() -> None:
    """The widgets say what the command line's --help says: same label source, same limits."""
    at = open_page("probe", {"workload": "synthetic"})
    requests = at.number_input(key="probe.requests")
    assert requests.label == "Requests per level" and (requests.min, requests.max) == (1, 100_000)
    assert "Allowed: 1–100000." in requests.help
    assert at.number_input(key="probe.input_tokens").max == 200_000
    temperature = at.number_input(key="probe.temperature")
    assert (temperature.min, temperature.max) == (0, 2)
    connect = at.number_input(key="probe.connect_timeout")
    assert connect.label == "Connect timeout (s)" and connect.max == 600 and "> 0, ≤ 600" in connect.help
    assert at.text_input(key="probe.levels").label == "Concurrency levels"
    assert "1–32 distinct levels" in at.text_input(key="probe.levels").help
    assert at.text_input(key="probe.label").proto.max_chars == 200


def test_link_fills_the_form_and_editing_rewrites_the_link() -> None:
    link = {
        "url": "http://gpu-box:8000/v1",
        "model": "qwen",
        "levels": "1,4",
        "requests": "3",
        "ttft_p50": "200",
        "workload": "synthetic",
        "input_tokens": "1024",
        "label": "A800 <b>AWQ</b>",
        "stall_timeout": "5",
    }
    at = open_page("probe", link)
    assert not at.warning
    assert at.text_input(key="probe.model").value == "qwen"
    assert at.number_input(key="probe.ttft_p50").value == 200
    assert at.number_input(key="probe.input_tokens").value == 1024
    assert url_params(at) == link
    at.text_input(key="probe.api_key").input(KEY).run()
    at.text_input(key="probe.levels").input("2, 8").run()
    at.text_input(key="probe.rate").input("5").run()
    params = url_params(at)
    assert params == {**link, "levels": "2,8", "rate": "5"}
    assert KEY not in str(params)  # the key is a widget of its own, never a parameter
    again = open_page("probe", params)
    assert again.text_input(key="probe.levels").value == "2,8"
    assert again.text_input(key="probe.rate").value == "5"
    assert again.text_input(key="probe.api_key").value == ""


@pytest.mark.parametrize(
    ("params", "named"),
    [
        ({"levels": "0,4"}, "`levels`"),
        ({"levels": "abc"}, "`levels`"),
        ({"levels": "4,4"}, "`levels`"),
        ({"requests": "0"}, "`requests`"),
        ({"url": "ftp://host/v1"}, "`url`"),
        ({"url": "http://user:pw@host/v1"}, "`url`"),
        ({"url": "http://host/v1?api_key=x"}, "`url`"),
        ({"rate": "-1"}, "`rate`"),
        ({"api": "grpc"}, "`api`"),
        ({"workload": "everything"}, "`workload`"),
        ({"ttft_p99": "fast"}, "`ttft_p99`"),
        ({"gpu": "H1000"}, "`gpu`"),
        ({"gpu_count": "0"}, "`gpu_count`"),
        ({"deploy_model": "gpt-9"}, "`deploy_model`"),
        ({"engine": "x"}, "`engine`"),
        ({"quant": "int3"}, "`quant`"),
    ],
)
def test_bad_link_warns_once_names_the_parameter_and_uses_the_default(params: dict[str, str], named: str) -> None:
    at = open_page("probe", {**params, "model": "m"})
    assert not at.exception
    warnings = texts(at.warning)
    assert len(warnings) == 1 and named in warnings[0]
    assert url_params(at) == {"model": "m"}


def test_the_deployment_expander_fills_from_the_link_with_catalog_ids() -> None:
    link = {"model": "m", "gpu": "H100", "gpu_count": "2", "deploy_model": "llama-3.1-8b", "engine": "trtllm"}
    at = open_page("probe", link)
    assert not at.exception and not at.warning
    assert [e for e in at.expander if e.label.startswith("Deployment (optional")]
    gpu = at.selectbox(key="probe.gpu")
    assert gpu.label == "GPU type" and gpu.value == "h100-80gb-sxm" and "H100 80GB SXM" in gpu.options
    assert at.number_input(key="probe.gpu_count").value == 2
    assert at.selectbox(key="probe.deploy_model").value == "llama3.1-8b"
    assert at.selectbox(key="probe.engine").value == "tensorrt-llm"
    assert at.selectbox(key="probe.quant").value is None  # not stated: read from the server when it tells
    assert url_params(at) == {
        "model": "m",
        "gpu": "h100-80gb-sxm",
        "gpu_count": "2",
        "deploy_model": "llama3.1-8b",
        "engine": "tensorrt-llm",
    }
    at.selectbox(key="probe.quant").set_value("fp8").run()
    assert url_params(at)["quant"] == "fp8"


def test_a_run_from_the_page_keeps_the_given_deployment_and_says_what_was_detected(
    fake: FakeServer, database_url: str
) -> None:
    link = {"url": fake.base_url, "model": "fake", "levels": "1", "requests": "2", "gpu": "a800-80gb-sxm"}
    at = open_page("probe", {**link, "gpu_count": "1"})
    at.button(key="probe.start").click().run()
    finish_probe(at)
    assert not at.exception and not at.error
    shown = [c for c in texts(at.caption) if c.startswith("Deployment:")]
    assert shown and "1 × A800 80GB SXM" in shown[0] and "vLLM" in shown[0] and "engine from metrics" in shown[0]
    (row,) = list_runs(_engine(database_url))
    assert (row.deploy_gpu, row.deploy_gpu_count, row.deploy_engine) == ("a800-80gb-sxm", 1, "vllm")


def test_a_probe_runs_from_the_page_shows_results_and_is_stored_without_the_key(
    fake: FakeServer, database_url: str
) -> None:
    at = open_page("probe", {"url": fake.base_url, "levels": "1,2", "requests": "4", "label": "smoke"})
    at.text_input(key="probe.api_key").input(KEY).run()
    at.button(key="probe.test").click().run()
    assert any("reachable" in m for m in texts(at.markdown))
    assert at.text_input(key="probe.model").value == "fake"  # picked from the server's list
    at.button(key="probe.start").click().run()
    assert not at.exception and not at.error
    finish_probe(at)
    assert not at.exception and not at.error
    assert metric(at, "Max concurrency in SLO") == "2"
    assert any("Throughput grew" in c and "handbook" in c for c in texts(at.caption))
    assert float(metric(at, "Output tokens/s").replace(",", "")) > 0
    assert len(at.get("plotly_chart")) == 0  # lazy tabs: the levels table first, the charts once opened
    assert len(open_result_tab(at, "Latency").get("plotly_chart")) == 1
    assert len(open_result_tab(at, "Throughput").get("plotly_chart")) == 1
    # "Cost this" carries the measured figures of the highest level within SLO to the cost page.
    cost = next(p for p in at.get("page_link") if p.proto.label == "Cost this")
    assert cost.proto.page == "tco"
    query = dict(parse_qsl(cost.proto.query_string))
    assert set(query) >= {"tps", "out_tokens", "in_tokens"} and query["out_tokens"] == "8"
    assert (query["tps_source"], query["prefix"], query["spot"]) == ("measured", "false", "false")
    assert (query["gpu"], query["price"]) == ("a800-40gb-sxm", "15")  # no GPU declared: the handbook's A800, said so
    assert any(c.startswith("The run declared no GPU") for c in texts(at.caption))
    engine = _engine(database_url)
    (row,) = list_runs(engine)
    result = get_run(engine, row.id)
    assert result is not None and result.status == RunStatus.COMPLETED and row.label == "smoke"
    assert len(result.samples) == 8 and [lv.concurrency for lv in result.levels] == [1, 2]
    level2 = result.levels[1]
    assert query["tps"] == f"{level2.output_tok_s:.1f}".removesuffix(".0")
    opened = next(p for p in at.get("page_link") if p.proto.label == "Open in Probe runs")
    assert opened.proto.query_string == f"runs={row.id}"
    names = sorted(b.proto.label for b in at.get("download_button"))
    assert names == ["Download JSON", "Download levels CSV", "Download requests CSV"]
    # The key reached the server only: not the link, the database or the export.
    assert KEY not in str(url_params(at)) and KEY not in result_json(result)
    with engine.connect() as conn:
        for table in ("probe_runs", "probe_levels", "probe_samples"):
            dump = str(conn.execute(text(f"SELECT * FROM {table}")).all())
            assert KEY not in dump


def test_cancel_stops_the_probe_and_keeps_what_finished(fake: FakeServer, database_url: str) -> None:
    slow = "fake:ttft_ms=20,tpot_ms=40,tokens=30"  # about 1.2 s per request
    at = open_page("probe", {"url": fake.base_url, "model": slow, "levels": "1,2", "requests": "6"})
    at.button(key="probe.start").click().run()
    deadline = time.monotonic() + 20
    while metric_progress(at) < 1:
        assert time.monotonic() < deadline
        time.sleep(0.2)
        at.run()
    at.button(key="probe.cancel").click().run()
    finish_probe(at)
    assert not at.exception
    assert any("cancelled" in w for w in texts(at.warning))
    (row,) = list_runs(_engine(database_url))
    assert row.status == RunStatus.CANCELLED.value
    stored = get_run(_engine(database_url), row.id)
    assert stored is not None and 1 <= len(stored.samples) < 12
    assert at.button(key="probe.start").disabled is False  # the page is usable again


def metric_progress(at: object) -> int:
    """Requests finished so far, read from the live progress text."""
    import re

    for bar in at.get("progress"):
        found = re.search(r"This level: (\d+) of", bar.proto.text)
        if found:
            return int(found.group(1))
    return 0


def test_unreachable_endpoint_says_so_once_and_the_page_stays_usable(database_url: str) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    at = open_page("probe", {"url": url, "model": "m", "levels": "1", "requests": "2", "connect_timeout": "2"})
    at.button(key="probe.test").click().run()
    assert any("cannot connect" in m or "refused" in m.lower() for m in texts(at.markdown))
    at.button(key="probe.start").click().run()
    finish_probe(at)
    assert not at.exception
    errors = texts(at.error)
    assert len(errors) == 1 and "cannot reach" in errors[0] and "Check the endpoint URL" in errors[0]
    assert at.button(key="probe.start").disabled is False
    (row,) = list_runs(_engine(database_url))
    assert row.status == RunStatus.FAILED.value


@pytest.mark.parametrize(
    ("params", "says"),
    [
        ({"levels": "1,1024"}, "over the cap of 512"),
        ({"model": ""}, "pick a model"),
        ({"workload": "file"}, "prompt file"),
    ],
)
def test_refused_settings_are_one_clear_error_and_nothing_is_stored(
    params: dict[str, str], says: str, database_url: str
) -> None:
    at = open_page("probe", {"url": "http://127.0.0.1:9/v1", "model": "m", "requests": "2", **params})
    at.button(key="probe.start").click().run()
    assert not at.exception
    errors = texts(at.error)
    assert len(errors) == 1 and says in errors[0]
    assert "_probe.run" not in at.session_state
    assert list_runs(_engine(database_url)) == []


def test_a_run_started_in_one_session_is_cancelled_from_another(fake: FakeServer, database_url: str) -> None:
    """A reloaded tab or a colleague on /runs can stop a probe this app process is running."""
    slow = "fake:ttft_ms=20,tpot_ms=40,tokens=30"
    at = open_page("probe", {"url": fake.base_url, "model": slow, "levels": "1,2", "requests": "6"})
    at.button(key="probe.start").click().run()
    (row,) = list_runs(_engine(database_url))
    other = open_page("runs", {"runs": row.id})  # a new session
    deadline = time.monotonic() + 20
    while not any(b.key == f"runs.cancel.{row.id}" for b in other.button):
        assert time.monotonic() < deadline, "no cancel button for the live run"
        time.sleep(0.2)
        other.run()
    other.button(key=f"runs.cancel.{row.id}").click().run()
    finish_probe(at)
    (row,) = list_runs(_engine(database_url))
    assert row.status == RunStatus.CANCELLED.value
    assert any("cancelled" in w for w in texts(at.warning))


def test_the_page_offers_trace_replay_and_replays_a_built_in_slice(fake: FakeServer, database_url: str) -> None:
    at = open_page("probe", {"url": fake.base_url, "model": "fake", "workload": "trace"})
    assert not at.exception and not at.error
    assert "Trace replay (arrival times and lengths)" in at.selectbox(key="probe.workload").options
    assert any("Splitwise" in c and "CC-BY 4.0" in c for c in texts(at.caption))
    at.selectbox(key="probe.trace").set_value("azure-code").run()
    at.number_input(key="probe.trace_limit").set_value(10).run()
    at.number_input(key="probe.trace_speed").set_value(50.0).run()
    assert {k: url_params(at)[k] for k in ("trace", "trace_limit", "trace_speed")} == {
        "trace": "azure-code",
        "trace_limit": "10",
        "trace_speed": "50",
    }
    at.button(key="probe.start").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    finish_probe(at)
    assert not at.exception and not at.error
    assert [t.label for t in at.tabs] == ["Levels", "Latency", "Throughput", "Errors", "Timeline"]
    assert len(open_result_tab(at, "Timeline").get("plotly_chart")) == 1  # the replay's timeline
    (row,) = list_runs(_engine(database_url))
    result = get_run(_engine(database_url), row.id)
    assert result is not None and result.status == RunStatus.COMPLETED and len(result.levels) == 1
    assert result.settings.trace == "azure-code" and result.settings.trace_limit == 10
    assert result.best_concurrency_within_slo is None
    assert sorted(s.trace_line for s in result.samples if s.trace_line is not None) == list(range(2, 12))
    assert result.levels[0].schedule_lag_ms is not None


def test_a_trace_path_in_the_link_is_refused() -> None:
    at = open_page("probe", {"workload": "trace", "trace": "/etc/passwd"})
    assert any("`trace`" in w.value for w in at.warning)


def test_the_page_holds_sessions_and_shows_their_figures_by_turn(fake: FakeServer, database_url: str) -> None:
    at = open_page("probe", {"url": fake.base_url, "model": "fake", "workload": "sessions"})
    assert not at.exception and not at.error
    assert "Multi-turn sessions (growing history)" in at.selectbox(key="probe.workload").options
    at.number_input(key="probe.sessions").set_value(3).run()
    at.number_input(key="probe.turns").set_value(3).run()
    at.selectbox(key="probe.session_variant").set_value("agent").run()
    assert {k: url_params(at)[k] for k in ("workload", "sessions", "turns", "session_variant")} == {
        "workload": "sessions",
        "sessions": "3",
        "turns": "3",
        "session_variant": "agent",
    }
    at.button(key="probe.start").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    finish_probe(at)
    assert not at.exception and not at.error
    assert metric(at, "SLO") == "met"
    open_result_tab(at, "By turn")
    turns = next(d.value for d in at.dataframe if "prompt tokens (mean)" in d.value.columns)
    assert list(turns["turn"]) == [1, 2, 3] and list(turns["ok"]) == [3, 3, 3]
    prompts = list(turns["prompt tokens (mean)"])
    assert prompts[0] < prompts[1] < prompts[2]  # every turn resends the history, answers included
    assert any("prefix-cache hit ratio" in c for c in texts(at.caption))
    (row,) = list_runs(_engine(database_url))
    result = get_run(_engine(database_url), row.id)
    assert result is not None and result.status == RunStatus.COMPLETED and result.settings.sessions == 3
    assert sorted((s.session, s.turn) for s in result.samples) == [(s, t) for s in range(3) for t in (1, 2, 3)]
    assert result.levels[0].turns is not None and [t.turn for t in result.levels[0].turns] == [1, 2, 3]
