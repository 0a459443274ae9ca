"""`python -m perf`: the JSON contract and the exit codes scripts rely on."""

import json
import subprocess
import sys

import pytest

from perf.cli import _request, build_parser, main


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
        (
            "--gpu H100 --model llama3.1-8b --kv-cache-dtype banana",
            "--kv-cache-dtype: KV cache dtype 'banana' is not known; allowed: auto (the advisor's), bf16, bfloat16",
        ),
        ("--gpu H100 --model llama3.1-8b --engine vllm --kv-cache-dtype int8", "vLLM has no int8 KV cache"),
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


def test_the_new_contract_keys_bands_engine_version_and_layout(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys,
        "--gpu",
        "h100",
        "--gpus",
        "2",
        "--model",
        "llama3.1-70b",
        "--engine",
        "vllm",
        "--quant",
        "fp8",
        "--json",
    )
    data = json.loads(out)
    assert code == 0
    assert set(data["bands"]) == {"output_tok_s", "tpot_ms", "ttft_ms"}
    for band in data["bands"].values():
        assert set(band) == {"low_ratio", "high_ratio"} and 0 < band["low_ratio"] < 1 < band["high_ratio"]
    assert data["bands"]["output_tok_s"]["low_ratio"] == data["band"]["low_ratio"], "the old band is the tok/s band"
    assert data["engine_version"] and data["engine_version"][0].isdigit(), "the newest release with measured data"
    assert {"tp", "pp", "ep", "dp"} <= data["layout"].keys()
    assert data["layout"]["tp"] * data["layout"]["pp"] * data["layout"]["dp"] == data["gpus"] == 2
    level = data["levels"][0]
    assert {"mean", "p50", "p99"} <= level["ttft_ms"].keys()


def test_a_release_without_measured_data_is_extrapolated_and_wider(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--gpu", "h100", "--model", "llama3.1-8b", "--engine", "vllm", "--quant", "fp8", "--json"]
    _, out, _ = run(capsys, *args)
    newest = json.loads(out)
    _, out, _ = run(capsys, *args, "--engine-version", "0.33.0")
    future = json.loads(out)
    assert newest["basis"]["kind"] == "fitted" and future["basis"]["kind"] == "extrapolated"
    assert future["engine_version"] == "0.33.0" and "no measured data of vllm 0.33.0" in future["basis"]["text"]
    for metric in ("output_tok_s", "tpot_ms", "ttft_ms"):
        wide, narrow = future["bands"][metric], newest["bands"][metric]
        assert wide["high_ratio"] - wide["low_ratio"] >= narrow["high_ratio"] - narrow["low_ratio"]


@pytest.mark.parametrize("alias", ["trtllm", "trt-llm", "TensorRT-LLM", "tensorrt-llm"])
def test_engine_aliases(capsys: pytest.CaptureFixture[str], alias: str) -> None:
    code, out, _ = run(capsys, "--gpu", "h100", "--model", "llama3.1-8b", "--engine", alias, "--json")
    assert code == 0 and json.loads(out)["engine"] == "tensorrt-llm"


def test_without_engine_the_advisors_engine_is_estimated(capsys: pytest.CaptureFixture[str]) -> None:
    # As on /selector: the advisor picks the engine (for an A800 and the handbook's defaults, vLLM), and the
    # estimate is the one `--engine vllm` gives.
    base = ["--gpu", "A800", "--gpus", "2", "--model", "llama3.1-70b", "--concurrency", "1,10", "--json"]
    code, out, _ = run(capsys, *base)
    assert code == 0, out
    advised = json.loads(out)
    assert advised["engine"] == "vllm"
    _, pinned, _ = run(capsys, *base, "--engine", "vllm")
    assert advised["levels"] == json.loads(pinned)["levels"]
    # Where the advisor's engine has no step-time model, the message names it as the advisor's pick, and the way out.
    code, out, err = run(capsys, "--gpu", "M2 Ultra", "--model", "qwen2.5-7b")
    assert code == 2 and "no estimate for 'llama.cpp', the advisor's engine" in err and "pass --engine" in err


def test_layout_flags_set_the_layout_and_are_never_taken_for_another_flag(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--gpu", "h100", "--model", "llama3.1-8b", "--engine", "vllm", "--tp", "2", "--json")
    data = json.loads(out)
    assert code == 0 and data["layout"]["tp"] == 2 and data["gpus"] == 2
    assert data["slo"]["tpot_p50_ms"] != 2, "--tp is tensor parallelism, not an abbreviation of --tpot-p50-ms"
    with pytest.raises(SystemExit):
        main(["--gpu", "h100", "--model", "llama3.1-8b", "--engine", "vllm", "--tpot", "30"])
    assert "unrecognized arguments: --tpot" in capsys.readouterr().err


def test_moe_layout_with_expert_and_data_parallelism(capsys: pytest.CaptureFixture[str]) -> None:
    base = ["--gpu", "h200", "--model", "deepseek-r1", "--engine", "sglang", "--quant", "fp8", "--json"]
    code, out, _ = run(capsys, *base, "--tp", "1", "--dp", "8", "--ep", "8", "--concurrency", "64")
    dp = json.loads(out)
    code2, out, _ = run(capsys, *base, "--tp", "8", "--concurrency", "64")
    tp = json.loads(out)
    assert code == code2 == 0
    assert (dp["layout"]["dp"], dp["layout"]["ep"]) == (8, 8)
    assert dp["kv_capacity_tokens"] > 4 * tp["kv_capacity_tokens"], "attention DP shards the MLA cache by rank"
    code, _, err = run(capsys, "--gpu", "h100", "--model", "llama3.1-8b", "--engine", "vllm", "--ep", "2")
    assert code == 2 and "ep: " in err and "no experts" in err


def test_layouts_the_engines_refuse_are_explained(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "--gpu", "h100", "--model", "llama3.1-70b", "--engine", "vllm", "--tp", "3")
    assert code == 2 and "tp: the engines refuse --tp 3" in err and "attention heads" in err
    code, out, _ = run(capsys, "--gpu", "h100", "--gpus", "3", "--model", "llama3.1-70b", "--engine", "vllm", "--json")
    data = json.loads(out)
    assert code == 0 and data["gpus"] != 3
    assert any("3 GPUs: estimated per copy" in n for n in data["notes"])


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--concurrency", "1,abc", "--concurrency: 'abc' is not a whole number"),
        ("--gpus", "x", "--gpus: 'x' is not a whole number"),
        ("--gpus", "0", "--gpus: 0 is out of range: it must be at least 1"),
        ("--prefix-cache-hit", "2", "--prefix-cache-hit: 2"),
        ("--request-rate", "1,x", "--request-rate: 'x' is not a number"),
        ("--draft", "foo", "--draft: 'foo' is not one of"),
        ("--max-num-seqs", "-1", "--max-num-seqs: -1 is out of range"),
    ],
)
def test_bad_values_name_the_flag_and_what_is_allowed(
    capsys: pytest.CaptureFixture[str], flag: str, value: str, message: str
) -> None:
    code, out, err = run(capsys, "--gpu", "h100", "--model", "llama3.1-8b", "--engine", "vllm", flag, value)
    assert code == 2 and out == "" and message in err
    assert "pydantic" not in err and "http" not in err and "Input should" not in err


def test_kv_cache_dtype_and_help_that_names_real_flags(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys, "--gpu", "h100", "--model", "llama3.1-8b", "--engine", "vllm", "--kv-cache-dtype", "fp8", "--json"
    )
    assert code == 0 and json.loads(out)["kv_cache_dtype"] == "fp8"
    with pytest.raises(SystemExit):
        main(["--help"])
    help_text = capsys.readouterr().out
    assert "python -m probes ... --output RUN.json" in help_text and "probes --json" not in help_text
    for flag in ("--engine-version", "--tp", "--pp", "--ep", "--dp", "--max-num-seqs", "--kv-cache-dtype"):
        assert flag in help_text


def test_a_model_outside_the_catalog_is_estimated_from_its_config_json(capsys: pytest.CaptureFixture[str]) -> None:
    from tests.support import ROOT

    config = ROOT / "tests" / "selector" / "configs" / "qwen3-30b-a3b.json"
    code, out, err = run(capsys, "--config", str(config), "--gpu", "h100", "--engine", "vllm", "--json")
    data = json.loads(out)
    assert code == 0, err
    assert data["model"] == "custom" and data["levels"][0]["output_tok_s"] > 0
    code, _, err = run(capsys, "--gpu", "h100", "--engine", "vllm")
    assert code == 2 and "--model: give a catalog model, or --config" in err
    code, _, err = run(capsys, "--config", "/nonexistent/config.json", "--gpu", "h100", "--engine", "vllm")
    assert code == 2 and "--config: cannot read" in err


def _help_of(flag: str, help_text: str) -> str:
    """The help of one flag in --help's text (its lines up to the next flag)."""
    import re

    match = re.search(rf"^  {re.escape(flag)}\b(.*?)(?=^  -|\Z)", help_text, re.S | re.M)
    assert match, f"{flag} is not in --help"
    return " ".join(match.group(1).split())


def test_each_request_field_has_exactly_one_flag_and_help_shows_one_spelling() -> None:
    from perf.flags import flags
    from perf.inputs import PerfRequest

    fields = [
        f"{name}.{sub}" if name == "slo" else name
        for name, info in PerfRequest.model_fields.items()
        for sub in (info.annotation.model_fields if name == "slo" else [""])  # type: ignore[union-attr]
    ]
    setting = {field: [f.names[0] for f in flags() if field in f.fields] for field in fields}
    assert {field: len(names) for field, names in setting.items()} == dict.fromkeys(fields, 1), setting
    assert setting["max_throughput"] == ["--concurrency"] and setting["custom"] == ["--config"]
    help_text = build_parser().format_help()
    assert "--kv-cache-dtype KV_CACHE_DTYPE" in help_text and "--kv-cache " not in help_text, "one spelling shown"


def test_help_defaults_are_the_request_models_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    import re

    from perf.flags import flags
    from perf.inputs import PerfRequest

    help_text = build_parser().format_help()
    required = ["--gpu", "h100", "--model", "llama3.1-8b"]
    bare = PerfRequest(gpu="h100", model="llama3.1-8b")
    assert _request(build_parser().parse_args(required)) == bare, "a flag not given is the model's default"
    shown = 0
    for flag in flags():
        stated = re.search(r"\(default: ([^;)]+)[;)]", _help_of(flag.names[0], help_text))
        outer, _, inner = flag.field.partition(".")
        model_default = getattr(getattr(bare, outer), inner) if inner else getattr(bare, outer)
        if stated is None:  # no default to state: required, a switch, or none
            assert flag.info.is_required() or model_default in (None, "", ()) or isinstance(model_default, bool)
            continue
        if model_default in (None, ""):  # unset: the description words what is used (the advisor's, ...)
            continue
        shown += 1
        parsed = _request(build_parser().parse_args([*required, flag.names[0], stated.group(1)]))
        got = getattr(getattr(parsed, outer), inner) if inner else getattr(parsed, outer)
        assert got == model_default, f"{flag.names[0]}: --help says {stated.group(1)}, the model {model_default}"
    assert shown >= 12


def test_a_refit_reports_the_held_out_errors_by_source_first() -> None:
    """`python -m perf fit` leads with the by-source medians the docs report, not the by-group ones."""
    from perf.coefficients import load_coefficients
    from perf.refit import summary

    ape = load_coefficients().held_out_median_ape
    line = summary(ape)
    assert line.startswith(f"held-out median APE by source: TPOT {ape['tpot_by_source']:.1%}, ")
    assert f"TTFT {ape['ttft_by_source']:.1%} (by group: TPOT {ape['tpot']:.1%}, " in line


def test_the_engines_own_kv_dtype_spellings_are_read_as_the_catalog_names_them(
    capsys: pytest.CaptureFixture[str],
) -> None:
    base = ("--gpu", "h100", "--model", "llama3.1-8b", "--engine", "vllm", "--json")
    figures = {}
    for given in ("fp8", "fp8_e5m2", "FP8_E4M3", "bfloat16", "bf16"):
        code, out, err = run(capsys, *base, "--kv-cache-dtype", given)
        assert code == 0, err
        result = json.loads(out)
        figures[given] = (result["kv_cache_dtype"], result["levels"][0]["tpot_ms"])
    assert figures["fp8_e5m2"] == figures["FP8_E4M3"] == figures["fp8"] and figures["fp8"][0] == "fp8"
    assert figures["bfloat16"] == figures["bf16"] and figures["bf16"][0] == "auto"
