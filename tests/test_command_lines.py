"""The command lines say what they did: a forgiving name match prints a note, and --help lists one spelling per flag."""

import argparse
import io
import json
import os
import re
import subprocess
import sys

import pytest

from catalog import find_engine, find_gpu, find_model, find_quant
from catalog.matching import ForgivenMatch, forgiven_matches
from commands import BROKEN_PIPE_EXIT
from perf.cli import build_parser as perf_parser
from perf.cli import main as perf_main
from probes.cli import build_parser as probes_parser
from probes.cli import run_cli
from selector.cli import build_parser as selector_parser
from selector.cli import main as selector_main
from tests.support import ROOT

PERF = ["--gpu", "h100", "--model", "m", "--engine", "vllm"]
NOTE = "note: --model 'lama3.1-70b' matched 'Llama-3.1-70B-Instruct'"


def test_a_forgiving_match_is_recorded_with_the_name_it_became_and_an_exact_one_is_not() -> None:
    with forgiven_matches() as forgiven:
        find_model("lama3.1-70b")
        find_model("lama3.1-70b")  # said once
        find_model("Llama-3.1-70B-Instruct")
        find_model("LLAMA3.1 70b")  # case, spaces and punctuation aside, the preset's id
        find_gpu("NVIDIA H100 80GB SXM")
        find_engine("VLLM")
        find_quant("awq")
        find_quant("bitsandbytes")  # a piece of 'QLoRA NF4 (bitsandbytes)'
    assert forgiven == [
        ForgivenMatch("model", "lama3.1-70b", "Llama-3.1-70B-Instruct"),
        ForgivenMatch("quantization", "bitsandbytes", find_quant("nf4").name),
    ]


def test_outside_the_block_nothing_is_collected() -> None:
    find_model("lama3.1-70b")
    with forgiven_matches() as forgiven:
        pass
    assert forgiven == []


def test_the_advisor_command_line_notes_a_forgiving_model_name(capsys: pytest.CaptureFixture[str]) -> None:
    assert selector_main(["--gpu", "H100", "--model", "lama3.1-70b", "--json"]) == 0
    captured = capsys.readouterr()
    assert NOTE in captured.err.splitlines()
    assert json.loads(captured.out)["model_facts"]["layers"] == 80


def test_the_advisor_command_line_says_nothing_for_exact_names(capsys: pytest.CaptureFixture[str]) -> None:
    assert selector_main(["--gpu", "h100", "--model", "Llama-3.1-70B-Instruct", "--engine", "vllm", "--json"]) == 0
    assert "note:" not in capsys.readouterr().err


def test_the_estimate_command_line_notes_a_forgiving_model_name(capsys: pytest.CaptureFixture[str]) -> None:
    code = perf_main(["--gpu", "h100", "--model", "lama3.1-70b", "--gpus", "4", "--engine", "vllm", "--json"])
    assert code == 0
    assert NOTE in capsys.readouterr().err.splitlines()


def test_the_probe_command_line_notes_a_forgiving_deployment_model() -> None:
    err = io.StringIO()
    argv = ["--base-url", "http://127.0.0.1:9/v1", "--list-models", "--deploy-model", "lama3.1-70b", "--no-db"]
    run_cli(argv, io.StringIO(), err)
    assert "note: --deploy-model 'lama3.1-70b' matched 'Llama-3.1-70B-Instruct'" in err.getvalue().splitlines()


@pytest.mark.parametrize("parser", [selector_parser, perf_parser, probes_parser], ids=["selector", "perf", "probes"])
def test_help_lists_one_spelling_per_flag(parser: "type[argparse.ArgumentParser]") -> None:
    built = parser()
    shown = [a for a in built._actions if a.help != argparse.SUPPRESS and a.option_strings]
    assert all(len(a.option_strings) == 1 for a in shown if a.dest != "help")
    dests = [a.dest for a in shown]
    assert len(dests) == len(set(dests)), "a setting listed under two flags"
    listed = re.findall(r"(?<![\w-])--[a-z][a-z0-9_-]*", built.format_help())
    assert not [flag for flag in listed if "_" in flag], "--help spells flags with hyphens"


def test_the_other_spelling_is_still_accepted(capsys: pytest.CaptureFixture[str]) -> None:
    outputs = []
    for flag, build in (("--build_engines", "no"), ("--build-engines", "no")):
        assert selector_main(["--gpu", "H100", flag, build, "--in_tokens", "500", "--json"]) == 0
        outputs.append(json.loads(capsys.readouterr().out))
    assert outputs[0] == outputs[1]
    assert perf_parser().parse_args([*PERF, "--kv-cache", "fp8"]).kv_cache == "fp8"
    assert perf_parser().parse_args([*PERF, "--kv-cache-dtype", "fp8"]).kv_cache == "fp8"


@pytest.mark.parametrize(
    "command",
    [
        ["perf", "--gpu", "h100", "--model", "llama-3.1-8b", "--engine", "vllm", "--concurrency", "1"],
        ["selector", "--gpu", "h100", "--model", "llama-3.1-8b"],
        ["tco", "prices", "show", "--gpu", "H100", "--json"],
    ],
    ids=lambda c: c[0],
)
def test_a_reader_that_stops_early_ends_the_command_quietly(command: list[str]) -> None:
    """`python -m perf ... | head -1`: the pipe's reader is gone before the command writes; no traceback follows."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader has already stopped reading
    try:
        done = subprocess.run(
            [sys.executable, "-m", *command],
            stdout=write_end,
            stderr=subprocess.PIPE,
            cwd=ROOT,
            timeout=120,
            check=False,
        )
    finally:
        os.close(write_end)
    assert "Traceback" not in done.stderr.decode(), done.stderr.decode()
    assert done.returncode == BROKEN_PIPE_EXIT
