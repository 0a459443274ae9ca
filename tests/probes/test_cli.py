"""The command line: exit codes, progress on stderr, the JSON file's schema, storage in DATABASE_URL, no secrets."""

import io
import json
import os
import subprocess
import sys
from pathlib import Path

from sqlalchemy import create_engine, text

from db import get_run, make_engine
from probes.cli import EXIT_FAILED, EXIT_OK, EXIT_USAGE, run_cli
from probes.fakeserver import Behaviour, serve_in_thread
from tests.support import ROOT, free_port

KEY = "sk-cli-SECRET-4242"
LEVEL_KEYS = {
    "index",
    "concurrency",
    "request_rate_rps",
    "started_at",
    "finished_at",
    "duration_s",
    "requests",
    "completed",
    "failed",
    "errors",
    "input_tokens",
    "output_tokens",
    "input_tokens_per_request",
    "output_tokens_per_request",
    "token_source",
    "req_s",
    "output_tok_s",
    "total_tok_s",
    "ttft_ms",
    "tpot_ms",
    "itl_ms",
    "e2e_ms",
    "slo",
    "server_metrics",
}
SAMPLE_KEYS = {
    "level_index",
    "concurrency",
    "index",
    "start_s",
    "ttft_ms",
    "first_content_ms",
    "reasoning_ms",
    "tpot_ms",
    "e2e_ms",
    "itl_ms",
    "chunk_ms",
    "chunk_tokens",
    "input_tokens",
    "output_tokens",
    "reasoning_tokens",
    "token_source",
    "finish_reason",
    "http_status",
    "error_kind",
    "error",
    "retry_after_s",
    "server_request_id",
}


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run_cli(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_run_writes_the_json_and_stores_the_run(database_url: str, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("PROBE_API_KEY", KEY)
    output = tmp_path / "run.json"
    with serve_in_thread(defaults=Behaviour(ttft_ms=5, tpot_ms=1, tokens=6), api_key=KEY) as server:
        code, _, err = cli(
            "--base-url",
            server.base_url,
            "--model",
            "fake:fault=429",
            "--concurrency",
            "1,2",
            "--requests",
            "2",
            "--max-tokens",
            "16",
            "--workload",
            "seed",
            "--output",
            str(output),
        )
        assert code == EXIT_OK  # completed, even though every request failed (they are in the file)
        code, _, err = cli(
            "--base-url",
            server.base_url,
            "--model",
            "fake",
            "--concurrency",
            "1,4",
            "--requests",
            "4",
            "--max-tokens",
            "16",
            "--output",
            str(output),
        )
    assert code == EXIT_OK
    assert "concurrency 1: 4/4 ok" in err and "concurrency 4: 4/4 ok" in err and "completed" in err
    data = json.loads(output.read_text())
    assert data["schema_version"] == 1 and data["status"] == "completed" and data["run_id"]
    assert set(data["levels"][0]) == LEVEL_KEYS
    assert set(data["levels"][0]["ttft_ms"]) == {"count", "mean", "p50", "p90", "p99", "min", "max"}
    assert set(data["samples"][0]) == SAMPLE_KEYS
    assert data["samples"][0]["token_source"] == "usage" and data["samples"][0]["error"] is None
    assert data["settings"]["concurrency"] == [1, 4] and "api_key" not in data["settings"]
    assert KEY not in output.read_text()
    stored = get_run(make_engine(database_url), data["run_id"])
    assert stored.levels == [type(stored.levels[0]).model_validate(lv) for lv in data["levels"]]
    engine = create_engine(database_url)
    with engine.connect() as connection:
        dump = "\n".join(
            str(tuple(r))
            for t in ("probe_runs", "probe_levels", "probe_samples")
            for r in connection.execute(text(f"SELECT * FROM {t}"))
        )
    assert KEY not in dump and dump.count("completed") >= 2


def test_failed_requests_are_in_the_file(database_url: str, tmp_path: Path) -> None:
    output = tmp_path / "run.json"
    with serve_in_thread(defaults=Behaviour(ttft_ms=5, tpot_ms=1, tokens=6)) as server:
        code, _, err = cli(
            "--base-url",
            server.base_url,
            "--model",
            "fake:fault=500",
            "--concurrency",
            "1",
            "--requests",
            "2",
            "--output",
            str(output),
            "--quiet",
        )
    assert code == EXIT_OK and err == ""
    data = json.loads(output.read_text())
    assert data["levels"][0]["errors"] == {"server_error": 2}
    assert [s["error_kind"] for s in data["samples"]] == ["server_error", "server_error"]


def test_unreachable_endpoint_exits_non_zero(database_url: str, tmp_path: Path) -> None:
    output = tmp_path / "run.json"
    code, _, err = cli(
        "--base-url",
        f"http://127.0.0.1:{free_port()}/v1",
        "--model",
        "m",
        "--concurrency",
        "1",
        "--requests",
        "1",
        "--output",
        str(output),
    )
    assert code == EXIT_FAILED and "cannot reach" in err
    assert json.loads(output.read_text())["status"] == "failed"


def test_refused_settings_and_bad_flags(database_url: str) -> None:
    assert cli("--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--concurrency", "1,4096")[0] == EXIT_USAGE
    code, _, err = cli("--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--requests", "0")
    assert code == EXIT_USAGE and "at least 1" in err
    code, _, err = cli("--base-url", "ftp://x", "--model", "m")
    assert code == EXIT_USAGE and "base URL" in err
    assert cli("--base-url", "http://127.0.0.1:9/v1")[0] == EXIT_USAGE  # no model
    code, _, err = cli(
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--model",
        "m",
        "--workload",
        "file",
        "--prompt-file",
        "/nonexistent.jsonl",
    )
    assert code == EXIT_USAGE and "cannot read" in err


def test_list_models_and_test_connection() -> None:
    with serve_in_thread() as server:
        assert cli("--base-url", server.base_url, "--list-models") == (EXIT_OK, "fake\n", "")
        code, out, _ = cli("--base-url", server.base_url, "--model", "fake", "--test-connection")
        assert code == EXIT_OK and out.startswith("OK")
    code, _, err = cli("--base-url", f"http://127.0.0.1:{free_port()}/v1", "--list-models")
    assert code == EXIT_FAILED and "cannot connect" in err


def test_python_dash_m_probes(tmp_path: Path) -> None:
    """The module entry point as scripts call it, in a subprocess."""
    output = tmp_path / "run.json"
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path / 'cli.db'}", "PYTHONPATH": str(ROOT)}
    with serve_in_thread(defaults=Behaviour(ttft_ms=5, tpot_ms=1, tokens=4)) as server:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "probes",
                "--base-url",
                server.base_url,
                "--model",
                "fake",
                "--concurrency",
                "1,2",
                "--requests",
                "2",
                "--max-tokens",
                "8",
                "--workload",
                "seed",
                "--output",
                str(output),
            ],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 0, done.stderr
    assert json.loads(output.read_text())["levels"][1]["completed"] == 2
    down = subprocess.run(
        [sys.executable, "-m", "probes", "--base-url", f"http://127.0.0.1:{free_port()}/v1", "--model", "m", "--no-db"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert down.returncode == 1 and "cannot reach" in down.stderr
