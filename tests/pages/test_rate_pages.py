"""Request rates on the pages: /probe offers a rate list and the rate search, "Cost this" carries `rps` to /tco."""

from collections.abc import Iterator
from urllib.parse import parse_qsl

import pytest

from db import init_db, make_engine
from db.run_queries import get_run, list_runs
from fakeserver import Behaviour, FakeServer, serve_in_thread
from tests.pages.apptest import finish_probe, metric, open_page, open_result_tab, open_tab, runs_grid, texts, url_params


@pytest.fixture(autouse=True)
def _fresh_db(database_url: str) -> None:
    from ui.resources import get_engine

    get_engine.clear()


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeServer]:
    with serve_in_thread(defaults=Behaviour(ttft_ms=5, tpot_ms=1, tokens=8), max_running=None) as server:
        yield server


def _stored(database_url: str) -> object:
    engine = make_engine(database_url)
    init_db(engine)
    (row,) = list_runs(engine)
    return get_run(engine, row.id)


def test_the_probe_page_offers_a_rate_list_and_the_rate_search_and_keeps_them_in_the_link() -> None:
    link = {"rate": "1,2,4", "burstiness": "2", "max_in_flight": "8", "find_max_rate": "true", "search_max_levels": "5"}
    at = open_page("probe", link)
    assert not at.exception and not at.error and not at.warning
    assert at.text_input(key="probe.rate").value == "1,2,4"
    assert at.toggle(key="probe.find_max_rate").value is True
    assert at.number_input(key="probe.burstiness").value == 2
    assert at.number_input(key="probe.max_in_flight").value == 8
    assert at.number_input(key="probe.search_max_levels").value == 5
    assert at.number_input(key="probe.search_max_duration").value == 600
    assert url_params(at) == link
    at.toggle(key="probe.find_max_rate").set_value(False).run()
    at.text_input(key="probe.rate").input("3, 6").run()
    expected = {**link, "rate": "3,6"}
    del expected["find_max_rate"]
    assert url_params(at) == expected


def test_a_rate_sweep_from_the_page_charts_rates_and_costs_the_best_rate(fake: FakeServer, database_url: str) -> None:
    at = open_page("probe", {"url": fake.base_url, "model": "fake", "rate": "20,40", "requests": "4"})
    at.button(key="probe.start").click().run()
    assert not at.exception and not at.error
    finish_probe(at)
    assert not at.exception and not at.error
    assert metric(at, "Max request rate in SLO") == "40 req/s"
    result = _stored(database_url)
    assert [lv.request_rate_rps for lv in result.levels] == [20.0, 40.0]  # type: ignore[attr-defined]
    charts = open_result_tab(at, "Latency").get("plotly_chart")
    assert any("Latency against request rate" in c.proto.spec for c in charts)
    cost = next(p for p in at.get("page_link") if p.proto.label == "Cost this")
    query = dict(parse_qsl(cost.proto.query_string))
    assert query["rps"] == f"40@{result.run_id}" and "tps" not in query  # type: ignore[attr-defined]
    assert query["out_tokens"] == "8"
    # /runs lists it with its best rate and opens it like any other run, charted against the rate.
    runs = open_page("runs")
    table = runs_grid(runs)
    assert list(table["best req/s within SLO"]) == [40.0]
    opened = open_page("runs", {"runs": result.run_id})  # type: ignore[attr-defined]
    assert not opened.exception and not opened.error
    assert metric(opened, "Max request rate in SLO") == "40 req/s"
    charted = open_tab(opened, f"runs.run.{result.run_id}.tab", "Throughput")  # type: ignore[attr-defined]
    assert any("Throughput against request rate" in c.proto.spec for c in charted.get("plotly_chart"))
    # The cost page prices a replica by that rate and names the run.
    tco = open_page("tco", query)
    assert not tco.exception and not tco.error and not tco.warning
    assert metric(tco, "Requests/s per replica") == "40.00"
    assert any("measured" in i and result.run_id in i for i in texts(tco.info))  # type: ignore[attr-defined]
    assert tco.number_input(key="tco.tps").disabled


def test_the_rate_search_runs_from_the_page(fake: FakeServer, database_url: str) -> None:
    link = {"url": fake.base_url, "model": "fake", "rate": "20", "requests": "4"}
    # An SLO no level of a 5 ms test server can miss, however busy the machine: the search grows 20, 40, 80 and
    # stops at its level budget (with the default SLO this test once failed on a busy machine).
    loose = {"ttft_p50": "60000", "ttft_p99": "60000", "tpot_p50": "60000"}
    at = open_page("probe", {**link, **loose, "find_max_rate": "true", "search_max_levels": "3"})
    at.button(key="probe.start").click().run()
    finish_probe(at)
    assert not at.exception and not at.error
    result = _stored(database_url)
    assert [lv.request_rate_rps for lv in result.levels] == [20.0, 40.0, 80.0]  # type: ignore[attr-defined]
    assert result.settings.find_max_rate  # type: ignore[attr-defined]
    assert result.settings.slo.ttft_p99_ms == 60000  # type: ignore[attr-defined]
    assert metric(at, "Max request rate in SLO") == "80 req/s"


def test_the_cost_page_prices_from_rps_and_says_it_is_measured() -> None:
    at = open_page("tco", {"rps": "2.94@9f0c1a2b", "price": "15", "out_tokens": "200"})
    assert not at.exception and not at.error and not at.warning
    assert metric(at, "Cost per request") == "0.0014 CNY"  # the handbook's figure, from the rate
    assert metric(at, "Requests/s per replica") == "2.94"
    assert any("measured" in i and "9f0c1a2b" in i for i in texts(at.info))
    at.button(key="tco.drop_rps").click().run()
    assert "rps" not in url_params(at) and not at.number_input(key="tco.tps").disabled
