"""What the browser tests do as a person would: fill widgets, wait for the app, read the cards, open a link anew."""

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from urllib.parse import parse_qsl, urlsplit

from playwright.sync_api import Browser, Locator, Page, expect

from tests.conftest import ARTIFACTS, _streamlit_base_path_probe

WAIT_MS = 30_000  # one wait for the app (a rerun, a page change); well under a minute
EXCEPTION = '[data-testid="stException"]'
WARNING = '[data-testid="stAlertContentWarning"]'


def wait_idle(page: Page) -> None:
    """Wait until the app's script has finished its run (and the connection is up)."""
    app = page.locator('[data-testid="stApp"]')
    expect(app).to_have_attribute("data-test-connection-state", "CONNECTED", timeout=WAIT_MS)
    expect(app).to_have_attribute("data-test-script-state", "notRunning", timeout=WAIT_MS)


def open_page(page: Page, url: str, ready_text: str) -> None:
    """Open a URL and wait until the page has drawn ready_text and its run is over."""
    page.goto(url)
    page.get_by_text(ready_text).first.wait_for(timeout=WAIT_MS)
    wait_idle(page)


def query(url: str) -> dict[str, str]:
    """The query parameters of a URL, decoded."""
    return dict(parse_qsl(urlsplit(url).query, keep_blank_values=True))


def wait_for_query(page: Page, expected: Mapping[str, str]) -> None:
    """Wait until the URL holds these parameters (others may be there too), then for the run to end."""

    def holds(url: str) -> bool:
        params = query(url)
        return all(params.get(k) == v for k, v in expected.items())

    page.wait_for_url(holds, timeout=WAIT_MS)
    wait_idle(page)


def metric(page: Page, label: str) -> Locator:
    """The value of the st.metric card with this label."""
    card = page.locator('[data-testid="stMetric"]').filter(
        has=page.locator('[data-testid="stMetricLabel"]').get_by_text(label, exact=True)
    )
    return card.first.locator('[data-testid="stMetricValue"]')


def metric_value(page: Page, label: str) -> str:
    """The text of the st.metric card with this label."""
    value = metric(page, label)
    value.wait_for(timeout=WAIT_MS)
    return value.inner_text().strip()


def metric_values(page: Page, labels: list[str]) -> dict[str, str]:
    """Several cards at once, label -> shown value."""
    return {label: metric_value(page, label) for label in labels}


def number_field(page: Page, label: str) -> Locator:
    """An st.number_input by its label."""
    return page.get_by_role("spinbutton", name=label, exact=True)


def text_field(page: Page, label: str) -> Locator:
    """An st.text_input by its label."""
    return page.get_by_role("textbox", name=label, exact=True)


def type_into(field: Locator, value: object, key: str = "Enter") -> None:
    """Select what the field holds, type the new value and commit it with Enter or Tab."""
    field.click()
    field.press("ControlOrMeta+a")
    field.press_sequentially(str(value))
    field.press(key)


def combobox(page: Page, label: str) -> Locator:
    """An st.selectbox or st.multiselect by its label."""
    return page.get_by_role("combobox", name=label, exact=True)


def choose(page: Page, label: str, option: str) -> None:
    """Open a selectbox (or multiselect) and click one of its options."""
    combobox(page, label).click()
    page.get_by_role("option", name=option, exact=True).click()


def toggle(page: Page, label: str) -> Locator:
    """An st.toggle by its label (the switch itself, to check its state)."""
    return page.get_by_role("switch", name=label, exact=True)


def flip(page: Page, label: str) -> None:
    """Click an st.toggle where a person clicks it (its label; the switch input itself is hidden)."""
    toggle(page, label).locator("xpath=ancestor::label[1]").click()


def open_expander(page: Page, title: str) -> None:
    """Expand an st.expander (left open if it already is)."""
    summary = page.locator('[data-testid="stExpander"] summary').filter(has_text=title).first
    summary.wait_for(timeout=WAIT_MS)
    details = summary.locator("xpath=..")
    if details.get_attribute("open") is None:
        summary.click()


def scroll_to_top(page: Page) -> None:
    """Scroll the sidebar and the main area back to the top (for a screenshot of the page as it opens)."""
    page.evaluate("document.querySelectorAll('*').forEach(el => { if (el.scrollTop > 0) el.scrollTop = 0; })")
    page.wait_for_timeout(300)  # let the tab indicator and the scroll settle before the picture


def warnings(page: Page) -> list[str]:
    """The texts of the warning boxes shown."""
    return [t.strip() for t in page.locator(WARNING).all_inner_texts()]


def assert_no_traceback(page: Page) -> None:
    """No exception box anywhere on the page."""
    expect(page.locator(EXCEPTION)).to_have_count(0)


@contextmanager
def fresh_tab(browser: Browser, name: str) -> Iterator[Page]:
    """A new browser context (no cookies, no session) with one tab, as on another person's screen.

    Its console must stay free of errors; a screenshot of what it saw is kept as artifacts/<name>.png.
    """
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
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
