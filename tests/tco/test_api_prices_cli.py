"""`python -m tco api-prices refresh`: a recorded LiteLLM list replaces the snapshot; a bad one leaves it alone."""

import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from catalog.api_prices import API_PRICES_CSV, load_api_links, load_api_prices
from tco.api_prices_cli import main
from tests.support import ROOT

RECORDED = ROOT / "tests" / "tco" / "data" / "litellm_prices.json"


@pytest.fixture
def snapshot(tmp_path: Path) -> Path:
    target = tmp_path / "api_prices.csv"
    shutil.copy(API_PRICES_CSV, target)
    return target


def _run(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(args), out, err, fetch=_no_network)
    return code, out.getvalue(), err.getvalue()


def _no_network(url: str) -> bytes:
    raise OSError(f"network unreachable: {url}")


def test_refresh_from_a_recorded_list_keeps_every_mapped_entry_and_says_what_changed(
    snapshot: Path, tmp_path: Path
) -> None:
    table = json.loads(RECORDED.read_text())
    table["deepinfra/Qwen/Qwen2.5-72B-Instruct"]["output_cost_per_token"] = 5e-07  # 0.40 -> 0.50 per million
    changed = tmp_path / "changed.json"
    changed.write_text(json.dumps(table))
    code, out, err = _run("refresh", "--from", str(changed), "--to", str(snapshot))
    assert code == 0, err
    assert "deepinfra/Qwen/Qwen2.5-72B-Instruct: 0.36/-/0.4 -> 0.36/-/0.5" in out
    rows = load_api_prices(snapshot)
    assert {r.api_key for r in rows} == {link.api_key for link in load_api_links()}
    qwen = next(r for r in rows if r.api_key == "deepinfra/Qwen/Qwen2.5-72B-Instruct")
    assert (qwen.input_per_million_usd, qwen.output_per_million_usd, qwen.provider) == (0.36, 0.5, "DeepInfra")
    assert all(r.licence.startswith("MIT") and r.source_snapshot for r in rows)


def test_refresh_json_report(snapshot: Path) -> None:
    code, out, _err = _run("refresh", "--from", str(RECORDED), "--to", str(snapshot), "--json")
    assert code == 0
    report = json.loads(out)
    assert report["rows"] == len(load_api_prices(snapshot)) and report["changes"] == []


@pytest.mark.parametrize("body", ["{not json", "[]", json.dumps({"gpt-4o-mini": {"input_cost_per_token": 1e-7}})])
def test_a_bad_list_exits_2_and_leaves_the_snapshot(snapshot: Path, tmp_path: Path, body: str) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(body)
    before = snapshot.read_bytes()
    code, _out, err = _run("refresh", "--from", str(bad), "--to", str(snapshot))
    assert code == 2
    assert "the stored prices are unchanged" in err
    assert snapshot.read_bytes() == before


def test_no_network_exits_2_and_leaves_the_snapshot(snapshot: Path) -> None:
    before = snapshot.read_bytes()
    code, _out, err = _run("refresh", "--to", str(snapshot))  # the default source is LiteLLM's URL
    assert code == 2 and "network unreachable" in err
    assert snapshot.read_bytes() == before


def test_python_dash_m_tco_runs_the_command(snapshot: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tco", "api-prices", "refresh", "--from", str(RECORDED), "--to", str(snapshot)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "no price changed" in done.stdout
    unknown = subprocess.run([sys.executable, "-m", "tco", "nothing"], cwd=ROOT, capture_output=True, text=True)
    assert unknown.returncode == 2 and "api-prices" in unknown.stderr
