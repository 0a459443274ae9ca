"""Open a page of the app under AppTest with query parameters."""

import re
import time

import pandas as pd
from streamlit.testing.v1 import AppTest

from tests.support import ROOT
from ui.first_paint import painted_key

PAGES = ("home", "handbook", "tco", "selector", "compare", "probe", "runs")


def open_page(
    page: str, params: dict[str, str] | None = None, timeout_s: float = 30, *, painted: bool = True
) -> AppTest:
    """Run app.py on one page. AppTest has no browser to report the headline's first paint (ui/first_paint.py), so
    by default the session starts as if it had (the whole page); painted=False gives the first run a link gets."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=timeout_s)
    if params:
        at.query_params.update(params)
    if painted:
        for name in PAGES:
            at.session_state[painted_key(name)] = True
    at.switch_page(f"views/{page}.py")
    return at.run()


def url_params(at: AppTest) -> dict[str, str]:
    """The page's query parameters as the address bar shows them (one value each)."""
    params = at.query_params
    return {k: params[k][0] if isinstance(params[k], list) else params[k] for k in params}


def metric(at: AppTest, label: str) -> str:
    values = [m.value for m in at.metric if m.label == label]
    assert values, f"no metric {label!r}; have {[m.label for m in at.metric]}"
    return values[0]


def texts(elements: object) -> list[str]:
    return [str(e.value) for e in elements]


def finish_probe(at: AppTest, timeout_s: float = 30.0) -> AppTest:
    """Rerun as the probe page's fragment does, until the worker is done and the page shows the result."""
    deadline = time.monotonic() + timeout_s
    while "_probe.run" in at.session_state:
        assert time.monotonic() < deadline, "the probe did not finish in time"
        time.sleep(0.1)
        at.run()
    return at


_CJK = re.compile(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]")
_CODE = re.compile(
    r"`[^`]*`|https?://\S+|\S+\.(py|toml|csv|json|jsonl|md)\b|--[\w-]+|\{[^}]*\}|:material/\w+:|\]\([^)]*\)"
)
_ENGLISH_WORD = re.compile(r"\b[A-Za-z][a-z]{2,}\b")  # a lower-case English word (names and acronyms are kept)
KEPT_WORDS = frozenset(  # proper names and terms the handbook keeps in English in Chinese text
    {
        "vLLM",
        "SGLang",
        "TensorRT",
        "LMDeploy",
        "Ollama",
        "Hugging",
        "Face",
        "Hub",
        "Prometheus",
        "Grafana",
        "Marlin",
        "EAGLE",
        "Llama",
        "Qwen",
        "DeepSeek",
        "Kimi",
        "Mistral",
        "Mixtral",
        "Gemma",
        "GLM",
        "InternLM",
        "Azure",
        "Mooncake",
        "Splitwise",
        "Streamlit",
        "Chromium",
        "PagedAttention",
        "RadixAttention",
        "Python",
        "OpenAI",
        "DeepInfra",  # hosted-API providers (catalog/data/api_prices.csv)
        "Together",
        "Fireworks",
        "Groq",
        "LiteLLM",
        "Apache",
        "Ray",  # the cluster engine a probe spreads over (probes/ray_driver.py)
    }
)


def _element_texts(at: AppTest) -> list[str]:
    found: list[str] = []
    for kind in ("title", "header", "subheader", "markdown", "caption", "info", "warning", "error", "success"):
        found += [str(e.value) for e in at.get(kind)]
    for kind in ("button", "selectbox", "number_input", "text_input", "text_area", "toggle", "checkbox", "radio"):
        found += [str(getattr(e, "label", "") or "") for e in at.get(kind)]
    found += [str(m.label) for m in at.metric]
    found += [str(getattr(t, "label", "") or "") for t in at.get("tab")]
    found += [str(e.label or "") for e in at.expander]
    return [t for t in found if t.strip()]


def english_leftovers(at: AppTest) -> list[str]:
    """Texts of a page opened in Chinese that read as English sentences (two or more English words, no Chinese).

    Code, file names, flags, URLs, placeholders and the names in KEPT_WORDS are not counted.
    """
    leftovers = []
    for text in _element_texts(at):
        plain = _CODE.sub(" ", text)
        if _CJK.search(plain):
            continue
        words = [w for w in _ENGLISH_WORD.findall(plain) if w not in KEPT_WORDS]
        if len(words) >= 2:
            leftovers.append(text)
    return leftovers


def open_tab(at: AppTest, key: str, label: str) -> AppTest:
    """Open a lazy tab (st.tabs with on_change="rerun": only the open tab's content runs) and rerun the page."""
    at.session_state[key] = label
    return at.run()


def runs_grid(at: AppTest) -> "pd.DataFrame":
    """On /runs, open the list's grid tab (the newest runs show as text first) and return its table."""
    label = next(
        t.label for t in at.tabs if t.label in ("Every run: sort, search, download", "全部压测：排序、搜索、下载")
    )
    return open_tab(at, "_runs.list_tab", label).dataframe[0].value


def newest_list(at: AppTest) -> str:
    """On /runs, the list's first tab: the newest runs as a Markdown table."""
    return next(m.value for m in at.markdown if m.value.startswith("| "))


def open_result_tab(at: AppTest, label: str) -> AppTest:
    """On /probe, open a tab of the finished run's result (lazy tabs: only the open one runs)."""
    return open_tab(at, f"probe.result.{at.session_state['_probe.last_run_id']}.tab", label)
