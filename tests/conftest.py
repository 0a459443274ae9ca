"""Shared fixtures: a fresh database per test, the app under `streamlit run`, and headless Chromium."""

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import ROOT, running_app

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = ROOT / "tests" / "e2e" / "artifacts"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]


@pytest.fixture
def database_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh SQLite file for this test, also set as DATABASE_URL for code that reads the settings."""
    url = f"sqlite:///{tmp_path / 'test.db'}"
    monkeypatch.setenv("DATABASE_URL", url)
    from settings import get_settings

    get_settings.cache_clear()
    yield url
    get_settings.cache_clear()


@pytest.fixture(scope="session")
def postgres_base_url() -> Iterator[str]:
    """A PostgreSQL server on 127.0.0.1 for this test session (Debian's postgresql, started by the tests)."""
    from tests.pg import postgres_server

    with postgres_server() as base:
        yield base


@pytest.fixture(params=["sqlite", "postgresql"])
def any_database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The same test on a fresh SQLite file and on a fresh PostgreSQL database."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'test.db'}"
    from tests.pg import create_database

    base = request.getfixturevalue("postgres_base_url")
    return create_database(base, f"t_{abs(hash(request.node.nodeid)) % 10**12}")


@pytest.fixture(scope="session")
def app_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The app started as the README starts it, on a free port, with its own database.

    It runs in a folder of its own with the README's default `sqlite:///data/llm-serving.db`, so the sidebar (in the
    README's screenshots too) reads what a person sees after `make run`; its log is app.log in that folder."""
    home = tmp_path_factory.mktemp("app")
    (home / "data").mkdir()
    (home / ".streamlit").symlink_to(ROOT / ".streamlit")  # the app's config (theme, toolbar) is read from cwd
    with running_app("sqlite:///data/llm-serving.db", cwd=home, log_path=home / "app.log") as base:
        yield base


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    """Debian's Chromium, headless, driven by Playwright."""
    from playwright.sync_api import expect, sync_playwright

    from tests.e2e.helpers import WAIT_MS

    expect.set_options(timeout=WAIT_MS)  # every expect() waits as long as a click may (Playwright's default: 5 s)
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: object, request: pytest.FixtureRequest) -> Iterator[object]:
    """A fresh browser context and page; a screenshot of what it saw is kept under tests/e2e/artifacts/."""
    from tests.e2e.helpers import new_context

    context = new_context(browser)
    tab = context.new_page()
    console_errors: list[str] = []

    def on_console(msg: object) -> None:
        if msg.type == "error" and not _streamlit_base_path_probe(msg):
            console_errors.append(f"{msg.text} ({msg.location.get('url', '')})")

    tab.on("console", on_console)
    tab.console_errors = console_errors
    yield tab
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    try:
        tab.screenshot(path=str(ARTIFACTS / f"{request.node.name}.png"), full_page=True)
    finally:
        context.close()
    assert not console_errors, f"the page logged errors in the browser console: {console_errors}"


def _streamlit_base_path_probe(msg: object) -> bool:
    """Streamlit's front end, opened on /<page>, first asks /<page>/_stcore/health and host-config (404) to find
    the app's base path, then the root; those two 404s are its normal start, not an error of this app."""
    url = msg.location.get("url", "")
    return "404" in msg.text and url.endswith(("/_stcore/health", "/_stcore/host-config"))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Browser tests run last: Playwright's sync API keeps an event loop running in the main thread, and
    code under test that calls asyncio.run() (the probe's CLI) cannot run after it has started."""
    uses_browser = [item for item in items if {"browser", "page"} & set(getattr(item, "fixturenames", ()))]
    rest = [item for item in items if item not in uses_browser]
    items[:] = rest + uses_browser
