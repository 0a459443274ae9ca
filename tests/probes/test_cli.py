"""The command line: exit codes, progress on stderr, the JSON file's schema, storage in DATABASE_URL, no secrets,
flags refused with their allowed values, and every flag reaching the run's settings."""

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from db import get_run, init_db, list_runs, make_engine
from fakeserver import Behaviour, serve_in_thread
from probes.__main__ import main
from probes.cli import EXIT_FAILED, EXIT_OK, EXIT_USAGE, build_parser, parse_options, run_cli
from probes.cli_options import DEPLOYMENT_FIELDS, SLO_AND_TIMEOUT_FIELDS, SWITCHES, CliOptions
from probes.config import ApiKind, RunSettings, SessionVariant, WorkloadKind
from probes.deployment import Deployment
from probes.form import ProbeForm
from tests.support import ROOT, free_port
from ui.params import to_params, validate_params

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
    "schedule_lag_ms",
    "turns",
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
    "trace_line",
    "session",
    "turn",
    "worker",
    "scheduled_s",
}


# Scripts call these flags: their names stay (docs/probe.md lists each, tests/test_readme.py checks it).
FLAGS_SCRIPTS_USE = {
    "--base-url", "--api-key", "--model", "--label", "--list-models", "--test-connection", "--api", "--workload",
    "--input-tokens", "--shared-prefix-tokens", "--prompt-file", "--concurrency", "--requests", "--warmup",
    "--request-rate", "--duration", "--max-tokens", "--temperature", "--ignore-eos", "--no-usage",
    "--continuous-usage", "--no-metrics", "--metrics-url", "--seed", "--slo-ttft-p50-ms", "--slo-ttft-p99-ms",
    "--slo-tpot-p50-ms", "--goodput-ttft-ms", "--goodput-tpot-ms", "--max-failed-ratio", "--connect-timeout",
    "--ttft-timeout", "--stall-timeout", "--overlength-extra-tokens", "--output", "--no-db", "--quiet",
    "--gpu", "--gpu-count", "--deploy-model", "--engine", "--quant",
    "--burstiness", "--max-in-flight", "--find-max-rate", "--search-max-levels", "--search-max-duration-s",
    "--trace", "--trace-format", "--trace-speed", "--trace-start", "--trace-duration", "--trace-limit",
    "--sessions", "--turns", "--think-time-s", "--session-variant", "--conversations", "--dcgm-url", "--dcgm-interval",
    "--workers", "--ray-address",
}  # fmt: skip


def cli(*argv: str) -> tuple[int, str, str]:
    """`python -m probes ...` in this process: runs are stored in DATABASE_URL unless --no-db."""
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
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
    assert code == EXIT_USAGE and err.startswith("error: --requests:") and "allowed: 1–100000" in err
    code, _, err = cli("--base-url", "ftp://x", "--model", "m")
    assert code == EXIT_USAGE and "--base-url" in err and "base URL" in err
    code, _, err = cli("--base-url", "http://127.0.0.1:9/v1")
    assert code == EXIT_USAGE and "--model is required" in err
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
    assert list_runs(_engine(database_url)) == []  # nothing refused is stored


def _engine(database_url: str) -> object:
    engine = make_engine(database_url)
    init_db(engine)
    return engine


@pytest.mark.parametrize(
    ("flag", "param", "value", "allowed"),
    [
        ("--requests", "requests", "100001", "1–100000"),
        ("--warmup", "warmup", "10001", "0–10000"),
        ("--input-tokens", "input_tokens", "200001", "1–200000"),
        ("--shared-prefix-tokens", "prefix_tokens", "0", "1–200000"),
        ("--concurrency", "levels", ",".join(str(n) for n in range(1, 34)), "1–32 distinct levels ≥ 1"),
        ("--concurrency", "levels", "4,4", "1–32 distinct levels ≥ 1"),
        ("--temperature", "temperature", "2.5", "0–2"),
        ("--request-rate", "rate", "0", "1–32 distinct rates > 0, ≤ 1000000"),
        ("--request-rate", "rate", "1,x", "1–32 distinct rates > 0, ≤ 1000000"),
        ("--request-rate", "rate", "2,2", "1–32 distinct rates > 0, ≤ 1000000"),
        ("--burstiness", "burstiness", "0", "> 0, ≤ 100"),
        ("--max-in-flight", "max_in_flight", "0", "1–100000"),
        ("--search-max-levels", "search_max_levels", "33", "1–32"),
        ("--search-max-duration-s", "search_max_duration", "-1", "> 0, ≤ 86400"),
        ("--duration", "duration", "inf", "> 0, ≤ 86400"),
        ("--max-tokens", "max_tokens", "0", "1–1000000"),
        ("--slo-ttft-p50-ms", "ttft_p50", "-5", "> 0, ≤ 3600000"),
        ("--connect-timeout", "connect_timeout", "601", "> 0, ≤ 600"),
        ("--ttft-timeout", "ttft_timeout", "3601", "> 0, ≤ 3600"),
        ("--stall-timeout", "stall_timeout", "0", "> 0, ≤ 3600"),
        ("--label", "label", "x" * 201, "up to 200 characters"),
        ("--model", "model", "m" * 301, "up to 300 characters"),
    ],
)
def test_the_command_line_and_the_page_refuse_the_same_values(flag: str, param: str, value: str, allowed: str) -> None:
    """One limit, two doors: the flag is refused with its allowed values, the URL parameter is named and dropped."""
    code, _, err = cli("--base-url", "http://127.0.0.1:9/v1", "--model", "m", flag, value, "--no-db")
    assert code == EXIT_USAGE
    assert err.startswith(f"error: {flag}:") and f"(allowed: {allowed})" in err and len(err.splitlines()) == 1
    form, messages, rejected = validate_params(ProbeForm, {"model": "m", param: value})
    assert list(rejected) == [param] and f"`{param}`" in messages[0]
    assert param not in to_params(form)  # the default instead


def test_every_flag_reaches_the_run_settings() -> None:
    """Each setting flag, given a value other than its default, changes the RunSettings the run gets."""
    options = parse_options(
        [
            *("--base-url", "http://gpu-box:8000/v1/", "--model", "qwen", "--label", "nightly", "--api", "completions"),
            *("--workload", "synthetic", "--input-tokens", "256", "--shared-prefix-tokens", "64"),
            *("--prompt-file", "p.jsonl", "--concurrency", "1, 4", "--requests", "3", "--warmup", "2"),
            *("--request-rate", "2.5, 5", "--burstiness", "2", "--max-in-flight", "6", "--find-max-rate"),
            *("--search-max-levels", "5", "--search-max-duration-s", "90", "--duration", "30"),
            *("--max-tokens", "64", "--temperature", "0"),
            *("--ignore-eos", "--no-usage", "--continuous-usage", "--no-metrics", "--metrics-url", "http://m/x"),
            *("--seed", "7", "--slo-ttft-p50-ms", "200", "--slo-ttft-p99-ms", "800", "--slo-tpot-p50-ms", "40"),
            *("--goodput-ttft-ms", "900", "--goodput-tpot-ms", "45", "--max-failed-ratio", "0.05"),
            *("--connect-timeout", "3", "--ttft-timeout", "20", "--stall-timeout", "9"),
            *("--overlength-extra-tokens", "4"),
            *("--gpu", "H100", "--gpu-count", "2", "--deploy-model", "llama-3.1-8b", "--engine", "vllm"),
            *("--quant", "FP8", "--trace", "azure-conv", "--trace-format", "azure", "--trace-speed", "10"),
            *("--trace-start", "60", "--trace-duration", "120", "--trace-limit", "50"),
            *("--sessions", "3", "--turns", "5", "--think-time-s", "1.5", "--session-variant", "agent"),
            *("--conversations", "c.jsonl", "--dcgm-url", "http://gpu-box:9400/metrics", "--dcgm-interval", "2"),
            *("--workers", "4", "--ray-address", "ray-head:6379"),
        ],
        environ={"PROBE_API_KEY": KEY},
    )
    settings = options.run_settings()
    expected = {
        "base_url": "http://gpu-box:8000/v1",
        "model": "qwen",
        "label": "nightly",
        "api": ApiKind.COMPLETIONS,
        "workload": WorkloadKind.SYNTHETIC,
        "input_tokens": 256,
        "shared_prefix_tokens": 64,
        "prompt_file": "p.jsonl",
        "concurrency": (1, 4),
        "requests_per_level": 3,
        "warmup_requests": 2,
        "request_rate_rps": (2.5, 5.0),
        "burstiness": 2.0,
        "max_in_flight": 6,
        "find_max_rate": True,
        "search_max_levels": 5,
        "search_max_duration_s": 90.0,
        "duration_s": 30.0,
        "max_tokens": 64,
        "temperature": 0.0,
        "ignore_eos": True,
        "include_usage": False,
        "continuous_usage_stats": True,
        "scrape_metrics": False,
        "metrics_url": "http://m/x",
        "seed": 7,
        "trace": "azure-conv",
        "trace_format": "azure",
        "trace_speed": 10.0,
        "trace_start_s": 60.0,
        "trace_duration_s": 120.0,
        "trace_limit": 50,
        "sessions": 3,
        "turns": 5,
        "think_time_s": 1.5,
        "session_variant": SessionVariant.AGENT,
        "conversations_file": "c.jsonl",
        "dcgm_url": "http://gpu-box:9400/metrics",
        "dcgm_interval_s": 2.0,
        "workers": 4,
        "ray_address": "ray-head:6379",
    }
    assert {name: getattr(settings, name) for name in expected} == expected
    assert settings.slo.model_dump() == {
        "ttft_p50_ms": 200,
        "ttft_p99_ms": 800,
        "tpot_p50_ms": 40,
        "request_ttft_ms": 900,
        "request_tpot_ms": 45,
        "max_failed_ratio": 0.05,
    }
    assert settings.timeouts.model_dump() == {"connect_s": 3, "ttft_s": 20, "stall_s": 9, "overlength_extra_tokens": 4}
    assert settings.api_key is not None and settings.api_key.get_secret_value() == KEY
    assert settings.deployment == Deployment(
        gpu="h100-80gb-sxm", gpu_count=2, model="llama3.1-8b", engine="vllm", quant="fp8"
    )
    defaults = RunSettings(base_url="http://gpu-box:8000/v1", model="qwen")
    changed = {n for n in RunSettings.model_fields if getattr(settings, n) != getattr(defaults, n)}
    assert changed == set(RunSettings.model_fields) - {"base_url", "model"}  # every setting can be set
    # A new option must reach the run: by its name, through the SLO or timeouts, or be a switch of the command.
    unmapped = (
        set(CliOptions.model_fields)
        - set(RunSettings.model_fields)
        - SLO_AND_TIMEOUT_FIELDS
        - DEPLOYMENT_FIELDS
        - SWITCHES
    )
    assert not unmapped


def test_defaults_are_the_run_settings_defaults_and_flag_names_stay() -> None:
    options = parse_options(["--base-url", "http://h:8000/v1", "--model", "m"], environ={})
    assert options.run_settings() == RunSettings(base_url="http://h:8000/v1", model="m")
    flags = {a.option_strings[0] for a in build_parser()._actions if a.option_strings and a.dest != "help"}
    assert flags == FLAGS_SCRIPTS_USE


def test_the_api_key_flag_wins_over_the_environment_and_is_never_shown() -> None:
    argv = ["--base-url", "http://h/v1", "--model", "m", "--api-key", "sk-flag"]
    options = parse_options(argv, environ={"PROBE_API_KEY": KEY})
    assert options.api_key is not None and options.api_key.get_secret_value() == "sk-flag"
    assert "sk-flag" not in repr(options) and "sk-flag" not in options.run_settings().model_dump_json()
    assert parse_options(["--base-url", "http://h/v1"], environ={}).api_key is None


def test_no_db_stores_nothing_and_a_broken_database_only_warns(
    database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    output = tmp_path / "run.json"
    with serve_in_thread(defaults=Behaviour(ttft_ms=5, tpot_ms=1, tokens=4)) as server:
        run = ("--base-url", server.base_url, "--model", "fake", "--concurrency", "1", "--requests", "1", "--quiet")
        code, _, err = cli(*run, "--no-db", "--output", str(output))
        assert (code, err) == (EXIT_OK, "")
        assert json.loads(output.read_text())["run_id"] is None
        assert list_runs(_engine(database_url)) == []
        blocker = tmp_path / "a-file"
        blocker.write_text("")
        monkeypatch.setenv("DATABASE_URL", f"sqlite:///{blocker / 'sub' / 'x.db'}")  # its folder cannot exist
        from settings import get_settings

        get_settings.cache_clear()
        code, _, err = cli(*run, "--output", str(output))
    assert code == EXIT_OK and err.startswith("warning: the run will not be stored in the database")
    assert json.loads(output.read_text())["status"] == "completed"


def test_an_output_file_that_cannot_be_written_fails_the_command(tmp_path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    missing = tmp_path / "missing" / "run.json"
    with serve_in_thread(defaults=Behaviour(ttft_ms=5, tpot_ms=1, tokens=4)) as server:
        argv = ["--base-url", server.base_url, "--model", "fake", "--concurrency", "1", "--requests", "1"]
        code = run_cli([*argv, "--quiet", "--output", str(missing)], out=out, err=err)  # no sink: nothing stored
    assert code == EXIT_FAILED and err.getvalue().startswith(f"error: cannot write {missing}")


def test_list_models_and_test_connection() -> None:
    with serve_in_thread() as server:
        assert cli("--base-url", server.base_url, "--list-models") == (EXIT_OK, "fake\n", "")  # no database needed
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
