"""Every page in Chinese, as a new user opens it: no English sentence or internal key, and Chinese drawn in a CJK font.

The pages are opened with representative inputs (a model that does not fit, an unpriced China-market GPU, a ranking
with its bands) and every lazy tab is opened. What the browser shows (visible text, code left out) may hold English
words only from the allow-list: catalog names, units, acronyms and the terms the Chinese handbook keeps in English.
"""

import re
from collections.abc import Iterator
from functools import cache

import pytest
from playwright.sync_api import Page, expect

from catalog import load_engines, load_gpus, load_models, load_quant_methods
from i18n import translate
from tests.e2e.helpers import assert_no_traceback, open_page, show_tab
from tests.pages.apptest import KEPT_WORDS
from tests.support import ROOT, running_app

pytestmark = pytest.mark.e2e

# Terms of the trade that Chinese engineering text keeps in English, as the handbook (catalog/data/handbook.zh.txt)
# and its readers write them; a word not here, not a name and not an acronym is a leftover.
TERMS = frozenset(
    {
        *("token", "tokens", "prompt", "prompts", "prefill", "decode", "batch", "batching", "batched", "cache"),
        *("draft", "forward", "step", "sequence", "sequences", "block", "checkpoint", "kernel", "serving", "server"),
        *("metrics", "metric", "tok", "req", "auto", "chat", "completions", "owner", "base", "key", "temperature"),
        *("tokens", "max", "stream", "expert", "experts", "speculative", "decoding", "offload", "paged", "static"),
        *("continuous", "prefix", "caching", "chunked", "attention", "goodput", "spot", "latency", "throughput"),
        *("microscaling", "bitsandbytes", "quantization", "compressed", "tensors", "gamma", "ngram", "gram"),
        *("json", "jsonl", "csv", "python", "host", "port", "path", "http", "https", "flex", "tensor", "lora"),
        *("agent", "sessions", "trace", "replay", "warmup", "none", "datasheet", "release", "eos", "seed"),
        *("synthetic", "shared", "file", "code", "inflight", "blackwell", "hopper", "ampere", "lovelace", "ada"),
        *("english", "language"),  # the language switch: 'Language / 语言', and the other language by its name
        *("request", "system", "value"),
        *("ultra", "geforce", "pro", "silicon", "instruct", "chat", "hf", "it", "per", "host", "epyc", "genoa"),
    }
)
# The pages, with the inputs a new user would try, the headline that says the page is there, and its lazy tabs.
PAGES = [
    ("/?lang=zh", "LLM serving decisions", ()),
    ("/handbook?lang=zh", None, ()),
    ("/tco?lang=zh&traffic=1000000", "What will it cost?", ("Cost by lever", "Sensitivity", "Cost vs throughput")),
    ("/tco?lang=zh&gpu=h20-96gb", "What will it cost?", ()),  # a China-market GPU priced in yuan by a Chinese cloud
    ("/tco?lang=zh&gpu=h800-80gb-sxm", "What will it cost?", ()),  # a China-market GPU without a public price
    ("/selector?lang=zh", "What should we run?", ("Memory fit", "Launch command", "Engines compared")),
    ("/selector?lang=zh&model=qwen2.5-72b&gpu=rtx-4090-24gb", "What should we run?", ("Memory fit",)),  # no fit
    ("/selector?lang=zh&gpu=h20-96gb", "What should we run?", ()),
    ("/compare?lang=zh&engines=vllm&counts=1", "Which option is cheapest?", ("Cost vs latency", "Option details")),
    ("/compare?lang=zh&engines=vllm&counts=1&market=cn", "Which option is cheapest?", ()),  # names the GPUs dropped
    ("/probe?lang=zh", "How fast is it really?", ()),
    ("/runs?lang=zh", "Probe runs", ()),
]
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[-_./:+'][A-Za-z0-9]+)*")
_CITATION = re.compile(r"来源：.*")
_INTERNAL_KEY = re.compile(r"[\w\u4e00-\u9fff]+\|[\w-]+")  # a band's key, 'new-architecture|vllm'
_DOUBLED = re.compile(r"([^\s：（()）]{2,})[)）]?：\1：")  # a label said twice, '依据（规格参数）：规格参数'.
# Every closed expander of the page opened to read it, and closed again (marked, so that the tabs work as before).
_OPEN_EXPANDERS = """() => document.querySelectorAll('[data-testid="stMain"] details:not([open])').forEach(d => {
    d.open = true; d.dataset.openedToRead = "1"; })"""
_CLOSE_EXPANDERS = """() => document.querySelectorAll('details[data-opened-to-read]').forEach(d => {
    d.open = false; delete d.dataset.openedToRead; })"""
_VISIBLE_TEXT = """() => {
    const out = [];
    const roots = document.querySelectorAll('[data-testid="stMain"], [data-testid="stSidebar"]');
    for (const root of roots) {
        const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
        for (let node = walker.nextNode(); node; node = walker.nextNode()) {
            const el = node.parentElement;
            if (!el || el.closest('code, pre, [data-testid="stCode"], [data-testid="stIconMaterial"], svg')) continue;
            // Streamlit's own upload button ('Upload'): drawn by the framework, which offers no way to translate it
            if (el.closest('[data-testid="stFileUploaderDropzone"] button')) continue;
            if (!el.checkVisibility({visibilityProperty: true, opacityProperty: true})) continue;
            if (getComputedStyle(el).fontFamily.includes('Material')) continue;  // an icon's name, drawn as its glyph
            if (node.textContent.trim()) out.push(node.textContent.trim());
        }
    }
    return out;
}"""


@pytest.fixture(scope="module")
def zh_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The app on a database of its own: other tests' runs and scenarios carry names their authors gave them."""
    with running_app(f"sqlite:///{tmp_path_factory.mktemp('zh') / 'zh.db'}") as base:
        yield base


@cache
def _names() -> frozenset[str]:
    """Every word of a catalog name (GPUs, models, engines, quantizations), as written: 'LMDeploy', not 'lmdeploy'."""
    names = [g.name for g in load_gpus()] + [m.name for m in load_models()]
    names += [e.name for e in load_engines()] + [q.name for q in load_quant_methods()]
    return frozenset(w for name in names for w in _WORD.findall(name))


@cache
def _ids() -> frozenset[str]:
    """The catalog's ids of engines, quantizations and GPU kinds: a page names them by their names instead.

    Ids with a digit ('fp8', 'bf16') are also the engines' KV cache dtypes and read as units: they are not counted.
    """
    ids = [e.id for e in load_engines()] + [q.id for q in load_quant_methods()] + ["apple", "cpu"]
    return frozenset(i for i in ids if not any(ch.isdigit() for ch in i))


@cache
def _handbook_words() -> frozenset[str]:
    """The words the Chinese handbook itself writes in English (the handbook page quotes it as it is)."""
    text = (ROOT / "catalog" / "data" / "handbook.zh.txt").read_text()
    return frozenset(w.lower() for w in _WORD.findall(text))


def english_words(texts: list[str], *, quoting_handbook: bool = False) -> list[str]:
    """The texts that hold an English word outside the allow-list, each with the words that are not allowed.

    A citation after '来源：' (Source:) is left as its source writes it: it quotes English documents by their words.
    """
    names = KEPT_WORDS | _names()
    terms = TERMS | (_handbook_words() if quoting_handbook else frozenset())
    found = []
    for text in texts:
        plain = _CITATION.sub("", text)
        bad = [
            word
            for word in _WORD.findall(plain)
            if not word.isupper()  # an acronym: TTFT, TPOT, KV, GPU, CNY, USD, SLO
            and not any(ch.isdigit() for ch in word)  # a unit or a value: 24GB, p50, 4bit, 0.19.0
            and not re.search(r"[-_./:]", word)  # an id, a flag, a file or a URL: a800-80gb-sxm, max-num-seqs
            and word not in names
            and word.lower() not in terms
            and not (len(word) <= 2)  # units: ms, s, GB, h, x
        ]
        bad += [f"internal key {key}" for key in _INTERNAL_KEY.findall(plain)]
        bad += [f"doubled {label}" for label in _DOUBLED.findall(plain)]
        bad += [f"catalog id {word}" for word in _WORD.findall(plain) if word in _ids() and word.lower() not in terms]
        if bad:
            found.append(f"{text!r}: {bad}")
    return found


def _shown(page: Page) -> list[str]:
    """The visible text of the page, every expander opened (their notes, reasons and sources are part of it)."""
    page.evaluate(_OPEN_EXPANDERS)
    texts: list[str] = page.evaluate(_VISIBLE_TEXT)
    page.evaluate(_CLOSE_EXPANDERS)
    return texts


def _open(page: Page, url: str, headline: str | None) -> None:
    if headline is None:
        open_page(page, url, "Bonus 3")
    else:
        heading = page.get_by_role("heading", name=translate("zh", headline)).first
        page.goto(url)
        expect(heading).to_be_visible()
        assert_no_traceback(page)  # waits until the page has finished running (ui/first_paint.py's beacon gone)


@pytest.mark.parametrize(("path", "headline", "tabs"), PAGES, ids=[re.sub(r"\W+", "-", p[0]).strip("-") for p in PAGES])
def test_a_chinese_page_shows_no_english_outside_the_allow_list(
    page: Page, zh_app: str, path: str, headline: str | None, tabs: tuple[str, ...]
) -> None:
    _open(page, zh_app + path, headline)
    seen = _shown(page)
    for tab in tabs:
        show_tab(page, translate("zh", tab))
        seen += _shown(page)
    leftovers = english_words(sorted(set(seen)), quoting_handbook=headline is None)
    assert not leftovers, "English on a Chinese page:\n" + "\n".join(leftovers)


def test_the_chinese_headline_draws_in_a_cjk_font(page: Page, zh_app: str) -> None:
    """The headline's characters come from a font that has them (fonts-noto-cjk), not from boxes of a Latin font."""
    _open(page, zh_app + "/tco?lang=zh", "What will it cost?")
    session = page.context.new_cdp_session(page)
    session.send("DOM.enable")
    session.send("CSS.enable")
    root = session.send("DOM.getDocument", {"depth": -1})["root"]["nodeId"]
    node = session.send("DOM.querySelector", {"nodeId": root, "selector": '[data-testid="stHeading"] h1 span'})
    assert node["nodeId"], "no headline"
    fonts = session.send("CSS.getPlatformFontsForNode", {"nodeId": node["nodeId"]})["fonts"]
    drawn = {f["familyName"]: f["glyphCount"] for f in fonts}
    cjk = {family: count for family, count in drawn.items() if "CJK" in family}
    assert sum(cjk.values()) >= len("要花多少钱"), f"the headline's Chinese is not drawn by a CJK font: {drawn}"
