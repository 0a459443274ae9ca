"""Importing another tool's result file on /runs in a browser: the upload is stored as a run, listed with its
source, and the same file uploaded again is recognized and stores nothing."""

from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from db import init_db, make_engine
from db.run_queries import list_runs
from tests.e2e.helpers import fresh_tab, open_expander, open_page, wait_idle, wait_until, wait_uploaded
from tests.support import ROOT, running_app

pytestmark = pytest.mark.e2e

VLLM_FILE = ROOT / "tests" / "fixtures" / "imports" / "vllm" / "vllm_detailed.json"


def test_an_uploaded_vllm_result_becomes_a_listed_run_once(browser: Browser, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'imports.db'}"
    engine = make_engine(url)
    init_db(engine)
    with running_app(url) as app, fresh_tab(browser, "runs-import") as tab:
        open_page(tab, f"{app}/runs", "Probe runs")
        for attempt in ("stored", "again"):
            box = open_expander(tab, "Import result files of other tools")  # a click while it opens can be lost
            box.locator('[data-testid="stFileUploader"] input[type="file"]').set_input_files(VLLM_FILE)
            wait_uploaded(box, VLLM_FILE.name)
            submit = box.get_by_role("button", name="Import", exact=True)
            expect(submit).to_be_enabled()
            submit.click()
            if attempt == "stored":
                section = tab.get_by_test_id("stExpanderDetails").filter(has_text="Result files")
                stored = section.get_by_test_id("stAlert").filter(has_text="Stored run")
                expect(stored).to_contain_text("(vllm ")  # the tool and its release, from the file
                expect(stored).to_contain_text("request samples")  # --save-detailed arrays became samples
                wait_until(lambda: len(list_runs(engine)) == 1, "the uploaded run stored")
            else:
                skipped = tab.get_by_test_id("stExpanderDetails").get_by_test_id("stAlert")
                expect(skipped.filter(has_text="already imported")).to_contain_text(VLLM_FILE.name)
            wait_idle(tab)
        assert len(list_runs(engine)) == 1  # the second upload stored nothing
