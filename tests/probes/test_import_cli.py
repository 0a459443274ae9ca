"""`python -m probes import`: the --json contract, exit codes, the deployment flags, and the probe form unchanged."""

import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

from db import get_run, import_of, init_db, list_runs, make_engine
from fakeserver import Behaviour, serve_in_thread
from probes.__main__ import main
from probes.import_cli import build_import_parser
from probes.importers.registry import format_choices
from tests.support import ROOT

FIXTURES = ROOT / "tests" / "fixtures" / "imports"


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["import", *argv], out, err)
    return code, out.getvalue(), err.getvalue()


def test_json_lists_the_runs_stored_and_a_second_import_is_skipped_as_already_imported(database_url: str) -> None:
    files = [str(FIXTURES / "vllm" / "vllm_detailed.json"), str(FIXTURES / "guidellm" / "benchmarks.yaml")]
    code, out, _ = _run(*files, "--gpu", "H100", "--gpu-count", "2", "--engine", "vllm", "--quant", "bf16", "--json")
    report = json.loads(out)
    assert code == 0 and report["skipped"] == []
    assert [(r["source_format"], r["tool_version"], r["levels"], r["samples"]) for r in report["runs"]] == [
        ("vllm", None, 1, 40),
        ("guidellm", "0.8.1", 1, 12),
        ("guidellm", "0.8.1", 1, 12),
    ]
    engine = make_engine(database_url)
    stored = get_run(engine, report["runs"][0]["id"], with_samples=False)
    assert stored is not None
    deployment = stored.settings.deployment
    assert (deployment.gpu, deployment.gpu_count, deployment.engine, deployment.quant) == (
        "h100-80gb-sxm",
        2,
        "vllm",
        "bf16",
    )
    assert deployment.model == "qwen2.5-7b" and deployment.source == {"model": "file"}  # the file stated it

    code, out, _ = _run(*files, "--json")
    again = json.loads(out)
    assert code == 0 and again["runs"] == []
    assert again["skipped"] == [{"file": f, "reason": "already imported"} for f in files]
    assert len(list_runs(engine)) == 3


def test_a_refused_file_exits_2_and_the_other_files_are_still_imported(database_url: str, tmp_path: Path) -> None:
    other = tmp_path / "notes.txt"
    other.write_text("hello")
    good = str(FIXTURES / "aiperf" / "run1")
    code, out, _ = _run(str(other), good, "--label", "vendor run", "--json")
    report = json.loads(out)
    assert code == 2
    assert [r["source_format"] for r in report["runs"]] == ["aiperf"]
    [skipped] = report["skipped"]
    assert skipped["file"] == str(other) and "Expected one of" in skipped["reason"] and "guidellm" in skipped["reason"]
    engine = make_engine(database_url)
    [stored] = list_runs(engine)
    assert stored.label == "vendor run"
    where = import_of(engine, stored.id)
    assert where is not None and not where.aggregate_only


def test_a_bad_deployment_flag_is_refused_naming_it_and_a_forgiven_one_noted(database_url: str) -> None:
    code, _, err = _run(str(FIXTURES / "vllm" / "vllm_aggregate.json"), "--gpu", "H1000")
    assert code == 2 and "--gpu" in err and "not in the catalog" in err
    code, _, err = _run(
        str(FIXTURES / "vllm" / "vllm_aggregate.json"), "--gpu", "H100", "--deploy-model", "lama3.1-70b"
    )
    assert code == 0 and "note: --deploy-model 'lama3.1-70b' matched" in err  # a forgiving match says what it became
    engine = make_engine(database_url)
    init_db(engine)
    assert [(run.deploy_gpu, run.deploy_model) for run in list_runs(engine)] == [("h100-80gb-sxm", "llama3.1-70b")]


def test_without_json_each_stored_run_and_skipped_file_is_said(database_url: str) -> None:
    path = str(FIXTURES / "sglang" / "sglang_runs.jsonl")
    code, out, _ = _run(path)
    assert code == 0 and out.count("stored run") == 2 and "aggregate only" in out
    code, _, err = _run(path)
    assert code == 0 and "already imported" in err


def test_format_choices_come_from_the_registry() -> None:
    flag = next(a for a in build_import_parser()._actions if a.dest == "format_id")
    assert tuple(flag.choices or ()) == format_choices()


def test_the_probe_command_line_is_unchanged(database_url: str) -> None:
    with serve_in_thread(defaults=Behaviour(ttft_ms=1, tpot_ms=1, tokens=2), models=("served",)) as server:
        out, err = io.StringIO(), io.StringIO()
        assert main(["--base-url", server.base_url, "--list-models"], out, err) == 0
        assert out.getvalue().split() == ["served"]


def test_python_m_probes_import_runs_as_a_command(database_url: str, tmp_path: Path) -> None:
    folder = tmp_path / "aiperf run"
    shutil.copytree(FIXTURES / "aiperf" / "run1", folder)
    done = subprocess.run(
        [sys.executable, "-m", "probes", "import", str(folder), "--json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["runs"][0]["samples"] == 40
