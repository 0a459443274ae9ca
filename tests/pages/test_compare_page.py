"""The comparison page under AppTest: it ranks, the link round-trips, a bad link warns once; and the estimates on
/selector and /tco: shown with band and basis, carried by "Price this", filled into the cost page on request."""

from urllib.parse import parse_qsl

import pytest
from streamlit.testing.v1 import AppTest

from selector import AdviceRequest, advise
from tco.throughput import estimate_advice
from tests.pages.apptest import metric, open_page, open_tab, texts, url_params

NARROW = {"engines": "vllm", "counts": "1"}  # about 90 options: a few seconds to estimate cold
TIMEOUT_S = 180


@pytest.fixture(autouse=True)
def _fresh_db(database_url: str) -> None:
    from ui.resources import get_engine

    get_engine.clear()


def _links(at: AppTest) -> dict[str, dict[str, str]]:
    """The first link to each page: page -> its query parameters."""
    found: dict[str, dict[str, str]] = {}
    for link in at.get("page_link"):
        found.setdefault(link.proto.page, dict(parse_qsl(link.proto.query_string)))
    return found


# --- /compare -------------------------------------------------------------------------------------------------------


def test_compare_ranks_the_options_with_links_to_the_other_pages() -> None:
    at = open_page("compare", NARROW, timeout_s=TIMEOUT_S)
    assert not at.exception and not at.error
    table = at.dataframe[0].value
    flagged = [w.value for w in at.warning]
    assert all(f.startswith("This option rests on datasheet figures alone") for f in flagged)
    assert len(flagged) == int(bool(table["datasheet only"].iloc[0])), "the top option is flagged when datasheet-only"
    measured = table[table["basis"] == "fitted"].iloc[0]  # the narrow ranking has options fitted on measurements
    for warning in flagged:  # ... and a flagged top option names the best-ranked one with a measured basis
        verdict = "meets the SLO" if measured["SLO"] == "meets" else "misses the SLO"
        named = f"The best-ranked option with a measured basis (fitted or calibrated) is rank {measured['rank']}, "
        assert named in warning
        assert warning.endswith(f"across its band), {verdict}.")
    assert len(table) > 20
    assert list(table["rank"][:3]) == [1, 2, 3]
    costs = list(table["per 1M output tokens (CNY)"][table["SLO"] == "meets"])
    assert costs == sorted(costs)
    assert (table["engine"] == "vLLM").all() and (table["GPUs per replica"] == 1).all()
    top = table.iloc[0]
    assert metric(at, "Per million output tokens").endswith(" CNY")
    assert any(c.startswith("In USD at ") and " USD per million output tokens" in c for c in texts(at.caption))
    assert metric(at, "GPUs needed") == f"{top['GPUs in all']:,}"
    assert metric(at, "Tok/s per replica (estimate)") == f"{top['tok/s per replica']:,.0f} tok/s"
    assert any("8 in 10 held-out measurements" in c and "Basis" in c for c in texts(at.caption))
    assert top["cost calculator"].startswith("/tco?") and top["engine advisor"].startswith("/selector?")
    links = _links(at)
    assert links["tco"]["tps"] == f"{top['tok/s per replica']:g}" and links["tco"]["tps_source"] == "estimate"
    assert links["tco"]["gpu"] == links["selector"]["gpu"]
    # "Price this" carries what it prices, and the assumed levers (prompt reuse, spot prices) start off
    assert {"gpus", "price", "currency", "in_tokens", "out_tokens"} <= set(links["tco"])
    assert (links["tco"]["prefix"], links["tco"]["spot"]) == ("false", "false")
    assert "/tco?" + "&".join(f"{k}={v}" for k, v in links["tco"].items()) == top["cost calculator"]
    assert len(at.get("plotly_chart")) == 0  # the chart's tab is lazy: it runs once opened
    assert len(open_tab(at, "_compare.tab", "Cost vs latency").get("plotly_chart")) == 1


def test_each_option_shows_its_cost_range_and_the_pessimistic_end_can_rank_them() -> None:
    at = open_page("compare", NARROW, timeout_s=TIMEOUT_S)
    table = at.dataframe[0].value
    ranges = [tuple(float(x) for x in r.split("–")) for r in table["per 1M range (CNY)"]]
    for (low, high), cost in zip(ranges, table["per 1M output tokens (CNY)"], strict=True):
        assert low <= cost * 1.001 and cost <= high * 1.001, "the estimate sits inside its own range"
    assert all(", TPOT " in b and ", TTFT " in b for b in table["bands"])
    at.selectbox(key="compare.rank_by").set_value("pessimistic").run()
    pessimistic = at.dataframe[0].value
    meeting = pessimistic[pessimistic["SLO"] == "meets"]
    dear_ends = [float(r.split("–")[1]) for r in meeting["per 1M range (CNY)"]]
    assert dear_ends == sorted(dear_ends)
    assert url_params(at)["rank_by"] == "pessimistic"


@pytest.mark.parametrize(
    ("rank_by", "column", "words"),
    [
        ("input", "per 1M input (CNY)", "cost per million input tokens at full load"),
        ("blended_traffic", "per 1M blended at traffic (CNY)", "blended cost per million tokens at your traffic"),
    ],
)
def test_compare_ranks_by_a_kind_of_token_and_says_which(rank_by: str, column: str, words: str) -> None:
    at = open_page("compare", {**NARROW, "in_tokens": "1500", "out_tokens": "300", "rank_by": rank_by}, TIMEOUT_S)
    assert not at.exception and not at.error
    table = at.dataframe[0].value
    costs = list(table[column][table["SLO"] == "meets"])
    assert costs == sorted(costs) and all(c > 0 for c in costs)
    assert any(c.startswith("Rank 1 of") and words in c for c in texts(at.caption))
    # at the traffic the fleet's idle headroom is paid for: never below one replica at full load
    assert (table["per 1M blended at traffic (CNY)"] >= table["per 1M blended (CNY)"] * 0.999).all()


def test_a_cost_ceiling_gives_the_best_tokens_per_user_under_it() -> None:
    at = open_page("compare", {**NARROW, "ceiling": "50"}, TIMEOUT_S)
    assert not at.exception and not at.error
    label = "Best tokens/s per user under 50.00 CNY"
    best = float(metric(at, label).removesuffix(" tok/s").replace(",", ""))
    assert best > 0
    at.number_input(key="compare.ceiling").set_value(0.001).run()  # no option is that cheap at any load
    assert any(w.startswith("No option reaches the SLO at 0.0010 CNY") for w in texts(at.warning))
    at.number_input(key="compare.ceiling").set_value(1000.0).run()  # a looser ceiling allows faster streams
    assert float(metric(at, "Best tokens/s per user under 1,000 CNY").removesuffix(" tok/s").replace(",", "")) >= best
    assert url_params(at)["ceiling"] == "1000"
    # just above the top option's cost at its SLO operating point: that load itself answers
    top_cost = float(metric(at, "Per million output tokens").split()[0].replace(",", ""))
    at.number_input(key="compare.ceiling").set_value(round(top_cost * 1.05, 4)).run()
    assert not [w for w in texts(at.warning) if w.startswith("No option reaches the SLO")]
    assert any(" at concurrency " in c and "per million output tokens for one replica" in c for c in texts(at.caption))


def test_engine_releases_are_estimated_and_carried_to_the_cost_page() -> None:
    at = open_page("compare", {**NARROW, "versions": "vllm:0.33.0"}, timeout_s=TIMEOUT_S)
    assert not at.exception and not at.error
    table = at.dataframe[0].value
    assert set(table["release"]) == {"0.33.0"} and set(table["basis"]) <= {"extrapolated", "datasheet"}
    assert "engine_version=0.33.0" in table["cost calculator"].iloc[0]
    assert "engine_version=0.33.0" in table["engine advisor"].iloc[0]
    default = open_page("compare", NARROW, timeout_s=TIMEOUT_S).dataframe[0].value
    assert set(default["release"]) == {"0.19.0"}, "the newest vLLM release with measured data"
    bad = open_page("compare", {**NARROW, "versions": "vllm:latest!"}, timeout_s=TIMEOUT_S)
    assert any("`versions`" in w.value and "not an engine release" in w.value for w in bad.warning)


def test_compare_link_round_trip() -> None:
    at = open_page("compare", {**NARROW, "traffic": "5000000", "currency": "USD"}, timeout_s=TIMEOUT_S)
    assert url_params(at) == {**NARROW, "traffic": "5000000", "currency": "USD"}
    at.selectbox(key="compare.rank_by").set_value("fleet").run()
    at.number_input(key="compare.tpot_p50").set_value(40.0).run()
    params = url_params(at)
    assert params == {**NARROW, "traffic": "5000000", "currency": "USD", "rank_by": "fleet", "tpot_p50": "40"}
    fleets = list(at.dataframe[0].value["fleet per month (USD)"])
    assert fleets[:5] == sorted(fleets[:5])
    again = open_page("compare", params, timeout_s=TIMEOUT_S)
    assert again.number_input(key="compare.tpot_p50").value == 40.0
    assert again.selectbox(key="compare.rank_by").value == "fleet"
    assert metric(again, "Fleet per month") == metric(at, "Fleet per month")
    assert again.dataframe[0].value.iloc[:5].equals(at.dataframe[0].value.iloc[:5])


@pytest.mark.parametrize(("bad", "named"), [({"tpot_p50": "-5"}, "`tpot_p50`"), ({"prices": "Z9000:3"}, "`prices`")])
def test_compare_bad_link_warns_once_naming_the_parameter(bad: dict[str, str], named: str) -> None:
    at = open_page("compare", {**NARROW, **bad}, timeout_s=TIMEOUT_S)
    assert not at.exception
    warnings = [w for w in texts(at.warning) if not w.startswith("This option rests on datasheet figures alone")]
    assert len(warnings) == 1 and named in warnings[0]
    assert len(at.dataframe[0].value) > 20  # the default took its place; the page still ranks
    assert next(iter(bad)) not in url_params(at)


# --- /selector --------------------------------------------------------------------------------------------------------


def test_selector_shows_the_estimates_and_price_this_carries_the_throughput() -> None:
    link = {
        "gpu": "H100",
        "gpus": "2",
        "model": "llama3.1-70b",
        "context": "1200",
        "concurrency": "8",
        "in_tokens": "1000",
        "traffic": "5000000",
    }
    at = open_page("selector", link)
    assert not at.exception
    labels = [m.label for m in at.metric]
    assert labels.count("TTFT p50 (estimate)") == 2  # the recommendation and the runner-up
    assert labels.count("TPOT p50 (estimate)") == 2
    assert labels.count("Output tok/s (estimate)") == 2
    assert labels.count("Max in SLO (estimate)") == 2
    captions = texts(at.caption)
    assert sum("estimate: bands tok/s" in c and "basis" in c for c in captions) == 2
    advice = advise(AdviceRequest.model_validate(link))
    chosen = estimate_advice(advice)
    assert chosen.point is not None and chosen.at_target is not None
    assert metric(at, "TTFT p50 (estimate)") == f"{chosen.at_target.ttft_ms.p50:,.0f} ms"
    price = _links(at)["tco"]
    assert price["tps"] == f"{chosen.point.output_tok_s:g}"
    assert price["tps_source"] == "estimate"
    assert (price["model"], price["gpu"], price["quant_method"]) == (
        "llama3.1-70b",
        "h100-80gb-sxm",
        advice.quantization,
    )
    assert chosen.input_tokens == 1000 and chosen.output_tokens == 200, "the request's lengths, not the context's"
    assert (price["in_tokens"], price.get("out_tokens", "200"), price["traffic"]) == ("1000", "200", "5000000")
    assert (price["price"], price["currency"], price["gpus"]) == ("1.99", "USD", "2")  # H100's public price, 2 GPUs


def test_price_this_on_a_gpu_without_a_price_asks_for_one_on_the_cost_page() -> None:
    at = open_page("selector", {"gpu": "H800", "model": "qwen2.5-7b"})
    assert not at.exception
    link = _links(at)["tco"]
    assert link["gpu"] == "h800-80gb-sxm" and "price" not in link  # no stand-in price travels
    cost = open_page("tco", link)
    assert not cost.exception and not cost.metric  # nothing computed from another GPU's price
    assert any(w.startswith("No price for H800 80GB SXM") for w in texts(cost.warning))
    cost.number_input(key="tco.price").set_value(9.0).run()
    assert metric(cost, "Cost per request").endswith(" CNY")


def test_selector_says_no_estimate_for_an_engine_without_a_model() -> None:
    at = open_page("selector", {"gpu": "RTX 4090", "deploy": "edge"})
    assert not at.exception
    captions = texts(at.caption)
    assert any(c.startswith("no estimate for llama.cpp") for c in captions)
    assert "tps" not in _links(at)["tco"]  # nothing estimated, nothing carried


# --- /tco -------------------------------------------------------------------------------------------------------------


def test_tco_fills_the_throughput_from_an_estimate_and_a_typed_one_replaces_it() -> None:
    at = open_page("tco", {"gpu": "h100", "currency": "USD", "price": "1.99", "gpus": "2", "model": "llama3.1-70b"})
    at.selectbox(key="tco.quant_method").set_value("fp8").run()
    at.button(key="tco.apply_estimate").click().run()
    assert not at.exception and not at.error
    tps = at.number_input(key="tco.tps").value
    assert tps != 588
    params = url_params(at)
    assert params["tps"] == f"{tps:g}" and params["tps_source"] == "estimate" and params["quant_method"] == "fp8"
    assert any(s.startswith(f"Applied {tps:,.6g} tok/s") and "basis" in s for s in texts(at.success))
    note = next(i for i in texts(at.info) if i.startswith("Throughput"))
    assert "estimate: band" in note and "basis fitted" in note
    # The cost follows the estimated throughput: 1.99 USD x 2 GPUs over tps / 200 requests/s.
    assert metric(at, "Requests/s per replica") == f"{tps / 200:,.2f}"
    # The user overwrites it by hand: it is theirs now.
    at.number_input(key="tco.tps").set_value(1000.0).run()
    assert "tps_source" not in url_params(at)
    assert not any(i.startswith("Throughput") for i in texts(at.info))


def test_tco_link_marked_estimate_shows_band_and_basis_and_says_when_stale() -> None:
    link = {"gpu": "h100", "gpus": "2", "model": "llama3.1-70b", "tps_source": "estimate", "tps": "1"}
    at = open_page("tco", link)
    note = next(i for i in texts(at.info) if i.startswith("Throughput"))
    assert "estimate: band" in note and "apply it again" in note  # 1 tok/s is not what these inputs estimate
    custom = open_page("tco", {"gpu": "custom", "price": "2", "tps_source": "estimate"})  # a custom GPU needs a price
    assert any("marked as an estimate" in w and "catalog GPU" in w for w in texts(custom.warning))
    assert not custom.exception


def test_compare_at_a_reserved_tier_names_the_tier_and_seller_of_each_option_and_drops_the_rest() -> None:
    params = {**NARROW, "price_tier": "reserved_1y", "gpu_names": "H100,L4,MI300X", "currency": "USD"}
    at = open_page("compare", params, timeout_s=TIMEOUT_S)
    assert not at.exception and not at.error
    table = at.dataframe[0].value
    tiers = dict(zip(table["GPU"], table["price tier"], strict=True))
    assert tiers["H100 80GB SXM"] == "1-year reserved · qubrid (region not stated)"
    assert tiers["L4 24GB"] == "1-year reserved · aws (us-east-1)"
    dropped = " ".join(texts(at.markdown))
    assert "- MI300X 192GB: no 1-year reserved price on record (give one in prices)" in dropped
    at = open_page("compare", {**params, "price_tier": "reserved_3y", "gpu_names": "T4,H100"}, timeout_s=TIMEOUT_S)
    table = at.dataframe[0].value
    assert set(table["price tier"]) == {"3-year reserved · aws (cn-northwest-1)"}
    assert "- H100 80GB SXM: no 3-year reserved price on record (give one in prices)" in " ".join(texts(at.markdown))
