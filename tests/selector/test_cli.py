"""`python -m selector`: the same names as the URL, --json keys, and clear errors with the close matches."""

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from selector.cli import main
from selector.hfconfig import parse_config
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


# -- issue 9: honest names and --config ----------------------------------------------------------------------------

CONFIGS = Path(__file__).parent / "configs"


@pytest.mark.parametrize(
    ("argv", "flag", "words"),
    [
        (["--quant", "y"], "--quant", ["'y' is not in the catalog", "allowed: auto, bf16", "nf4"]),
        (["--quant", "awg"], "--quant", ["did you mean: awq?", "Allowed: auto"]),
        (["--engine", "x"], "--engine", ["'x' is not in the catalog", "allowed: auto, vllm"]),
        (["--gpu", "nope"], "--gpu", ["'nope' is not in the catalog", "allowed: ", "a800-40gb-sxm"]),
        (["--model", "gpt-17"], "--model", ["'gpt-17' is not in the catalog", "allowed: ", "custom"]),
    ],
)
def test_a_name_that_is_not_close_exits_2_naming_the_flag_and_the_allowed_values(
    argv: list[str], flag: str, words: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"error: {flag}: ")
    for word in words:
        assert word in captured.err
    assert "Traceback" not in captured.err


def test_quant_y_is_never_read_as_nf4(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--quant", "y", "--json"]) == 2
    err = capsys.readouterr().err
    assert "did you mean" not in err and "bitsandbytes" not in err


def _moe_config() -> Path:
    return next(p for p in sorted(CONFIGS.glob("*.json")) if parse_config(p.read_text()).fields["experts"])


def test_config_reads_a_model_from_its_config_json(capsys: pytest.CaptureFixture[str]) -> None:
    path = _moe_config()
    fields = parse_config(path.read_text()).fields
    assert main(["--config", str(path), "--gpu", "h200", "--gpus", "8", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["model"] == "custom"
    facts = data["model_facts"]
    assert (facts["layers"], facts["experts"], facts["experts_per_token"]) == (
        fields["layers"],
        fields["experts"],
        fields["experts_per_token"],
    )
    assert facts["total_params_b"] == pytest.approx(fields["params_b"])
    assert facts["name"] == path.stem


def test_flags_given_on_the_command_line_override_the_config(capsys: pytest.CaptureFixture[str]) -> None:
    path = _moe_config()
    argv = ["--config", str(path), "--gpu", "h200", "--gpus", "8", "--experts-per-token", "2", "--custom_name", "mine"]
    assert main([*argv, "--json"]) == 0
    facts = json.loads(capsys.readouterr().out)["model_facts"]
    assert facts["experts_per_token"] == 2 and facts["name"] == "mine"
    assert main([*argv, "--model", "qwen2.5-7b", "--json"]) == 0  # an explicit --model wins over model=custom
    assert json.loads(capsys.readouterr().out)["model"] == "qwen2.5-7b"


def test_text_output_shows_the_model_facts_and_the_layout(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--config", str(_moe_config()), "--gpu", "h200", "--gpus", "8"]) == 0
    out = capsys.readouterr().out
    assert "Model:" in out and " experts, " in out and "Layout:       TP " in out


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda tmp: tmp / "missing.json", ["cannot read", "no such file"]),
        (lambda tmp: tmp, ["cannot read", "directory"]),
        (lambda tmp: _write(tmp / "bad.json", "{not json"), ["not valid JSON"]),
        (
            lambda tmp: _write(tmp / "mamba.json", '{"architectures": ["MambaForCausalLM"], "d_model": 2560}'),
            ["MambaForCausalLM", "hidden_size", "num_hidden_layers", "max_position_embeddings"],
        ),
    ],
    ids=["missing", "directory", "not-json", "missing-fields"],
)
def test_a_config_that_cannot_be_used_exits_2_with_a_clear_message(
    make: Callable[[Path], Path], words: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--config", str(make(tmp_path))]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --config: ")
    for word in words:
        assert word in err
    assert "Traceback" not in err


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path
