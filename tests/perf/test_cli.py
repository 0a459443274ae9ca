"""`python -m perf`: the JSON contract and the exit codes scripts rely on."""

import json
import subprocess
import sys

import pytest

from perf.cli import main


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_json_contract(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys,
        *[
            "--gpu",
            "H100",
            "--gpus",
            "1",
            "--model",
            "llama-3.1-8b",
            "--engine",
            "vllm",
            "--quant",
            "fp8",
            "--input-tokens",
            "1000",
        ],
        *["--output-tokens", "200", "--concurrency", "1,10,50,100", "--json"],
    )
    assert code == 0
    data = json.loads(out)
    assert [level["concurrency"] for level in data["levels"]] == [1, 10, 50, 100]
    for level in data["levels"]:
        assert {"concurrency", "output_tok_s", "req_s", "ttft_ms", "tpot_ms", "e2e_ms"} <= level.keys()
        assert level["ttft_ms"]["p50"] <= level["ttft_ms"]["p99"]
        assert level["tpot_ms"]["p50"] > 0 and level["e2e_ms"]["p50"] > level["ttft_ms"]["p50"]
    tok_s = [level["output_tok_s"] for level in data["levels"]]
    assert tok_s == sorted(tok_s), "more users, more tokens per second until saturation"
    assert data["max_output_tok_s"] >= max(tok_s)
    assert isinstance(data["best_concurrency_within_slo"], int)
    assert 0 < data["band"]["low_ratio"] < 1 < data["band"]["high_ratio"]
    assert data["basis"]["kind"] == "fitted" and data["estimate"] is True
    assert data["quant"] == "fp8" and data["gpu"] == "h100-80gb-sxm"


def test_max_and_request_rate(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys, *["--gpu", "h100", "--model", "llama3.1-8b", "--engine", "sglang", "--concurrency", "max"], "--json"
    )
    data = json.loads(out)
    assert code == 0 and data["levels"][-1]["output_tok_s"] == data["max_output_tok_s"]
    code, out, _ = run(
        capsys,
        *["--gpu", "h100", "--model", "llama3.1-8b", "--engine", "vllm", "--concurrency", "1"],
        "--json",
        "--request-rate",
        "2,8",
    )
    rates = [level["request_rate_rps"] for level in json.loads(out)["levels"] if level["request_rate_rps"]]
    assert code == 0 and rates == [2.0, 8.0]
    assert json.loads(out)["best_request_rate_within_slo_rps"] > 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ("--gpu H100 --model llama3.1-8b --engine ollama", "no estimate for 'ollama'"),
        ("--gpu H1000 --model llama3.1-8b --engine vllm", "gpu: GPU 'H1000'"),
        ("--gpu H100 --model llama-9 --engine vllm", "model:"),
        ("--gpu cpu --model llama3.1-8b --engine vllm", "gpu: no estimate"),
        ("--gpu H100 --model llama3.1-8b --engine vllm --concurrency 0", "concurrency"),
    ],
)
def test_bad_input_exits_2_with_a_message(capsys: pytest.CaptureFixture[str], args: str, message: str) -> None:
    code, out, err = run(capsys, *args.split())
    assert code == 2 and out == ""
    assert message in err and "Traceback" not in err


def test_module_entry_point_prints_a_labelled_estimate() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "perf", "--gpu", "A800", "--model", "qwen2.5-3b", "--engine", "vllm"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ESTIMATE") and "band" in done.stdout


def test_a_probe_json_calibrates_the_estimate(capsys: pytest.CaptureFixture[str], tmp_path: object) -> None:
    from pathlib import Path

    args = [
        "--gpu",
        "H100",
        "--model",
        "llama3.1-8b",
        "--engine",
        "vllm",
        "--quant",
        "fp8",
        "--concurrency",
        "1,16",
        "--json",
    ]
    code, out, _ = run(capsys, *args)
    fitted = json.loads(out)
    levels = [
        {
            "concurrency": level["concurrency"],
            "completed": 32,
            "input_tokens_per_request": 1000,
            "output_tokens_per_request": 200,
            "ttft_ms": {"p50": level["ttft_ms"]["p50"]},
            "tpot_ms": {"p50": level["tpot_ms"]["p50"] * 1.5},
            "output_tok_s": None,
        }
        for level in fitted["levels"]
    ]
    path = Path(str(tmp_path)) / "run.json"
    path.write_text(json.dumps({"run_id": "9f3e2a", "levels": levels}), encoding="utf-8")
    code, out, _ = run(capsys, *args, "--calibrate-from", str(path))
    calibrated = json.loads(out)
    assert code == 0 and calibrated["basis"]["kind"] == "calibrated" and calibrated["basis"]["run_ids"] == ["9f3e2a"]
    assert calibrated["levels"][1]["tpot_ms"]["p50"] == pytest.approx(
        fitted["levels"][1]["tpot_ms"]["p50"] * 1.5, rel=0.05
    )
    assert calibrated["band"]["high_ratio"] - calibrated["band"]["low_ratio"] < (
        fitted["band"]["high_ratio"] - fitted["band"]["low_ratio"]
    )
