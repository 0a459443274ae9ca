"""The cost page, the overview and the handbook under AppTest in both languages: the link's `lang` decides, the
handbook's example reads in yuan and 万, bad input is named in Chinese, and every concept note is one click away."""

from tests.pages.apptest import english_leftovers, metric, open_page, texts

HANDBOOK = {"price": "15", "currency": "CNY", "tps": "588", "out_tokens": "200", "hours": "720"}


def test_the_cost_page_in_chinese_reads_the_handbook_example_in_yuan_and_wan() -> None:
    at = open_page("tco", {**HANDBOOK, "traffic": "1000000", "lang": "zh"})
    assert not at.exception and not at.error
    assert metric(at, "每请求成本") == "0.0014 元"
    assert metric(at, "单副本每月") == "1.08 万元"
    assert metric(at, "单副本请求/秒") == "2.94"
    assert any(c.startswith("折合USD（汇率") for c in texts(at.caption))  # the other currency beside the headline
    helps = [m.help for m in at.metric if m.label == "单副本每月"]
    assert helps and "10,800 CNY" in str(helps[0])  # the exact figure, one hover away
    assert english_leftovers(at) == []
    notes = [e.label for e in at.expander]
    assert any(label.startswith("这是什么？") for label in notes)


def test_without_lang_the_cost_page_stays_english() -> None:
    at = open_page("tco", HANDBOOK)
    assert metric(at, "Cost per request") == "0.0014 CNY"
    assert metric(at, "Per replica per month") == "10,800 CNY"


def test_a_bad_value_is_named_in_chinese_with_what_is_allowed() -> None:
    at = open_page("tco", {**HANDBOOK, "gpus": "0", "lang": "zh"})
    warnings = [w.value for w in at.warning]
    named = "URL 参数 `gpus`（每副本 GPU 数）：必须至少为 1"
    assert any(named in w and "改用默认值（1）" in w for w in warnings), warnings
    assert metric(at, "每请求成本") == "0.0014 元"  # the default took its place; nothing else lost


def test_the_overview_explains_every_concept_in_chinese_with_its_handbook_section() -> None:
    at = open_page("home", {"lang": "zh"})
    assert not at.exception and not at.error
    assert english_leftovers(at) == []
    body = " ".join(texts(at.markdown))
    for term in ("TTFT 与 TPOT", "PagedAttention", "Prefix Caching", "Spot GPU", "Goodput"):
        assert term in body, term
    assert body.count("](/handbook?lang=zh#") == 10


def test_the_handbook_page_shows_its_sections() -> None:
    at = open_page("handbook", {"lang": "zh"})
    assert not at.exception and not at.error
    headings = texts(at.subheader)
    assert "5.1 PagedAttention（vLLM 原创）" in headings and any(h.startswith("Q3：") for h in headings)
