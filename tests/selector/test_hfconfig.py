"""config.json parsing: each family's published config gives the catalog's facts; bad configs name what is missing."""

import json
from pathlib import Path

import pytest

from catalog.models import find_model
from selector import AdviceRequest, advise
from selector.hfconfig import ConfigError, parse_config

CONFIGS = Path(__file__).parent / "configs"
FIXTURES = sorted(CONFIGS.glob("*.json"))


def test_there_is_a_published_config_for_every_family() -> None:
    families = {parse_config(path.read_text()).family for path in FIXTURES}
    wanted = {"llama", "qwen2", "qwen3", "qwen3-moe", "mixtral", "deepseek", "gpt-oss", "gemma3", "glm-moe"}
    assert wanted <= families


@pytest.mark.parametrize("path", FIXTURES, ids=[p.stem for p in FIXTURES])
def test_a_published_config_reads_into_the_catalogs_facts(path: Path) -> None:
    parsed = parse_config(path.read_text())
    model = find_model(path.stem)
    f = parsed.fields
    assert (f["layers"], f["hidden_size"], f["heads"], f["head_dim"]) == (
        model.layers,
        model.hidden_size,
        model.attention_heads,
        model.head_dim,
    )
    assert (f["experts"], f["experts_per_token"], f["moe_layers"]) == (
        model.experts,
        model.experts_per_token,
        model.moe_layers,
    )
    assert (f["kv_lora_rank"], f["sliding_window"], f["sliding_window_layers"]) == (
        model.kv_lora_rank,
        model.sliding_window,
        model.sliding_window_layers,
    )
    if model.kv_kind != "mla":
        assert f["kv_heads"] == model.kv_heads
    # Counted from the shapes, the parameters land within 4% of the model card's (vision towers aside).
    assert f["params_b"] == pytest.approx(model.params_b, rel=0.04)
    if model.is_moe:
        assert f["active_params_b"] == pytest.approx(model.active_params_b, rel=0.12)


@pytest.mark.parametrize("path", FIXTURES, ids=[p.stem for p in FIXTURES])
def test_a_pasted_config_gives_the_same_memory_fit_as_the_preset(path: Path) -> None:
    fields = parse_config(path.read_text()).fields
    custom = advise(AdviceRequest.model_validate({**fields, "model": "custom", "gpu": "h200", "gpus": 8}))
    preset = advise(AdviceRequest(model=path.stem, gpu="h200", gpus=8))
    assert custom.memory.kv_bytes_per_token == preset.memory.kv_bytes_per_token
    assert custom.memory.weights_gb == pytest.approx(preset.memory.weights_gb, rel=0.05)


def test_an_unknown_architecture_without_the_sizes_names_the_missing_fields() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(json.dumps({"architectures": ["MambaForCausalLM"], "d_model": 2560, "n_layer": 64}))
    assert caught.value.missing == (
        "hidden_size",
        "num_hidden_layers",
        "num_attention_heads",
        "vocab_size",
        "max_position_embeddings",
    )
    assert "MambaForCausalLM" in str(caught.value) and "hidden_size" in str(caught.value)


def test_an_unknown_architecture_with_standard_fields_is_read_with_a_note() -> None:
    config = {
        "architectures": ["NewDenseForCausalLM"],
        "hidden_size": 2048,
        "num_hidden_layers": 24,
        "num_attention_heads": 16,
        "num_key_value_heads": 4,
        "intermediate_size": 8192,
        "vocab_size": 32000,
        "max_position_embeddings": 8192,
    }
    parsed = parse_config(config)
    assert parsed.family == "" and "NewDenseForCausalLM" in parsed.notes[0]
    assert parsed.fields["head_dim"] == 128 and parsed.fields["kv_heads"] == 4


@pytest.mark.parametrize("text", ["", "{", "[1, 2]", "null", '"a string"'])
def test_text_that_is_not_a_config_object_is_refused_clearly(text: str) -> None:
    with pytest.raises(ConfigError, match=r"config\.json"):
        parse_config(text)
