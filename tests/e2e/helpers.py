"""What the browser tests do as a person would: fill widgets, wait for the app, read the cards, open a link anew.

Every wait here is for a state (an element, a text, the URL, the app idle, a stored row), never for a time. The time
limits below are the only ones of the browser tests: generous, so that a machine whose two cores are busy with other
work is slow but not red (docs/reliability.md). TEST_TIMEOUT_SCALE (tests/support.py) multiplies them all.
"""

import re
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

from playwright.sync_api import Browser, BrowserContext, Locator, Page, expect

from tests.conftest import ARTIFACTS, _streamlit_base_path_probe
from tests.support import TIMEOUT_SCALE
from ui.first_paint import BEACON_KEY

WAIT_MS = round(60_000 * TIMEOUT_SCALE)  # one wait for the app: a rerun, a page change, a chart, a download
PROBE_MS = round(180_000 * TIMEOUT_SCALE)  # a small probe against the local test server, from Start to its result
POLL_S = 0.1  # how often wait_until looks again (a look, not a wait for time: the deadline is what bounds it)
VIEWPORT = {"width": 1400, "height": 1000}
EXCEPTION = '[data-testid="stException"]'
WARNING = '[data-testid="stAlertContentWarning"]'
MAX_IN_SLO = "Max concurrency in SLO"  # the first card of a probe result
BEACON = f".st-key-{BEACON_KEY}"  # on a page's first run, below its headline until the rest of the page is drawn


def new_context(browser: Browser) -> BrowserContext:
    """A fresh browser context (no cookies, no session) with the tests' window size.

    Every click, fill, navigation and wait in it may take up to WAIT_MS (Playwright's default: 30 s)."""
    context = browser.new_context(viewport=VIEWPORT)
    context.set_default_timeout(WAIT_MS)
    context.set_default_navigation_timeout(WAIT_MS)
    return context


def wait_until(check: Callable[[], bool], what: str, timeout_ms: int = WAIT_MS) -> None:
    """Look again and again until check() holds (a stored row, a count in a chart); fail after timeout_ms."""
    deadline = time.monotonic() + timeout_ms / 1000
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"still not true after {timeout_ms / 1000:.0f} s: {what}")
        time.sleep(POLL_S)


def wait_idle(page: Page) -> None:
    """Wait until the app's script has finished its run (and the connection is up) and the page is whole.

    Only meaningful once the result of the last action is on the page (a text, the URL): right after a click the
    rerun may not have started yet, and the app still reads as idle. A page's first run ends at its headline; the
    run that draws the rest removes the beacon below it (ui/first_paint.py).
    """
    app = page.locator('[data-testid="stApp"]')
    expect(app).to_have_attribute("data-test-connection-state", "CONNECTED")
    expect(page.locator(BEACON)).to_have_count(0)
    expect(app).to_have_attribute("data-test-script-state", "notRunning")


def wait_uploaded(scope: Page | Locator, name: str) -> None:
    """Wait until a file chosen in an uploader has reached the server: its chip names it and shows no spinner.

    The name shows as soon as the file is chosen; a click on the form's submit before the upload is over can send
    the form without it.
    """
    expect(scope.get_by_test_id("stFileChipName").filter(has_text=name).first).to_be_visible()
    expect(scope.get_by_test_id("stFileChipIconSpinner")).to_have_count(0)


def open_page(page: Page, url: str, ready_text: str) -> None:
    """Open a URL and wait until the page has drawn ready_text and its run is over."""
    page.goto(url)
    expect(page.get_by_text(ready_text).first).to_be_visible()
    wait_idle(page)


def query(url: str) -> dict[str, str]:
    """The query parameters of a URL, decoded."""
    return dict(parse_qsl(urlsplit(url).query, keep_blank_values=True))


def wait_for_url(page: Page, holds: Callable[[str], bool]) -> None:
    """Wait until the URL the app wrote satisfies holds(url), then for that run to end."""
    page.wait_for_url(holds)
    wait_idle(page)


def wait_for_query(page: Page, expected: Mapping[str, str]) -> None:
    """Wait until the URL holds these parameters (others may be there too), then for the run to end."""

    def holds(url: str) -> bool:
        params = query(url)
        return all(params.get(k) == v for k, v in expected.items())

    wait_for_url(page, holds)


def metric(scope: Page | Locator, label: str) -> Locator:
    """The value of the st.metric card with this label (on the page, or within a part of it)."""
    root = scope if isinstance(scope, Page) else scope.page  # the inner locator of has= starts at the root
    card = scope.locator('[data-testid="stMetric"]').filter(
        has=root.locator('[data-testid="stMetricLabel"]').get_by_text(label, exact=True)
    )
    return card.first.locator('[data-testid="stMetricValue"]')


def metric_value(scope: Page | Locator, label: str) -> str:
    """The text of the st.metric card with this label, once it is shown.

    For a figure not known in advance; read it once the page has settled (after wait_idle or a waited-for result),
    and check a known figure with expect(metric(...)).to_have_text(...), which waits for it."""
    value = metric(scope, label)
    expect(value).to_be_visible()
    return value.inner_text().strip()


def metric_values(scope: Page | Locator, labels: list[str]) -> dict[str, str]:
    """Several cards at once, label -> shown value."""
    return {label: metric_value(scope, label) for label in labels}


def number_field(page: Page, label: str) -> Locator:
    """An st.number_input by its label."""
    return page.get_by_role("spinbutton", name=label, exact=True)


def text_field(page: Page, label: str) -> Locator:
    """An st.text_input by its label."""
    return page.get_by_role("textbox", name=label, exact=True)


def type_into(field: Locator, value: object, key: str = "Enter") -> None:
    """Select what the field holds, type the new value and commit it with Enter or Tab.

    The caller then waits for the result of the new value (the URL, a figure), not for the field."""
    field.click()
    field.press("ControlOrMeta+a")
    field.press_sequentially(str(value))
    expect(field).to_have_value(str(value))
    field.press(key)


def combobox(page: Page, label: str) -> Locator:
    """An st.selectbox or st.multiselect by its label."""
    return page.get_by_role("combobox", name=label, exact=True)


def choose(page: Page, label: str, option: str | re.Pattern[str]) -> None:
    """Open a selectbox (or multiselect) and click one of its options (its name, or a pattern of it)."""
    box = combobox(page, label)
    box.click()
    if isinstance(option, str):
        # Long option lists are virtualised (only the first few are in the page): type to filter them first.
        box.press_sequentially(option)
        page.get_by_role("option", name=option, exact=True).click()
    else:
        page.get_by_role("option").filter(has_text=option).click()


def toggle(page: Page, label: str) -> Locator:
    """An st.toggle by its label (the switch itself, to check its state)."""
    return page.get_by_role("switch", name=label, exact=True)


def flip(page: Page, label: str) -> None:
    """Click an st.toggle where a person clicks it (its label; the switch input itself is hidden)."""
    toggle(page, label).locator("xpath=ancestor::label[1]").click()


def expander(page: Page, title: str) -> Locator:
    """The st.expander whose title holds this text."""
    return page.locator('[data-testid="stExpander"]').filter(has=page.locator("summary").filter(has_text=title)).first


def open_expander(page: Page, title: str) -> Locator:
    """Expand an st.expander (left open if it already is); returns it once its content can be clicked.

    Opening animates the height for a moment, its content clipped; a click on a button inside in that moment can be
    lost (no download starts), so wait until the content is no longer inert and the animation is over."""
    box = expander(page, title)
    details = box.locator("details").first
    expect(details).to_be_attached()
    if details.get_attribute("open") is None:
        box.locator("summary").first.click()
    expect(details).to_have_js_property("open", True)
    expect(box.locator('[data-testid="stExpanderDetails"]').first).to_have_js_property("inert", False)
    page.wait_for_function(
        "el => el.open && el.getAnimations().length === 0 && !el.style.height", arg=details.element_handle()
    )
    return box


def scroll_to_top(page: Page) -> None:
    """Scroll the sidebar and the main area back to the top (for a screenshot of the page as it opens)."""
    scrolled = "[...document.querySelectorAll('*')].filter(el => el.scrollTop > 0)"
    page.evaluate(f"{scrolled}.forEach(el => el.scrollTo({{top: 0, behavior: 'instant'}}))")
    page.wait_for_function(f"{scrolled}.length === 0")


def warnings(page: Page, count: int) -> list[str]:
    """The texts of the warning boxes, once exactly count of them are shown."""
    boxes = page.locator(WARNING)
    expect(boxes).to_have_count(count)
    return [t.strip() for t in boxes.all_inner_texts()]


def assert_no_traceback(page: Page) -> None:
    """No exception box anywhere on the page, once its run is over."""
    wait_idle(page)
    expect(page.locator(EXCEPTION)).to_have_count(0)


def download(page: Page, button: Locator, folder: Path, name: str | None = None) -> Path:
    """Click a download button once the page is idle and save the file it gives into folder; returns its path."""
    expect(button).to_be_enabled()
    wait_idle(page)
    with page.expect_download(timeout=WAIT_MS) as started:
        button.click()
    path = folder / (name or started.value.suggested_filename)
    started.value.save_as(path)
    return path


def start_probe(tab: Page, url: str, key: str | None = None) -> None:
    """Open a /probe link, type the API key if any, press Start and wait until the probe has started.

    The key shows nothing when committed; pressing Start sends every widget's value with the click, the key's too
    (the tests that need it use a test server that refuses requests without it)."""
    open_page(tab, url, "Start probe")
    if key is not None:
        type_into(text_field(tab, "API key"), key)
    tab.get_by_role("button", name="Start probe").click()
    live = tab.locator('[data-testid="stExpander"]').filter(has_text="Probing")
    expect(live.or_(probe_result(tab)).first).to_be_visible()  # running, or (a quick one) already done


def probe_result(tab: Page) -> Locator:
    """The caption of a finished probe's result on /probe (every workload: levels, rates, a trace, sessions)."""
    return tab.get_by_text("stored with every request")


def wait_probe_done(tab: Page) -> None:
    """Wait until the probe started on this tab shows its result and the page is idle."""
    expect(probe_result(tab)).to_be_visible(timeout=PROBE_MS)
    wait_idle(tab)


def shown_run_id(tab: Page) -> str:
    """The id of the run whose result the probe page shows ("Run <32 hex digits> · stored …")."""
    caption = tab.get_by_text(re.compile(r"^Run [0-9a-f]{32}\b")).first
    expect(caption).to_be_visible()
    found = re.match(r"Run ([0-9a-f]{32})", caption.inner_text().strip())
    assert found is not None, caption.inner_text()
    return found.group(1)


@contextmanager
def fresh_tab(browser: Browser, name: str) -> Iterator[Page]:
    """A new browser context (no cookies, no session) with one tab, as on another person's screen.

    Its console must stay free of errors; a screenshot of what it saw is kept as artifacts/<name>.png.
    """
    context = new_context(browser)
    tab = context.new_page()
    errors: list[str] = []

    def on_console(msg: object) -> None:
        if msg.type == "error" and not _streamlit_base_path_probe(msg):
            errors.append(f"{msg.text} ({msg.location.get('url', '')})")

    tab.on("console", on_console)
    try:
        yield tab
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        tab.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
    finally:
        tab.goto("about:blank")  # leave before any server the test started stops
        context.close()
    assert not errors, f"the fresh tab logged errors in the browser console: {errors}"


def show_tab(scope: Page | Locator, name: str) -> None:
    """Open a tab (the pages' tabs are lazy: its content runs once it is opened) and wait for that run to end."""
    tab = scope.get_by_role("tab", name=name, exact=True).first

    def selected() -> bool:
        # A click that lands while a rerun redraws the tabs is lost (the tab bar is drawn anew): click again.
        if tab.get_attribute("aria-selected") != "true":
            tab.click()
        return tab.get_attribute("aria-selected") == "true"

    wait_until(selected, f"the tab {name!r} selected")
    wait_idle(scope.page if isinstance(scope, Locator) else scope)
