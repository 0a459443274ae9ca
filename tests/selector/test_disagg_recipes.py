"""Separate prefill and decode pools: when the rules say they could pay, the xPyD layout, and recipes that parse."""

import argparse
import json
import shlex
from pathlib import Path

import jsonschema
import pytest
import yaml

from catalog import find_model
from selector import load_rules
from selector.disagg import KEEPS_ONE_IDS, PAYS_IDS, recipes, verdict, xpyd
from tests.selector.flag_specs import SPECS, load_spec

QWEN = find_model("qwen3-32b")
DEEPSEEK = find_model("deepseek-r1")


def test_long_prompts_and_a_tight_tpot_could_pay_with_the_rule_and_its_source() -> None:
    found = verdict(model=QWEN, input_tokens=4000, tpot_ms=10, gpus=32, copy_gpus=4, gpus_per_node=8)
    assert found.could_pay
    (reason,) = found.reasons
    assert reason.id == "disagg.long_prompts_tight_tpot" and "4000" in reason.text and "DistServe" in reason.source


def test_short_prompts_keep_one_pool() -> None:
    found = verdict(model=QWEN, input_tokens=200, tpot_ms=10, gpus=32, copy_gpus=4, gpus_per_node=8)
    assert not found.could_pay and [r.id for r in found.reasons] == ["disagg.short_prompts"]


def test_too_few_gpus_keep_one_pool_whatever_else_holds() -> None:
    found = verdict(model=QWEN, input_tokens=8000, tpot_ms=5, gpus=4, copy_gpus=4, gpus_per_node=8)
    assert not found.could_pay and [r.id for r in found.reasons] == ["disagg.too_few_gpus"]


def test_moe_across_nodes_and_measured_interference_could_pay_in_chinese_too() -> None:
    found = verdict(
        model=DEEPSEEK,
        input_tokens=1000,
        tpot_ms=50,
        gpus=32,
        copy_gpus=8,
        gpus_per_node=8,
        interference_ratio=1.6,
        language="zh",
    )
    assert found.could_pay
    assert {r.id for r in found.reasons} == {"disagg.interference", "disagg.moe_multi_node"}
    assert all(any("\u4e00" <= ch <= "\u9fff" for ch in r.text) for r in found.reasons)
    below = verdict(
        model=QWEN, input_tokens=1000, tpot_ms=50, gpus=32, copy_gpus=4, gpus_per_node=8, interference_ratio=1.1
    )
    assert not below.could_pay and not below.reasons


def test_every_disaggregation_rule_has_a_reason_in_both_languages_and_a_source() -> None:
    book = load_rules().disaggregation
    for rule in (book.long_prompts_tight_tpot, book.short_prompts, book.interference, book.moe_multi_node):
        assert rule.reason and rule.reason_zh and rule.source
    assert {book.too_few_gpus.id, book.short_prompts.id} == set(KEEPS_ONE_IDS)
    assert len(PAYS_IDS) == 3


def test_xpyd_names_the_layout() -> None:
    assert xpyd(4, 1, 1, 4) == "4P1D (prefill 4 x 1 GPU, decode 1 x 4 GPU)"


def _parsed(engine: str, command: str) -> argparse.Namespace:
    words = shlex.split(command.split("\n", 1)[1])
    prefix, parser = SPECS[engine]
    assert words[: len(prefix)] == prefix
    return parser().parse_args(words[len(prefix) :])


@pytest.mark.parametrize("engine", ["vllm", "sglang", "tensorrt-llm"])
def test_every_server_command_parses_with_the_engines_own_flags(engine: str) -> None:
    (recipe,) = [r for r in recipes(QWEN, QWEN.fp8_repo, (2, 1), (1, 4)) if r.engine == engine]
    servers = [c for c in recipe.commands if c.startswith(("# prefill", "# decode", "# context", "# generation"))]
    assert len(servers) == 3  # 2 prefill + 1 decode replicas
    parsed = [_parsed(engine, c) for c in servers]
    assert load_spec(engine).get("version") and recipe.checked_against
    if engine == "sglang":
        assert [a.disaggregation_mode for a in parsed] == ["prefill", "prefill", "decode"]
        router = recipe.commands[-1]
        assert "--pd-disaggregation" in router and router.count("--prefill") == 2 and router.count("--decode") == 1
    if engine == "vllm":
        assert all('"kv_connector":"NixlConnector"' in a.kv_transfer_config for a in parsed)
    if engine == "tensorrt-llm":
        assert recipe.commands[-1].endswith("trtllm-serve disaggregated -c disagg_config.yaml")
        assert "num_instances: 2" in recipe.files["disagg_config.yaml"]
        assert "backend: DEFAULT" in recipe.files["context.yml"]


def test_dynamo_runs_a_frontend_and_vllm_workers_whose_engine_flags_parse_with_vllms_parser() -> None:
    (recipe,) = [r for r in recipes(QWEN, QWEN.fp8_repo, (2, 1), (1, 4)) if r.engine == "dynamo"]
    assert recipe.commands[0].endswith("python -m dynamo.frontend --http-port 8000")
    modes, tensor = [], []
    for command in recipe.commands[1:]:
        words = shlex.split(command.split("\n", 1)[1])
        assert words[:3] == ["python", "-m", "dynamo.vllm"]
        at = words.index("--disaggregation-mode")  # Dynamo's own flag (backend_args.py); the rest are vLLM's
        modes.append(words[at + 1])
        parser = SPECS["vllm"][1]
        parsed = parser().parse_args(words[3:at] + words[at + 2 :])
        assert parsed.model == QWEN.fp8_repo and '"kv_connector":"NixlConnector"' in parsed.kv_transfer_config
        tensor.append(parsed.tensor_parallel_size)
    assert modes == ["prefill", "prefill", "decode"] and [int(t) for t in tensor] == [1, 1, 4]
    assert "ai-dynamo/dynamo 1.2.0" in recipe.checked_against


CHART = Path(__file__).parent / "engine_specs" / "llm-d-modelservice"


def _over(defaults: dict, values: dict) -> dict:
    """values over defaults, as `helm install -f` merges them (maps key by key, anything else replaced)."""
    merged = dict(defaults)
    for key, value in values.items():
        both = isinstance(value, dict) and isinstance(defaults.get(key), dict)
        merged[key] = _over(defaults[key], value) if both else value
    return merged


def test_llm_d_values_pass_the_charts_own_schema_with_the_layouts_pools() -> None:
    (recipe,) = [r for r in recipes(QWEN, QWEN.fp8_repo, (2, 1), (1, 4)) if r.engine == "llm-d"]
    values = yaml.safe_load(recipe.files["values-pd.yaml"])
    schema = json.loads((CHART / "values.schema.json").read_text(encoding="utf-8"))
    validator = jsonschema.Draft7Validator(schema)
    merged = _over(yaml.safe_load((CHART / "values.yaml").read_text(encoding="utf-8")), values)
    assert [e.message for e in validator.iter_errors(merged)] == []
    misspelt = _over(merged, {"decode": {"parallelism": {"tensr": 4}}})
    assert list(validator.iter_errors(misspelt))  # the schema refuses a key the chart does not have
    pools = {role: (values[role]["replicas"], values[role]["parallelism"]["tensor"]) for role in ("prefill", "decode")}
    assert pools == {"prefill": (2, 1), "decode": (1, 4)}
    assert values["modelArtifacts"]["uri"] == f"hf://{QWEN.fp8_repo}"
    for role in ("prefill", "decode"):
        (container,) = values[role]["containers"]
        assert container["modelCommand"] == "vllmServe"
        parser = SPECS["vllm"][1]
        parsed = parser().parse_args(container["args"])
        assert '"kv_connector":"NixlConnector"' in parsed.kv_transfer_config
    assert (
        "helm install pd llm-d-modelservice/llm-d-modelservice --version v0.4.12 -f values-pd.yaml"
        in (recipe.commands[0])
    )
