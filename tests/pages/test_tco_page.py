"""The cost page under AppTest: the handbook link, URL round trips, bad links, saved scenarios."""

import pytest

from tests.pages.apptest import metric, open_page, texts, url_params

HANDBOOK_LINK = {"price": "15", "currency": "CNY", "tps": "588", "out_tokens": "200", "hours": "720"}


@pytest.fixture(autouse=True)
def _fresh_db(database_url: str) -> None:
    from ui.resources import get_engine

    get_engine.clear()


def test_handbook_link_shows_the_handbook_figures() -> None:
    at = open_page("tco", HANDBOOK_LINK)
    assert not at.exception
    assert metric(at, "Cost per request") == "0.0014 CNY"
    assert metric(at, "Requests/s per replica") == "2.94"
    assert metric(at, "Requests/day per replica") == "254,016"
    assert metric(at, "Per replica per month") == "10,800 CNY"
    assert not at.error and not at.warning


def test_url_round_trip_editing_an_input_rewrites_the_link() -> None:
    at = open_page("tco", HANDBOOK_LINK)
    # Defaults are omitted from the link; the non-default hours stay.
    assert url_params(at) == {"hours": "720"}
    at.number_input(key="tco.tps").set_value(1176.0).run()
    assert url_params(at) == {"hours": "720", "tps": "1176"}
    assert metric(at, "Cost per request") == "0.00071 CNY"
    # The rewritten link opens the same scenario in a fresh session.
    again = open_page("tco", url_params(at))
    assert metric(again, "Cost per request") == "0.00071 CNY"
    assert again.number_input(key="tco.tps").value == 1176.0


def test_picking_a_gpu_fills_its_price_and_currency_converts() -> None:
    at = open_page("tco", {"currency": "USD"})
    at.selectbox(key="tco.gpu").set_value("h100-80gb-sxm").run()
    assert at.number_input(key="tco.price").value == pytest.approx(1.99)
    assert url_params(at)["gpu"] == "h100-80gb-sxm"
    assert metric(at, "Cost per request").endswith(" USD")


def test_a_link_naming_a_gpu_uses_its_own_price_never_the_handbook_a800s() -> None:
    at = open_page("tco", {"gpu": "h100", "currency": "USD"})
    assert at.number_input(key="tco.price").value == pytest.approx(1.99)  # H100's lowest public price, not 15 CNY
    assert metric(at, "Cost per request").endswith(" USD")
    assert url_params(at)["price"] == "1.99"


def test_a_gpu_without_a_price_asks_for_one_and_computes_nothing() -> None:
    at = open_page("tco", {"gpu": "h800", "tps": "900"})
    assert not at.exception and not at.metric
    assert [w for w in texts(at.warning) if w.startswith("No price for H800 80GB SXM")]
    at.number_input(key="tco.price").set_value(8.0).run()
    assert metric(at, "Cost per request") == "0.00049 CNY"  # 8 / (900 / 200 x 3600)
    assert url_params(at)["price"] == "8"
    at.selectbox(key="tco.gpu").set_value("a800-40gb-pcie").run()  # another unpriced GPU: the price goes
    assert not at.metric and [w for w in texts(at.warning) if w.startswith("No price for A800 40GB PCIe")]


def test_cost_by_kind_of_token_at_full_load_and_at_the_traffic() -> None:
    at = open_page("tco", {**HANDBOOK_LINK, "in_tokens": "500", "traffic": "100000", "peak": "1", "util": "100"})
    table = next(d.value for d in at.dataframe if "kind" in d.value.columns).set_index("kind")
    full, traffic = "one replica at full load", "at your traffic (effective)"
    # 0.0014172 CNY per request: 68% on 500 input tokens, 32% on 200 output tokens (tests/tco/test_tokens.py)
    assert table.loc["input", full] == "1.93 CNY" and table.loc["output", full] == "2.27 CNY"
    assert table.loc["cached input", full] == "0 CNY"
    assert table.loc["blended (this traffic's mix)", full] == "2.02 CNY"
    # one A800 for 720 h (10,800 CNY) over 3 million requests of 700 tokens: 5.14 CNY per million
    assert table.loc["blended (this traffic's mix)", traffic] == "5.14 CNY"


def test_working_backwards_from_a_budget_and_a_power_budget() -> None:
    at = open_page("tco", {**HANDBOOK_LINK, "budget": "100000", "power": "1 MW"})
    assert not at.exception and not at.warning
    # 100,000 CNY buys 9 replicas of 10,800: at 70% of 2.94 req/s, peak twice the average (tests/tco/test_inverse.py)
    assert metric(at, "Replicas it pays for") == "9"
    assert metric(at, "Traffic the budget serves") == "800,150/day"
    # 1 MW of 400 W A800s: 2,500 GPUs x 588 tok/s; users at 50 ms TPOT read 20 tok/s each
    assert metric(at, "GPUs the power runs") == "2,500"
    assert metric(at, "Output tokens/s (full load)") == "1,470,000"
    assert metric(at, "Concurrent users") == "73,500"
    assert url_params(at)["power"] == "1MW"
    at.text_input(key="tco.power").set_value("").run()
    assert "power" not in url_params(at) and not [m for m in at.metric if m.label == "GPUs the power runs"]


def test_a_bad_power_budget_is_named() -> None:
    at = open_page("tco", {**HANDBOOK_LINK, "power": "2 GW"})
    warnings = texts(at.warning)
    assert len(warnings) == 1 and "`power`" in warnings[0] and "kW or MW" in warnings[0]
    assert metric(at, "Cost per request") == "0.0014 CNY"


def test_capacity_per_request_is_labelled_as_capacity_not_latency() -> None:
    at = open_page("tco", HANDBOOK_LINK)
    assert metric(at, "Replica time per request") == "0.34 s"
    helps = [str(m.help) for m in at.metric if m.label == "Replica time per request"]
    assert "not the request's latency" in helps[0]


@pytest.mark.parametrize(
    ("params", "named"),
    [
        ({"tps": "0"}, "`tps`"),
        ({"tps": "abc"}, "`tps`"),
        ({"util": "150"}, "`util`"),
        ({"peak": "0.2"}, "`peak`"),
        ({"currency": "EUR"}, "`currency`"),
        ({"gpu": "Z9000"}, "`gpu`"),
        ({"gpus": "-1"}, "`gpus`"),
    ],
)
def test_bad_link_warns_once_names_the_parameter_and_shows_defaults(params: dict[str, str], named: str) -> None:
    at = open_page("tco", {**params, "hours": "720"})
    assert not at.exception
    warnings = texts(at.warning)
    assert len(warnings) == 1 and named in warnings[0]
    assert metric(at, "Cost per request") == "0.0014 CNY"  # the default for the bad one, the rest as linked
    assert next(iter(params)) not in url_params(at)


def test_bad_form_value_names_the_field_and_keeps_the_entry() -> None:
    at = open_page("tco", HANDBOOK_LINK)
    at.number_input(key="tco.util").set_value(150.0).run()
    errors = texts(at.error)
    assert len(errors) == 1 and "Target utilization" in errors[0] and "100" in errors[0]
    assert at.number_input(key="tco.util").value == 150.0  # nothing the user typed is lost
    assert not at.exception
    assert url_params(at) == {"hours": "720"}  # the link keeps the last valid scenario


def test_save_open_and_delete_a_scenario() -> None:
    at = open_page("tco", {"price": "20", "traffic": "5000000"})
    at.text_input(key="tco.scenario-name").input("Big launch <script>alert(1)</script>")
    at.button(key="FormSubmitter:tco.save-form-Save scenario").click().run()
    link = url_params(at)
    assert "s" in link and len(link["s"]) == 6
    assert any("Big launch" in s for s in texts(at.success))
    # The short link alone opens the saved scenario.
    opened = open_page("tco", {"s": link["s"]})
    assert opened.number_input(key="tco.price").value == 20
    assert metric(opened, "Cost per request") == metric(at, "Cost per request")
    assert any("Big launch" in i for i in texts(opened.info))
    # Delete it; its link then says so and shows the defaults.
    delete = next(b for b in opened.button if b.key and b.key.startswith("tco.delete."))
    delete.click().run()
    gone = open_page("tco", {"s": link["s"]})
    assert any("does not exist" in w for w in texts(gone.warning))
    assert metric(gone, "Per replica per month") == "10,950 CNY"  # defaults: 15 CNY x 730 h


def test_unknown_scenario_id_says_so() -> None:
    at = open_page("tco", {"s": "zzzzzz"})
    assert any("zzzzzz" in w and "does not exist" in w for w in texts(at.warning))
    assert not at.exception


def test_the_default_throughput_says_it_is_the_handbooks_measured_run() -> None:
    at = open_page("tco")
    assert not at.exception
    assert any("handbook's **measured** run" in c for c in texts(at.caption))
    at = open_page("tco", {"tps": "1234"})
    assert not any("handbook's **measured** run" in c for c in texts(at.caption))
