"""Open a page of the app under AppTest with query parameters."""

import time

from streamlit.testing.v1 import AppTest

from tests.support import ROOT


def open_page(page: str, params: dict[str, str] | None = None, timeout_s: float = 30) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=timeout_s)
    if params:
        at.query_params.update(params)
    at.switch_page(f"views/{page}.py")
    return at.run()


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
