"""Headline first, under AppTest: a link's first run draws the page's headline and the beacon, nothing after it; the
browser's report (the session flag the beacon's callback sets) brings the rest, and bad inputs draw it all at once."""

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from fakeserver import Behaviour, FakeServer, serve_in_thread
from tests.pages.apptest import metric, newest_list, open_page
from tests.pages.test_runs_page import record
from tests.support import ROOT
from ui.first_paint import BEACON_KEY, painted_key

TCO = {"price": "15", "currency": "CNY", "tps": "588", "out_tokens": "200", "hours": "720"}
SELECTOR = {"gpu": "H100", "gpus": "2", "model": "llama3.1-70b", "workload": "rag"}


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeServer]:
    with serve_in_thread(defaults=Behaviour(ttft_ms=5, tpot_ms=1, tokens=8), max_running=None) as server:
        yield server


def beacons(at: AppTest) -> int:
    return sum(1 for e in at.get("bidi_component") if getattr(e, "key", None) == BEACON_KEY)


def widget_keys(at: AppTest) -> set[str]:
    keys = {w.key for kind in ("number_input", "selectbox", "text_input", "segmented_control") for w in at.get(kind)}
    return {k for k in keys if k}


def painted(at: AppTest, page: str) -> AppTest:
    """What the beacon's report does: its callback sets the flag, and the page runs again."""
    at.session_state[painted_key(page)] = True
    return at.run()


def test_a_tco_link_draws_the_cost_first_then_the_form_and_the_rest(database_url: str) -> None:
    at = open_page("tco", TCO, painted=False)
    assert not at.exception and not at.error
    assert metric(at, "Cost per request") == "0.0014 CNY" and beacons(at) == 1
    assert not at.tabs and "tco.price" not in widget_keys(at)  # no results' tabs, no form yet
    assert "_lang.switch" not in widget_keys(at)  # the language switch comes with the rest
    assert not any(m.label == "GPUs needed" for m in at.metric)
    at = painted(at, "tco")
    assert beacons(at) == 0 and metric(at, "Cost per request") == "0.0014 CNY"
    assert {"tco.price", "tco.tps", "_lang.switch"} <= widget_keys(at)
    assert [t.label for t in at.tabs][:1] == ["Optimization levers"] and metric(at, "GPUs needed")
    at.number_input(key="tco.price").set_value(30.0).run()  # later runs draw it all
    assert beacons(at) == 0 and metric(at, "Cost per request") == "0.0028 CNY" and "tco.price" in widget_keys(at)


def test_a_bad_parameter_is_said_above_the_headline_and_a_bad_entry_keeps_the_form(database_url: str) -> None:
    at = open_page("tco", {**TCO, "price": "-1"}, painted=False)
    assert not at.exception and beacons(at) == 1
    assert any("price" in w for w in (x.value for x in at.warning))  # the link's value is named, the default used
    at = painted(at, "tco")
    at.number_input(key="tco.price").set_value(-1.0).run()
    assert at.error and beacons(at) == 0 and "tco.price" in widget_keys(at)  # what to fix, and where
    at.number_input(key="tco.price").set_value(15.0).run()
    assert beacons(at) == 0 and metric(at, "Cost per request") == "0.0014 CNY" and "tco.price" in widget_keys(at)


def test_a_selector_link_draws_the_figures_first(database_url: str) -> None:
    at = open_page("selector", SELECTOR, painted=False)
    assert not at.exception and beacons(at) == 1
    assert metric(at, "Max sequences") and not at.tabs and "selector.gpu" not in widget_keys(at)
    at = painted(at, "selector")
    assert beacons(at) == 0 and "selector.gpu" in widget_keys(at)
    assert [t.label for t in at.tabs][:2] == ["Why", "Memory fit"]


def test_a_compare_link_draws_the_top_option_first(database_url: str) -> None:
    at = open_page("compare", {"engines": "vllm", "counts": "1"}, painted=False, timeout_s=120)
    assert not at.exception and beacons(at) == 1
    assert metric(at, "Per million output tokens") and not at.tabs and "compare.model" not in widget_keys(at)
    at = painted(at, "compare")
    assert beacons(at) == 0 and "compare.model" in widget_keys(at) and "compare.rank_by" in widget_keys(at)
    assert [t.label for t in at.tabs][:1] == ["Ranking"]


def test_the_probe_form_comes_first_and_its_closed_sections_after(database_url: str) -> None:
    at = open_page("probe", painted=False)
    assert not at.exception and beacons(at) == 1
    assert at.button(key="probe.start").label == "Start probe" and "probe.url" in widget_keys(at)
    assert {"probe.url", "probe.model"} <= widget_keys(at) and at.button(key="probe.test").label == "Test connection"
    assert not at.expander and not {"probe.workload", "probe.levels", "probe.max_tokens"} & widget_keys(at)
    at = painted(at, "probe")  # then below the buttons: the load settings, and the closed sections
    assert beacons(at) == 0 and {"probe.workload", "probe.levels", "probe.requests"} <= widget_keys(at)
    assert {"probe.max_tokens", "probe.ttft_p50", "probe.gpu"} <= widget_keys(at)
    assert [e.label for e in at.expander][:2] == ["Load and generation", "Request rates (open loop)"]


def test_an_opened_run_shows_its_cards_first(fake: FakeServer, engine: object) -> None:
    run_id = record(engine, fake, "fake:tokens=8")
    at = open_page("runs", {"runs": run_id}, painted=False)
    assert not at.exception and beacons(at) == 1
    assert metric(at, "Max concurrency in SLO") == "2"
    assert [t.label for t in at.tabs] == ["Newest", "Every run: sort, search, download"]  # the list, not the run's
    assert "runs.model" not in widget_keys(at) and not at.get("download_button")
    at = painted(at, "runs")
    assert beacons(at) == 0 and "runs.model" in widget_keys(at) and len(at.get("download_button")) == 5


def test_the_list_comes_first_then_its_filters_and_the_picker(fake: FakeServer, engine: object) -> None:
    run_id = record(engine, fake, "fake:tokens=8")
    at = open_page("runs", painted=False)
    assert not at.exception and beacons(at) == 1
    assert f"`{run_id}`" in newest_list(at) and not at.multiselect and "runs.model" not in widget_keys(at)
    at = painted(at, "runs")
    assert beacons(at) == 0 and "runs.model" in widget_keys(at) and at.multiselect(key="runs.runs").label


def test_each_page_flag_is_its_url_path() -> None:
    """The router marks a page drawn by its url_path; the pages name their flag by PAGE: the two must agree."""
    paths = dict(re.findall(r'st\.Page\("views/(\w+)\.py".*?url_path="(\w+)"', (ROOT / "app.py").read_text()))
    for view in Path(ROOT / "views").rglob("*.py"):
        found = re.search(r'^PAGE = "(\w+)"', view.read_text(), re.MULTILINE)
        if found:  # a page's sections (views/<page>_parts/) name the page's flag too
            page = view.parent.name.removesuffix("_parts") if view.parent.name.endswith("_parts") else view.stem
            assert paths[page] == found.group(1), view.name
