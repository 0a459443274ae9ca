"""The advisor in Chinese: rules.toml's reasons carry both languages, the /selector page reads in Chinese with lang=zh
and as before with lang=en, and the CLI's JSON stays English."""

import json
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from catalog import load_engines
from catalog.engines import WORDED_COLUMNS
from i18n import translate
from selector import AdviceRequest, advise, names_worded_by
from selector.rules import Bilingual, load_rules
from tests.pages.apptest import english_leftovers, metric, open_page, texts

CONFIGS = sorted((Path(__file__).parents[1] / "selector" / "configs").glob("*.json"))
CJK = re.compile(r"[\u4e00-\u9fff]")
PLACEHOLDER = re.compile(r"\{(\w+)")


@pytest.fixture(autouse=True)
def _fresh_db(database_url: str) -> None:
    from ui.resources import get_engine

    get_engine.clear()


def _twins(item: Bilingual) -> list[tuple[str, str, str]]:
    """(field, English, Chinese) for every worded field of a rule, statement or the speculation notes."""
    fields = type(item).model_fields
    return [(name, getattr(item, name), getattr(item, f"{name}_zh")) for name in fields if f"{name}_zh" in fields]


def _name(item: Bilingual) -> str:
    return str(getattr(item, "id", type(item).__name__))


def test_every_rule_in_rules_toml_has_its_chinese_text() -> None:
    items = load_rules().all_bilingual()
    assert len(items) > 50  # every rule, statement and gate, and the speculation notes
    missing = [f"{_name(item)}.{field}" for item in items for field in item.missing_twins()]
    assert missing == []
    for item in items:
        for field, english, chinese in _twins(item):
            if not english:
                continue
            where = f"{_name(item)}.{field}_zh"
            assert CJK.search(chinese) or chinese != english, where  # 'EAGLE（{repo}）' has no Chinese word
            assert set(PLACEHOLDER.findall(chinese)) == set(PLACEHOLDER.findall(english)), where


def test_every_engines_note_on_the_handbook_has_its_chinese_text() -> None:
    for engine in load_engines():
        assert bool(engine.today_vs_handbook) == bool(engine.today_vs_handbook_zh), engine.id
        assert not engine.today_vs_handbook_zh or CJK.search(engine.today_vs_handbook_zh), engine.id


def test_every_worded_engine_fact_has_its_chinese_twin_and_english_stays_the_default() -> None:
    """status, hardware, formats, server, prefix caching, chunked prefill, speculation: each has a `_zh` column."""
    for engine in load_engines():
        for column in WORDED_COLUMNS:
            english, chinese = getattr(engine, column), getattr(engine, f"{column}_zh")
            where = f"{engine.id}.{column}_zh"
            assert bool(english) == bool(chinese), where
            assert not chinese or CJK.search(chinese) or "、" in chinese, where  # a list of names: 'NVIDIA、AMD ROCm'
            assert engine.text(column) == engine.text(column, "en") == english
            assert engine.text(column, "zh") == (chinese or english)


@pytest.mark.parametrize(
    "request_values",
    [
        {},
        {"gpu": "h100-80gb-sxm", "workload": "rag", "concurrency": 32},
        {"gpu": "rtx-4090", "gpus": 8, "model": "llama3.1-405b"},
        {"gpu": "h100-80gb-sxm", "gpus": 8, "model": "deepseek-v3"},
        {"gpu": "m2-ultra", "deploy": "apple", "engine": "tensorrt-llm"},
        {"workload": "code", "ecosystem": "chinese"},
    ],
)
def test_the_advice_in_chinese_takes_every_reason_from_the_chinese_twins(request_values: dict[str, object]) -> None:
    request = AdviceRequest.model_validate(request_values)
    english, chinese = advise(request), advise(request, language="zh")
    assert [d.rule_id for d in chinese.reasons] == [d.rule_id for d in english.reasons]
    assert (chinese.engine, chinese.quantization, chinese.launch.shell) == (
        english.engine,
        english.quantization,
        english.launch.shell,
    )
    for decision in chinese.reasons:
        assert CJK.search(decision.reason), (decision.rule_id, decision.reason)
    for text in (*chinese.warnings, *chinese.today_vs_handbook, *chinese.memory.suggestions, *chinese.launch.notes):
        assert CJK.search(text), text
    assert CJK.search(chinese.summary(lambda m: translate("zh", m)))


def test_the_json_and_the_cli_stay_english() -> None:
    request = AdviceRequest.model_validate({"gpu": "h100-80gb-sxm", "workload": "rag", "concurrency": 32})
    dumped = json.dumps(advise(request).to_json_dict(), ensure_ascii=False)
    assert not CJK.search(dumped)
    engine = next(d for d in advise(request).reasons if d.topic == "engine")
    assert (engine.rule_id, engine.reason) == ("engine.prefix_reuse", load_rules().get("engine.prefix_reuse").reason)
    assert "reason_zh" not in dumped


def _open_tab(at: AppTest, label: str) -> AppTest:
    """Open one of the advice's tabs and rerun (needed once the tabs are lazy: only the open one runs)."""
    at.session_state["_selector.tab"] = label
    return at.run()


def _leftovers(at: AppTest) -> list[str]:
    """english_leftovers, less the texts that are only an engine's name (proper nouns: 'llama.cpp (llama-server)')."""
    names = {e.name for e in load_engines()}
    return [t for t in english_leftovers(at) if t.strip("* ") not in names]


# English that must not reach the page in Chinese, even inside a Chinese sentence (english_leftovers only flags texts
# with no Chinese at all): the engine catalog's worded facts, the skipped layouts' objections, the unknown names.
ENGLISH_ONLY = (
    "GPUs per copy",
    "do not divide by",
    "needs whole groups of",
    "nor replicate evenly",
    "do not spread evenly",
    "is not in the catalog",
    "is ambiguous",
    "did you mean",
    "allowed:",
)


def _shown(at: AppTest) -> list[str]:
    """Every text the page shows: elements, expander titles and the cells of its tables."""
    found = [t for kind in ("markdown", "caption", "info", "warning", "error", "success") for t in texts(at.get(kind))]
    found += [str(e.label) for e in at.expander]
    found += [str(cell) for table in at.dataframe for column in table.value.columns for cell in table.value[column]]
    return found


def _english_facts(at: AppTest) -> list[str]:
    """Texts of the page in Chinese that carry an engine fact's English wording or the advisor's English phrases."""
    facts = {
        getattr(e, column)
        for e in load_engines()
        for column in WORDED_COLUMNS
        if getattr(e, f"{column}_zh") and getattr(e, column) != getattr(e, f"{column}_zh")
    }
    facts = {f for f in facts if len(re.findall(r"[a-z]{3,}", f)) >= 2}  # 'active' alone is also a word in a name
    twins = sorted({getattr(e, f"{c}_zh") for e in load_engines() for c in WORDED_COLUMNS} - {""}, key=len)
    found = []
    for text in _shown(at):
        rest = text
        for twin in reversed(twins):  # the Chinese wording may keep a term: '草稿模型（draft model）'
            rest = rest.replace(twin, " ")
        if any(f in rest for f in facts) or any(p in rest for p in ENGLISH_ONLY):
            found.append(text)
    return found


LINKS = [
    {},
    {"gpu": "H100", "workload": "rag", "priority": "latency", "concurrency": "32"},
    {"gpu": "H1000", "priority": "throughput"},
    {"gpu": "M2 Ultra", "deploy": "apple", "engine": "tensorrt-llm"},
    {"gpu": "RTX 4090", "gpus": "8", "model": "llama3.1-405b"},
    {"gpu": "H100", "gpus": "2", "model": "llama3.1-70b", "engine": "tgi"},
    {"gpu": "h100", "gpus": "8", "model": "deepseek-v3"},
    {"workload": "code", "ecosystem": "chinese"},
    {"gpu": "m4-max", "deploy": "apple", "concurrency": "64", "engine": "ollama"},
    {"gpu": "a800", "gpus": "2", "model": "llama3.1-70b", "context": "32768", "concurrency": "256"},
    {"gpu": "h100", "ecosystem": "hf", "build_engines": "yes", "workload": "agent", "concurrency": "8"},
    {"engine": "exlama"},
    {"model": "custom", "gpu": "h200", "gpus": "8"},
    {"gpu": "h100", "gpus": "8", "model": "qwen2.5-7b"},
    {"gpu": "910B", "engine": "sglang"},
    {"gpu": "910B", "model": "qwen2.5-7b", "concurrency": "200"},
]


@pytest.mark.parametrize(
    "link", LINKS, ids=[",".join(f"{k}={v}" for k, v in link.items()) or "defaults" for link in LINKS]
)
def test_the_page_reads_in_chinese(link: dict[str, str]) -> None:
    at = open_page("selector", {"lang": "zh", **link})
    assert not at.exception
    assert not at.error, texts(at.error)
    assert _leftovers(at) == []
    assert _english_facts(at) == []


def test_the_default_page_in_chinese_shows_the_rules_chinese_reasons_and_the_same_command() -> None:
    at = open_page("selector", {"lang": "zh"})
    assert at.title[0].value == translate("zh", "What should we run?") != "What should we run?"
    assert metric(at, translate("zh", "Engine")) == "vLLM"  # another area's catalog may word "Engine" first
    assert metric(at, translate("zh", "Quantization")) == "AWQ 4-bit"
    assert [t.label for t in at.tabs] == ["理由", "显存估算", "启动命令", "引擎对比", "分离部署"]
    shown = " ".join(texts(at.markdown))
    assert "国际生态下的通用推理服务默认用 vLLM" in shown  # engine.default's reason_zh
    sentence = next(t for t in texts(at.markdown) if "AWQ" in t and "A800" in t)  # the advice in one sentence
    assert translate("zh", "the model's own (auto)") in sentence and " auto KV" not in sentence  # worded, not the id
    at = _open_tab(at, "启动命令")  # the tabs are lazy: only the open one runs
    assert any("vllm serve Qwen/Qwen2.5-7B-Instruct-AWQ" in c.value for c in at.code)  # the command is the same
    at = _open_tab(at, "引擎对比")
    assert "引擎" in at.dataframe[0].value.columns


def test_a_link_with_bad_values_warns_in_chinese() -> None:
    bad = {"gpu": "Z9000", "model": "gpt-17", "workload": "poetry", "context": "-5", "engine": "x", "quant": "y"}
    at = open_page("selector", {"lang": "zh", **bad})
    assert not at.exception and not at.error
    assert at.warning
    assert _leftovers(at) == []
    assert _english_facts(at) == []
    warnings = texts(at.warning)
    assert any("GPU“Z9000”不在目录中；可选值：a100-40gb-sxm" in w for w in warnings), warnings
    assert any("模型“gpt-17”不在目录中；可选值：" in w for w in warnings), warnings
    assert any("引擎“x”不在目录中；可选值：auto, vllm" in w for w in warnings), warnings
    assert any("量化“y”不在目录中；可选值：auto, bf16" in w for w in warnings), warnings


def test_the_same_bad_link_in_english_reads_as_before() -> None:
    bad = {"gpu": "Z9000", "engine": "x", "quant": "y"}
    at = open_page("selector", {"lang": "en", **bad})
    assert not at.exception and not at.error
    warnings = " ".join(texts(at.warning))
    assert "GPU 'Z9000' is not in the catalog; allowed: a100-40gb-sxm" in warnings
    assert "engine 'x' is not in the catalog; allowed: auto, vllm" in warnings
    assert "quantization 'y' is not in the catalog; allowed: auto, bf16" in warnings
    assert not CJK.search(warnings)


def test_unknown_names_are_english_unless_the_page_words_them() -> None:
    """The validators' messages stay English for the CLI and its JSON; the page words them with names_worded_by(_)."""
    bad = {"gpu": "Z9000", "model": "llama", "engine": "H1000"}
    with pytest.raises(ValueError) as english:
        AdviceRequest.model_validate(bad)
    assert "GPU 'Z9000' is not in the catalog; allowed: a100-40gb-sxm" in str(english.value)
    assert "model 'llama' is ambiguous; it could be llama3-8b" in str(english.value)
    assert not CJK.search(str(english.value))
    with names_worded_by(lambda m: translate("zh", m)), pytest.raises(ValueError) as chinese:
        AdviceRequest.model_validate({**bad, "engine": "vllm", "quant": "awq8"})
    worded = str(chinese.value)
    assert "GPU“Z9000”不在目录中；可选值：a100-40gb-sxm" in worded
    assert "模型“llama”有歧义，可能是 llama3-8b" in worded
    assert "量化“awq8”不在目录中；你要找的是不是：" in worded, worded
    with pytest.raises(ValueError, match="GPU 'Z9000' is not in the catalog"):  # English again after the block
        AdviceRequest.model_validate({"gpu": "Z9000"})


def test_the_engine_facts_read_in_chinese_in_the_reasons_warnings_and_titles() -> None:
    at = open_page("selector", {"lang": "zh"})
    vllm = next(e for e in load_engines() if e.id == "vllm")
    titles = [str(e.label) for e in at.expander]
    assert f"chunked prefill（分块 prefill）：{vllm.chunked_prefill_zh}" in titles, titles
    shown = " ".join(texts(at.markdown))
    assert vllm.prefix_caching_zh in shown and vllm.chunked_prefill_zh in shown
    pinned = open_page("selector", {"lang": "zh", "gpu": "M2 Ultra", "deploy": "apple", "engine": "tensorrt-llm"})
    assert any("仅 NVIDIA：Ampere、Ada、Hopper、Blackwell" in w for w in texts(pinned.warning))
    tgi = open_page("selector", {"lang": "zh", "gpu": "H100", "gpus": "2", "model": "llama3.1-70b", "engine": "tgi"})
    assert any(w.startswith("Hugging Face TGI 状态：维护模式") for w in texts(tgi.warning)), texts(tgi.warning)
    lmdeploy = open_page("selector", {"lang": "zh", "workload": "code", "ecosystem": "chinese"})
    assert "实验性（PyTorch 后端）：eagle、eagle3、MTP" in " ".join(texts(lmdeploy.markdown))


def test_skipped_layouts_read_in_chinese_on_the_page_and_stay_english_in_the_json() -> None:
    link = {"gpu": "a100", "gpus": "8", "model": "qwen2.5-7b"}
    at = open_page("selector", {"lang": "zh", **link})
    shown = " ".join(texts(at.markdown))
    assert "跳过了引擎加载时会拒绝的布局：每副本 8 张 GPU：28 个注意力头不能被 8 整除；" in shown, shown
    assert "MLP 的 18944 切成 8 份后是 2368" in shown
    request = AdviceRequest.model_validate(link)
    english = advise(request)
    assert english.memory.skipped_splits == (
        "8 GPUs per copy: 28 attention heads do not divide by 8; AWQ 4-bit (W4A16) needs whole groups of 128 per "
        "GPU, and the MLP's 18944 split 8 ways is 2368",
    )
    assert advise(request, language="zh").memory.skipped_splits == english.memory.skipped_splits
    dumped = english.to_json_dict()
    assert "skipped_layouts" not in json.dumps(dumped)
    reason = next(d.reason for d in english.reasons if d.rule_id == "gate.parallel_split")
    assert reason == f"Layouts the engines would refuse at load are skipped: {english.memory.skipped_splits[0]}."
    en_page = open_page("selector", {"lang": "en", **link})
    assert reason in " ".join(texts(en_page.markdown))


def test_the_engines_table_reads_in_chinese_and_in_english_as_before() -> None:
    engines = load_engines()
    at = open_page("selector", {"lang": "zh"})
    table = _open_tab(at, translate("zh", "Engines compared")).dataframe[0].value
    assert _english_facts(at) == []
    columns = {
        "status": "status",
        "hardware": "hardware",
        "quantization": "quant_formats",
        "prefix caching": "prefix_caching",
        "speculative decoding": "speculative_decoding",
        "OpenAI server": "openai_server",
    }
    for header, column in columns.items():
        assert list(table[translate("zh", header)]) == [getattr(e, f"{column}_zh") for e in engines], header
    en = open_page("selector", {"lang": "en"})
    table = _open_tab(en, "Engines compared").dataframe[0].value
    for header, column in columns.items():
        assert list(table[header]) == [getattr(e, column) for e in engines], header


def test_an_impossible_custom_model_is_an_error_in_chinese() -> None:
    at = open_page("selector", {"lang": "zh", "model": "custom", "heads": "30", "kv_heads": "8"})
    assert not at.exception
    error = " ".join(texts(at.error))
    assert "自定义模型" in error and "kv_heads" in error
    assert _leftovers(at) == []


@pytest.mark.parametrize("path", CONFIGS[:3], ids=[p.stem for p in CONFIGS[:3]])
def test_a_pasted_config_reads_in_chinese(path: Path) -> None:
    at = open_page("selector", {"lang": "zh", "model": "custom", "gpu": "h200", "gpus": "8"})
    at.text_area(key="selector.config_text").input(path.read_text()).run()
    assert not at.exception
    assert texts(at.success) and texts(at.success)[0].startswith("已读取")
    assert _leftovers(at) == []
    at.text_area(key="selector.config_text").input("{not json").run()
    error = " ".join(texts(at.error))
    assert "不是有效的 JSON" in error and "保持不变" in error


def test_the_page_in_english_reads_as_before() -> None:
    at = open_page("selector", {"lang": "en"})
    assert not at.exception and not at.error
    assert at.title[0].value == "What should we run?"
    assert metric(at, "Engine") == "vLLM"
    assert [t.label for t in at.tabs] == ["Why", "Memory fit", "Launch command", "Engines compared", "Separate pools"]
    shown = " ".join(texts(at.markdown))
    assert load_rules().get("engine.default").reason in shown
    assert not CJK.search(shown)


def test_the_estimate_panel_in_english_words_the_estimate_as_tco_does() -> None:
    from i18n import identity
    from tco.throughput import estimate_advice
    from ui.names import estimate_label

    at = open_page("selector", {"lang": "en"})
    point = estimate_advice(advise(AdviceRequest())).point
    assert point is not None
    captions = texts(at.caption)
    worded = estimate_label(point, identity)  # /tco's wording: the engine by its name, the held-out group in words
    assert "vLLM" in worded and "vllm" not in worded and "|" not in worded
    assert "(8 in 10 held-out measurements of vLLM on " in worded and "GPUs fell within)" in worded  # reads as English
    assert f"{worded}." in captions
    assert any(f"an {point.short_label}." in c for c in captions)
