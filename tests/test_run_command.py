"""The README's run command (`make run`) starts the app on its port, with its SQLite file under ./data/."""

import os
import shutil
import subprocess
from pathlib import Path

from tests.support import ROOT, free_port, wait_http

COPIED = [
    "app.py",
    "settings.py",
    "Makefile",
    "requirements.txt",
    "requirements-dev.txt",
    "requirements-ray.txt",
    ".streamlit",
    "views",
    "ui",
    "tco",
    "catalog",
    "db",
    "selector",
    "probes",
    "perf",
    "i18n",
]


def test_make_run_starts_the_app_and_creates_the_database(tmp_path: Path, browser: object) -> None:
    # A copy of the project, so ./data/ is the copy's; the already-installed venv is reused (VENV=...).
    for name in COPIED:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
        elif source.exists():
            shutil.copy(source, tmp_path / name)
    venv = Path(os.environ.get("VIRTUAL_ENV", ROOT / ".venv"))
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    proc = subprocess.Popen(
        ["make", "run", f"PORT={port}", f"VENV={venv}"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_http(f"http://127.0.0.1:{port}/_stcore/health", timeout_s=120, proc=proc)
        context = browser.new_context()
        page = context.new_page()
        page.goto(f"http://localhost:{port}/")
        page.get_by_text("LLM serving decisions").first.wait_for(timeout=30_000)
        context.close()
        assert (tmp_path / "data" / "llm-serving.db").exists()
    finally:
        os.killpg(proc.pid, 15)
        proc.wait(timeout=20)
