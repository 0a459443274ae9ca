"""Shareable links in a real browser: fill each page's form as a person would, open the URL it wrote on another
screen (a fresh browser context) and see the same inputs and the same numbers; a hand-edited bad link warns once,
naming the parameter, and the page keeps working."""

import os
import re
import subprocess
import sys
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Locator, Page, expect

from fakeserver import serve_in_thread
from tests.e2e.helpers import (
    PROBE_MS,
    WARNING,
    assert_no_traceback,
    choose,
    combobox,
    flip,
    fresh_tab,
    metric,
    metric_value,
    metric_values,
    number_field,
    open_expander,
    open_page,
    query,
    scroll_to_top,
    show_tab,
    text_field,
    toggle,
    type_into,
    wait_for_query,
    wait_for_url,
    warnings,
)
from tests.e2e.screens import keep_screenshot
from tests.support import ROOT, running_app

pytestmark = pytest.mark.e2e

H100 = "H100 80GB SXM · 80 GB"


# --- /tco ---------------------------------------------------------------------------------------------------------

TCO_CARDS = [
    "Cost per request",
    "Per million output tokens",
    "Per replica per month",
    "Requests/s per replica",
    "Replicas at peak",
    "GPUs needed",
    "Fleet per month",
    "Effective cost per request",
    "Optimized cost per request",
]


def test_cost_page_form_link_reopens_the_same_scenario(page: Page, app_url: str, browser: Browser) -> None:
    open_page(page, app_url + "/tco", "Cost per request")
    page.get_by_role("radio", name="USD", exact=True).click()
    wait_for_query(page, {"currency": "USD"})
    choose(page, "GPU", H100)  # fills in its catalog price, 1.99 USD
    wait_for_query(page, {"gpu": "h100-80gb-sxm", "price": "1.99"})
    type_into(number_field(page, "GPUs per replica"), 2)
    wait_for_query(page, {"gpus": "2"})
    type_into(number_field(page, "Throughput per replica (output tokens/s)"), 1500, key="Tab")
    wait_for_query(page, {"tps": "1500"})
    type_into(number_field(page, "Traffic (requests per day)"), 5_000_000)
    wait_for_query(page, {"traffic": "5000000"})
    open_expander(page, "Optimization levers")
    flip(page, "Speculative decoding")
    wait_for_query(page, {"spec": "true"})

    # The link holds exactly what was changed (defaults are left out).
    assert query(page.url) == {
        "currency": "USD",
        "gpu": "h100-80gb-sxm",
        "price": "1.99",
        "gpus": "2",
        "tps": "1500",
        "traffic": "5000000",
        "spec": "true",
    }
    # The README's arithmetic: 1.99 USD x 2 GPUs over 1500/200 = 7.5 requests/s.
    expect(metric(page, "Cost per request")).to_have_text("0.00015 USD")
    expect(metric(page, "Requests/s per replica")).to_have_text("7.50")
    # ceil(5,000,000 / 86,400 x 2 / (7.5 x 0.7)) = 23 replicas of 2 GPUs
    expect(metric(page, "Replicas at peak")).to_have_text("23")
    expect(metric(page, "GPUs needed")).to_have_text("46")
    seen = metric_values(page, TCO_CARDS)
    link = page.url

    with fresh_tab(browser, "tco_link_fresh") as other:
        open_page(other, link, "Cost per request")
        assert metric_values(other, TCO_CARDS) == seen
        expect(combobox(other, "GPU")).to_have_value(H100)
        expect(other.get_by_role("radio", name="USD", exact=True)).to_be_checked()
        expect(number_field(other, "Price per GPU-hour (in the currency above)")).to_have_value("1.99")
        expect(number_field(other, "GPUs per replica")).to_have_value("2")
        expect(number_field(other, "Throughput per replica (output tokens/s)")).to_have_value("1500")
        expect(number_field(other, "Traffic (requests per day)")).to_have_value("5000000")
        open_expander(other, "Optimization levers")
        expect(toggle(other, "Speculative decoding")).to_be_checked()
        expect(other.locator(WARNING)).to_have_count(0)
        assert query(other.url) == query(link)
        assert_no_traceback(other)


def test_cost_page_bad_link_warns_once_and_keeps_working(page: Page, app_url: str) -> None:
    open_page(page, app_url + "/tco?price=-5&tps=700", "Cost per request")
    shown = warnings(page, 1)
    assert len(shown) == 1 and "price" in shown[0] and "-5" in shown[0], shown
    expect(number_field(page, "Price per GPU-hour (in the currency above)")).to_have_value("15")
    # The good parameter still applies: 15 CNY over 700/200 = 3.5 requests/s.
    assert metric_value(page, "Requests/s per replica") == "3.50"
    assert metric_value(page, "Cost per request") == "0.0012 CNY"
    # Fixing the price by hand: the warning goes, the numbers follow.
    type_into(number_field(page, "Price per GPU-hour (in the currency above)"), 20)
    wait_for_query(page, {"price": "20", "tps": "700"})
    expect(metric(page, "Cost per request")).to_have_text("0.0016 CNY")
    expect(page.locator(WARNING)).to_have_count(0)
    assert_no_traceback(page)


# --- /selector ----------------------------------------------------------------------------------------------------

ADVICE_CARDS = ["Engine", "Quantization", "KV cache", "Max sequences"]
MEMORY_CARDS = ["Weights", "KV bytes per token", "KV budget per GPU", "Layout"]


def _advice(page: Page) -> dict[str, str]:
    """The advice card's figures, then the memory fit tab's."""
    shown = metric_values(page, ADVICE_CARDS)
    show_tab(page, "Memory fit")
    return shown | metric_values(page, MEMORY_CARDS)


def _launch_commands(page: Page) -> list[str]:
    show_tab(page, "Launch command")
    code = page.locator('[data-testid="stCode"]')
    expect(code.first).to_be_visible()
    return [text.strip() for text in code.all_inner_texts()]


def test_advisor_form_link_reopens_the_same_advice(page: Page, app_url: str, browser: Browser) -> None:
    open_page(page, app_url + "/selector", "Engine")
    choose(page, "GPU", H100)
    wait_for_query(page, {"gpu": "h100-80gb-sxm"})
    type_into(number_field(page, "GPUs (one node)"), 2)
    wait_for_query(page, {"gpus": "2"})
    choose(page, "Model", "Llama-3.1-70B-Instruct · 70.6B")
    wait_for_query(page, {"model": "llama3.1-70b"})
    choose(page, "Workload", "RAG (long shared prefix)")
    wait_for_query(page, {"workload": "rag"})
    choose(page, "Priority", "Throughput")
    wait_for_query(page, {"priority": "throughput"})
    type_into(number_field(page, "Concurrency"), 64, key="Tab")
    wait_for_query(page, {"concurrency": "64"})
    flip(page, "Team will build and tune engines")
    wait_for_query(page, {"build_engines": "yes"})

    assert query(page.url) == {
        "gpu": "h100-80gb-sxm",
        "gpus": "2",
        "model": "llama3.1-70b",
        "workload": "rag",
        "priority": "throughput",
        "concurrency": "64",
        "build_engines": "yes",
    }
    advice = _advice(page)
    assert advice["Layout"] == "TP 2"  # the 70B model split over the two GPUs, one copy
    commands = _launch_commands(page)
    assert "Llama-3.1-70B" in commands[0] and re.search(r"--(tp-size|tensor-parallel-size) 2\b", commands[0]), commands
    scroll_to_top(page)  # the launch command tab is open: the README's picture shows the advice and the command
    keep_screenshot(page, "selector.png")
    link = page.url

    with fresh_tab(browser, "selector_link_fresh") as other:
        open_page(other, link, "Engine")
        assert _advice(other) == advice
        assert _launch_commands(other) == commands
        expect(combobox(other, "GPU")).to_have_value(H100)
        expect(number_field(other, "GPUs (one node)")).to_have_value("2")
        expect(combobox(other, "Model")).to_have_value("Llama-3.1-70B-Instruct · 70.6B")
        expect(combobox(other, "Workload")).to_have_value("RAG (long shared prefix)")
        expect(combobox(other, "Priority")).to_have_value("Throughput")
        expect(number_field(other, "Concurrency")).to_have_value("64")
        expect(toggle(other, "Team will build and tune engines")).to_be_checked()
        expect(other.locator(WARNING)).to_have_count(0)
        assert query(other.url) == query(link)
        assert_no_traceback(other)


def test_advisor_bad_link_warns_once_and_keeps_working(page: Page, app_url: str) -> None:
    open_page(page, app_url + "/selector?gpus=99&workload=rag", "Engine")
    shown = warnings(page, 1)
    assert len(shown) == 1 and "gpus" in shown[0] and "99" in shown[0], shown
    expect(number_field(page, "GPUs (one node)")).to_have_value("1")
    expect(combobox(page, "Workload")).to_have_value("RAG (long shared prefix)")
    assert metric_value(page, "Engine")  # the advice is there
    type_into(number_field(page, "GPUs (one node)"), 4)
    wait_for_query(page, {"gpus": "4", "workload": "rag"})
    show_tab(page, "Memory fit")
    expect(metric(page, "Layout")).to_have_text(re.compile(r"^TP 4$|× [24] replicas"))  # the four GPUs are used
    expect(page.locator(WARNING)).to_have_count(0)
    assert_no_traceback(page)


# --- /probe (the form only; nothing is sent) -------------------------------------------------------------------------

KEY = "sk-link-SECRET-7731"


def test_probe_form_link_reopens_the_same_form_without_the_key(page: Page, app_url: str, browser: Browser) -> None:
    open_page(page, app_url + "/probe", "Start probe")
    type_into(text_field(page, "Endpoint URL"), "http://127.0.0.1:9/v1")
    wait_for_query(page, {"url": "http://127.0.0.1:9/v1"})
    type_into(text_field(page, "API key"), KEY)
    type_into(text_field(page, "Model"), "Qwen2.5-7B-Instruct")
    wait_for_query(page, {"model": "Qwen2.5-7B-Instruct"})
    choose(page, "API", "Completions")
    wait_for_query(page, {"api": "completions"})
    choose(page, "Workload", "Synthetic prompts of a set length")
    wait_for_query(page, {"workload": "synthetic"})
    type_into(number_field(page, "Prompt length (tokens)"), 256)
    wait_for_query(page, {"input_tokens": "256"})
    type_into(text_field(page, "Concurrency levels"), "1,4,16")
    wait_for_query(page, {"levels": "1,4,16"})
    type_into(number_field(page, "Requests per level"), 16, key="Tab")
    wait_for_query(page, {"requests": "16"})
    open_expander(page, "SLO targets")
    type_into(number_field(page, "TTFT p99 target (ms)"), 800)
    wait_for_query(page, {"ttft_p99": "800"})
    open_expander(page, "Load and generation")
    type_into(text_field(page, "Run label"), "nightly <b>A800</b>")
    wait_for_query(page, {"label": "nightly <b>A800</b>"})
    flip(page, "Ignore EOS (always generate max tokens)")
    wait_for_query(page, {"ignore_eos": "true"})

    assert query(page.url) == {
        "url": "http://127.0.0.1:9/v1",
        "model": "Qwen2.5-7B-Instruct",
        "api": "completions",
        "workload": "synthetic",
        "input_tokens": "256",
        "levels": "1,4,16",
        "requests": "16",
        "ttft_p99": "800",
        "label": "nightly <b>A800</b>",
        "ignore_eos": "true",
    }
    assert KEY not in page.url
    link = page.url

    with fresh_tab(browser, "probe_link_fresh") as other:
        open_page(other, link, "Start probe")
        expect(text_field(other, "Endpoint URL")).to_have_value("http://127.0.0.1:9/v1")
        expect(text_field(other, "API key")).to_have_value("")  # the key stays on the screen it was typed on
        expect(text_field(other, "Model")).to_have_value("Qwen2.5-7B-Instruct")
        expect(combobox(other, "API")).to_have_value("Completions")
        expect(combobox(other, "Workload")).to_have_value("Synthetic prompts of a set length")
        expect(number_field(other, "Prompt length (tokens)")).to_have_value("256")
        expect(text_field(other, "Concurrency levels")).to_have_value("1,4,16")
        expect(number_field(other, "Requests per level")).to_have_value("16")
        open_expander(other, "SLO targets")
        expect(number_field(other, "TTFT p99 target (ms)")).to_have_value("800")
        open_expander(other, "Load and generation")
        expect(text_field(other, "Run label")).to_have_value("nightly <b>A800</b>")
        expect(toggle(other, "Ignore EOS (always generate max tokens)")).to_be_checked()
        expect(other.get_by_role("button", name="Start probe")).to_be_enabled()
        expect(other.locator(WARNING)).to_have_count(0)
        assert query(other.url) == query(link)
        assert_no_traceback(other)


def test_probe_bad_link_warns_once_and_keeps_working(page: Page, app_url: str) -> None:
    open_page(page, app_url + "/probe?model=m&levels=1,1,4&requests=8", "Start probe")
    shown = warnings(page, 1)
    assert len(shown) == 1 and "levels" in shown[0] and "1,1,4" in shown[0], shown
    expect(text_field(page, "Concurrency levels")).to_have_value("1,2,4,8,16")
    expect(number_field(page, "Requests per level")).to_have_value("8")
    expect(page.get_by_role("button", name="Start probe")).to_be_enabled()
    type_into(text_field(page, "Concurrency levels"), "1,4")
    wait_for_query(page, {"levels": "1,4", "model": "m", "requests": "8"})
    expect(page.locator(WARNING)).to_have_count(0)
    assert_no_traceback(page)


# --- /runs (filters and the runs opened) ---------------------------------------------------------------------------

SEEDED = (  # label, endpoint (first or second fake server), model
    ("alpha", 0, "fake:tokens=8"),
    ("beta", 0, "fake:tokens=8"),
    ("gamma", 0, "fake:tokens=12"),
    ("delta", 1, "fake:tokens=8"),
)


@pytest.fixture(scope="module")
def runs_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """An app whose database holds four runs stored by the command line against two local fake servers.

    Yields the app's base URL and the endpoint of the first server (three of the four runs)."""
    folder = tmp_path_factory.mktemp("runs_links")
    database_url = f"sqlite:///{folder / 'runs.db'}"
    env = {**os.environ, "DATABASE_URL": database_url, "PYTHONPATH": str(ROOT)}
    with serve_in_thread() as first, serve_in_thread() as second:
        servers = (first, second)
        # The four command-line runs and the app start together on the new database (each migrates under a lock).
        cli = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "probes",
                    "--base-url",
                    servers[server].base_url,
                    "--model",
                    model,
                    "--label",
                    label,
                    "--concurrency",
                    "1,2",
                    "--requests",
                    "4",
                    "--no-metrics",
                    "--quiet",
                ],
                cwd=ROOT,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
            for label, server, model in SEEDED
        ]
        with running_app(database_url, log_path=folder / "app.log") as base:
            for proc in cli:
                _, err = proc.communicate(timeout=PROBE_MS / 1000)
                assert proc.returncode == 0, err
            yield base, first.base_url


def _listed_runs(page: Page) -> Locator:
    """The rows of the runs list (its first tab: the newest runs as a table, the page's first), header excluded."""
    return page.locator('[data-testid="stMarkdownContainer"] table').first.locator("tbody tr")


def _open_run(page: Page, label: str, opened: int) -> None:
    """Pick a run in "Open runs"; wait until the link holds `opened` stored runs' ids and that run is over."""
    choose(page, "Open runs", re.compile(rf"^{label} · "))
    page.keyboard.press("Escape")  # a multiselect stays open for more picks; close it as a person would

    def holds(url: str) -> bool:
        ids = [r for r in query(url).get("runs", "").split(",") if re.fullmatch(r"[0-9a-f]{32}", r)]
        return len(ids) == opened

    wait_for_url(page, holds)


def _run_figures(page: Page, label: str) -> dict[str, str]:
    """Open a compared run's expander and read its headline figures."""
    box = open_expander(page, label)
    return metric_values(box, ["Max concurrency in SLO", "Output tokens/s", "TTFT p50", "TPOT p50"])


def test_runs_filters_and_opened_runs_reopen_from_the_link(
    page: Page, browser: Browser, runs_app: tuple[str, str]
) -> None:
    base, endpoint = runs_app
    open_page(page, base + "/runs", "Open runs")
    expect(_listed_runs(page)).to_have_count(4)
    expect(_listed_runs(page).filter(has_text="completed")).to_have_count(4)  # stored by the CLI, every one
    choose(page, "Endpoint", endpoint)
    wait_for_query(page, {"endpoint": endpoint})
    expect(_listed_runs(page)).to_have_count(3)
    choose(page, "Model", "fake:tokens=8")
    wait_for_query(page, {"endpoint": endpoint, "model": "fake:tokens=8"})
    expect(_listed_runs(page)).to_have_count(2)
    _open_run(page, "alpha", opened=1)
    _open_run(page, "beta", opened=2)
    wait_for_query(page, {"endpoint": endpoint, "model": "fake:tokens=8"})
    expect(page.get_by_role("heading", name="Comparing 2 runs")).to_be_visible()
    figures = {label: _run_figures(page, label) for label in ("alpha", "beta")}
    assert figures["alpha"]["Max concurrency in SLO"] == "2"  # the fake server answers well within the SLO
    link = page.url
    assert set(query(link)) == {"endpoint", "model", "runs"}

    with fresh_tab(browser, "runs_link_fresh") as other:
        open_page(other, link, "Comparing 2 runs")
        expect(combobox(other, "Endpoint")).to_have_value(endpoint)
        expect(combobox(other, "Model")).to_have_value("fake:tokens=8")
        expect(_listed_runs(other)).to_have_count(2)
        chips = other.locator('[data-testid="stMultiSelect"]').get_by_text(re.compile(r"^(alpha|beta) · "))
        expect(chips).to_have_count(2)
        assert {label: _run_figures(other, label) for label in ("alpha", "beta")} == figures
        expect(other.locator(WARNING)).to_have_count(0)
        assert query(other.url) == query(link)
        assert_no_traceback(other)


def test_runs_bad_link_warns_once_and_keeps_working(page: Page, runs_app: tuple[str, str]) -> None:
    base, _ = runs_app
    open_page(page, f"{base}/runs?runs=not-a-run&model=fake:tokens=12", "Open runs")
    shown = warnings(page, 1)
    assert len(shown) == 1 and "runs" in shown[0] and "not-a-run" in shown[0], shown
    expect(_listed_runs(page)).to_have_count(1)  # the model filter still applies: gamma only
    _open_run(page, "gamma", opened=1)
    expect(metric(page, "Max concurrency in SLO")).to_have_text("2")
    expect(page.locator(WARNING)).to_have_count(0)
    assert_no_traceback(page)
