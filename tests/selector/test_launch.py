"""Every generated launch command parses with its engine's flags, as generated from the engines (engine_specs/)."""

import itertools
import shlex

import pytest

from catalog import load_engines
from selector import AdviceRequest, LaunchCommand, advise
from tests.selector.flag_specs import (
    OLLAMA_ENV,
    SPEC_FILES,
    SPECS,
    Refused,
    build_parser,
    check_ollama_env,
    check_trtllm_yaml,
    load_spec,
)

SCENARIOS = [
    {},
    {"gpu": "H100", "priority": "latency", "build_engines": "yes", "workload": "code"},
    {"gpu": "H100", "priority": "throughput", "workload": "rag", "model": "llama3.1-70b", "gpus": "2"},
    {"gpu": "A800", "ecosystem": "chinese", "model": "qwen2.5-14b", "concurrency": "64"},
    {"gpu": "A800", "gpus": "4", "model": "qwen2.5-72b", "priority": "throughput"},
    {"gpu": "A800", "gpus": "2", "model": "llama3.1-70b", "priority": "throughput", "concurrency": "64"},
    {"gpu": "L40S", "ecosystem": "hf", "workload": "agent"},
    {"gpu": "A10G", "qlora": "yes"},
    {"gpu": "M2 Ultra", "deploy": "apple", "model": "qwen2.5-32b"},
    {"gpu": "RTX 4090", "deploy": "edge"},
    {"gpu": "MI300X", "model": "qwen2.5-72b", "priority": "throughput"},
    {"gpu": "B200", "quant": "nvfp4"},
    {"gpu": "H100", "gpus": "8", "model": "qwen2.5-7b", "workload": "batch", "concurrency": "512"},
    {"gpu": "910B", "gpus": "4", "model": "qwen2.5-72b", "priority": "throughput"},
    {"gpu": "910B", "model": "qwen2.5-7b", "concurrency": "200"},  # KV offload through vllm-ascend
    {"gpu": "910C", "gpus": "8", "model": "qwen2.5-72b", "workload": "rag", "ecosystem": "chinese"},
]
LAUNCHABLE = [e.id for e in load_engines() if e.launchable]


def _commands() -> list[tuple[str, LaunchCommand]]:
    out = []
    for scenario, engine in itertools.product(SCENARIOS, ["auto", *LAUNCHABLE]):
        advice = advise(AdviceRequest.model_validate({**scenario, "engine": engine}))
        out.append((f"{scenario}-{engine}->{advice.engine}", advice.launch))
        if advice.runner_up_launch is not None:
            out.append((f"{scenario}-{engine}->runner-up {advice.runner_up}", advice.runner_up_launch))
    return out


COMMANDS = _commands()


def _parse(command: LaunchCommand) -> object:
    words = shlex.split(command.command_line)
    if command.engine_id == "ollama":
        env = dict(w.split("=", 1) for w in words if "=" in w)
        assert set(env) <= OLLAMA_ENV
        check_ollama_env(env)
        assert words[len(env) :] == ["ollama", "serve"]
        assert all(cmd[:2] == ("ollama", "pull") and len(cmd) == 3 for cmd in command.then)
        return env
    prefix, parser = SPECS[command.engine_id]
    assert words[: len(prefix)] == prefix
    if command.engine_id == "tensorrt-llm":
        for name, content in command.files.items():
            if name.endswith((".yml", ".yaml")):
                check_trtllm_yaml(content)
    return parser().parse_args(words[len(prefix) :])


def test_every_launchable_engine_is_exercised() -> None:
    assert {c.engine_id for _, c in COMMANDS} == set(LAUNCHABLE)


@pytest.mark.parametrize(("label", "command"), COMMANDS, ids=[label for label, _ in COMMANDS])
def test_command_parses_with_the_engines_documented_flags(label: str, command: LaunchCommand) -> None:
    try:
        _parse(command)
    except Refused as exc:
        pytest.fail(f"{command.command_line}\n-> {exc}")
    for word in ("--swap-space", "--speculative-model", "--num-speculative-tokens", "--ngram-prompt-lookup-max"):
        assert word not in command.command_line


def test_the_multi_line_form_is_the_same_command_as_the_one_line_form() -> None:
    for _, command in COMMANDS:
        body = command.shell
        for name, content in command.files.items():
            body = body.replace(f"cat > {name} <<'EOF'\n{content.rstrip()}\nEOF\n", "")
        for cmd in command.prepare:
            body = body.replace(shlex.join(cmd) + "\n", "", 1)
        for cmd in command.then:
            body = body.replace("\n" + shlex.join(cmd), "")
        # bash joins a backslash-newline; so does this test before splitting
        assert shlex.split(body.replace("\\\n", " ")) == shlex.split(command.command_line)


def test_vllm_ngram_speculation_uses_the_speculative_config_json() -> None:
    advice = advise(AdviceRequest(workload="code"))
    args = _parse(advice.launch)
    # Both ends of the n-gram size: with only the maximum, vLLM matches n-grams of that one size.
    assert args.speculative_config == {
        "method": "ngram",
        "num_speculative_tokens": 5,
        "prompt_lookup_min": 2,
        "prompt_lookup_max": 4,
    }


def test_tensorrt_llm_writes_its_yaml_options_file() -> None:
    advice = advise(AdviceRequest(gpu="h100-80gb-sxm", priority="latency", build_engines="yes", workload="code"))
    assert advice.engine == "tensorrt-llm"
    yaml = advice.launch.files["extra.yml"]
    assert "dtype: fp8" in yaml and "decoding_type: NGram" in yaml and "enable_chunked_prefill: true" in yaml
    assert _parse(advice.launch).extra_llm_api_options == "extra.yml"


def test_tensor_parallel_follows_the_memory_fit() -> None:
    advice = advise(AdviceRequest(gpu="h100-80gb-sxm", gpus=2, model="llama3.1-70b", priority="throughput"))
    assert _parse(advice.launch).tensor_parallel_size == advice.memory.split == 2
    replicas = advise(
        AdviceRequest(gpu="h100-80gb-sxm", gpus=8, workload="batch", concurrency=512, priority="throughput")
    )
    args = _parse(replicas.launch)
    assert args.tensor_parallel_size * (args.data_parallel_size or 1) == 8


def test_llama_cpp_shares_context_between_its_slots() -> None:
    advice = advise(AdviceRequest(gpu="apple-m2-ultra", deploy="apple", context=8192, concurrency=4))
    args = _parse(advice.launch)
    assert (args.parallel, args.ctx_size) == (4, 4 * 8192)


@pytest.mark.parametrize("engine", sorted(SPEC_FILES))
def test_engine_specs_say_which_release_and_how_they_were_made(engine: str) -> None:
    spec = load_spec(engine)
    assert spec["engine"] == engine
    assert spec["version"] and spec["generated_by"].startswith("scripts/engine_flags.py") and spec["generated_at"]
    assert spec["source"].get("package") or spec["source"].get("commit")


@pytest.mark.parametrize("engine", sorted(set(SPEC_FILES) - {"ollama"}))
def test_generated_parsers_refuse_unknown_flags_abbreviations_and_choices(engine: str) -> None:
    spec = load_spec(engine)
    parser = build_parser(spec)
    positionals = ["x" for o in spec["options"] if not o["option_strings"] and o["nargs"] in (None, 1)]
    registered = {s for o in spec["options"] for s in o["option_strings"]}
    with pytest.raises(Refused):
        parser.parse_args([*positionals, "--no-such-flag-anywhere"])
    long = next(s for o in spec["options"] for s in o["option_strings"] if len(s) > 8 and s[:-1] not in registered)
    with pytest.raises(Refused):
        parser.parse_args([*positionals, long[:-1], "1"])
    chosen = next(
        (o for o in spec["options"] if o["option_strings"] and o.get("choices") and o["action"] == "store"), None
    )
    if chosen is not None:
        with pytest.raises(Refused):
            parser.parse_args([*positionals, chosen["option_strings"][0], "not-a-real-choice"])
