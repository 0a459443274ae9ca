"""`python -m selector`: the same names as the URL, --json keys, and clear errors with the close matches."""

import json
import subprocess
import sys

import pytest

from selector.cli import main
from tests.support import ROOT


def test_json_has_the_documented_keys(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--gpu", "H100", "--workload", "rag", "--priority", "latency", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    for key in (
        "engine",
        "runner_up",
        "quantization",
        "kv_cache_dtype",
        "speculative",
        "launch_command",
        "memory",
        "reasons",
    ):
        assert key in data
    for key in ("weights_gb", "kv_bytes_per_token", "max_concurrent_sequences", "fits"):
        assert key in data["memory"]
    assert data["engine"] == "sglang" and data["runner_up"] == "vllm"
    assert data["launch_command"].startswith("python -m sglang.launch_server")
    assert all({"topic", "choice", "rule_id", "reason", "source"} <= set(r) for r in data["reasons"])


def test_flags_take_the_url_names_and_values(capsys: pytest.CaptureFixture[str]) -> None:
    argv = [
        "--gpu",
        "a800-40gb",
        "--gpus",
        "2",
        "--model",
        "llama 3.1 70b",
        "--workload",
        "batch",
        "--priority",
        "throughput",
        "--ecosystem",
        "chinese",
        "--deploy",
        "datacenter",
        "--build_engines",
        "no",
        "--context",
        "8192",
        "--concurrency",
        "32",
        "--json",
    ]
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["gpu"], data["gpus"], data["model"], data["engine"]) == (
        "a800-40gb-sxm",
        2,
        "llama3.1-70b",
        "lmdeploy",
    )
    assert data["memory"]["context_tokens"] == 8192


def test_text_output_reads_like_the_page(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--gpu", "A800", "--model", "qwen2.5-7b", "--workload", "code"]) == 0
    out = capsys.readouterr().out
    assert "vLLM with AWQ" in out and "--speculative-config" in out and "Why:" in out and "Runner-up (SGLang)" in out


def test_unknown_names_exit_2_and_list_the_close_matches(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--gpu", "H1000", "--model", "qwen2.5"]) == 2
    err = capsys.readouterr().err
    assert "--gpu: GPU 'H1000' is not in the catalog; did you mean: h100-80gb-sxm" in err
    assert "--model: model 'qwen2.5'" in err and "qwen2.5-7b" in err
    assert "Traceback" not in err


def test_bad_choice_is_refused_by_argparse(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--workload", "poetry"])
    assert exit_info.value.code == 2
    assert "invalid choice: 'poetry'" in capsys.readouterr().err


def test_model_that_fits_nowhere_says_so_with_the_nearest_setup(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--gpu", "RTX 4090", "--gpus", "8", "--model", "llama3.1-405b", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["memory"]["fits"] is False
    assert any(
        "does not fit on any count (1-8) of RTX 4090" in w and "Nearest valid setup" in w for w in data["warnings"]
    )


def test_python_dash_m_selector_runs() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "selector", "--gpu", "M2 Ultra", "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["engine"] == "llama.cpp"
