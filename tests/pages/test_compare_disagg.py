"""/compare ranks separate prefill and decode pools beside one pool, marked with their xPyD layout, when they pay."""

import pytest

from tests.pages.apptest import open_page

LONG_TIGHT = {
    "model": "qwen3-32b",
    "gpu_names": "H200",
    "engines": "trtllm",
    "counts": "4",
    "in_tokens": "4000",
    "out_tokens": "500",
    "ttft_p50": "300",
    "ttft_p99": "2000",
    "tpot_p50": "10",
}


@pytest.fixture(autouse=True)
def _fresh_db(database_url: str) -> None:
    from ui.resources import get_engine

    get_engine.clear()


def test_compare_marks_a_disaggregated_option_with_its_pools_and_links_its_unit_to_tco() -> None:
    at = open_page("compare", LONG_TIGHT, timeout_s=180)
    assert not at.exception and not at.error
    table = at.dataframe[0].value
    marked = table[table["topology"].str.startswith("disaggregated")]
    assert len(marked) >= 1 and (table["topology"] == "one pool").any()
    row = marked.iloc[0]
    assert "P" in row["topology"] and "D (prefill" in row["topology"] and "(extrapolated)" in row["topology"]
    assert row["basis"] == "extrapolated"
    assert f"gpus={row['GPUs per replica']}&" in row["cost calculator"]


def test_compare_in_chinese_words_the_topology() -> None:
    at = open_page("compare", {**LONG_TIGHT, "lang": "zh"}, timeout_s=180)
    assert not at.exception
    table = at.dataframe[0].value
    assert any(str(t).startswith("分离式") for t in table.iloc[:, :].astype(str).values.ravel())
    named = [h.value for h in at.subheader] + [o for box in at.selectbox for o in box.options]
    with_pools = [t for t in named if "D (prefill" in t]
    assert with_pools and all("分离式" in t and "disaggregated" not in t for t in with_pools)


def test_the_tco_link_of_a_disaggregated_option_carries_its_topology_and_tco_says_so() -> None:
    from urllib.parse import parse_qsl, urlsplit

    at = open_page("compare", LONG_TIGHT, timeout_s=180)
    table = at.dataframe[0].value
    row = table[table["topology"].str.startswith("disaggregated")].iloc[0]
    params = dict(parse_qsl(urlsplit(row["cost calculator"]).query))
    assert params["topology"] == "disagg" and "P" in params["pools"] and params["tps_source"] == "estimate"
    tco = open_page("tco", params, timeout_s=120)
    assert not tco.exception and not tco.error
    notes = [i.value for i in tco.info]
    assert any("separate prefill and decode pools" in n and params["pools"] in n for n in notes)
    assert tco.query_params["topology"] in ("disagg", ["disagg"])
