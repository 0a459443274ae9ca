"""The model catalog: each model's published architecture (experts, MLA, sliding windows) and checkpoints, sourced."""

from functools import cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, field_validator, model_validator

from catalog.errors import UnknownModelError
from catalog.matching import match_names
from catalog.tables import blank_as, load_table, split_list, yes_no

MODELS_CSV = Path(__file__).parent / "data" / "models.csv"
CUSTOM_MODEL = "custom"

KvKind = Literal["mha", "gqa", "mla"]
NativeFormat = Literal["bf16", "fp8", "mxfp4"]

# The checkpoint columns of models.csv, by the quantization method id they hold.
CHECKPOINT_COLUMNS: dict[str, str] = {
    "bf16": "bf16_repo",
    "fp8": "fp8_repo",
    "awq": "awq_repo",
    "gptq": "gptq_repo",
    "w8a8-int8": "w8a8_repo",
    "nvfp4": "nvfp4_repo",
    "mxfp4": "mxfp4_repo",
    "gguf-q4_k_m": "gguf_repo",
}


class ModelSpec(BaseModel):
    """One model's serving-relevant architecture, as its Hugging Face config.json states it.

    Dense models leave the expert fields at 0; models without multi-head latent attention leave `kv_lora_rank` at 0;
    `sliding_window` is 0 when every layer attends to the whole context. `hf_repo` is the official checkpoint, in
    `native_format`; the other `*_repo` columns name published checkpoints in other formats.
    """

    model_config = ConfigDict(frozen=True)

    id: str
    name: str
    aliases: tuple[str, ...] = ()
    family: str = "custom"
    architecture: str = ""
    params_b: float
    active_params_b: float = 0.0
    layers: int
    hidden_size: int = 0
    attention_heads: int
    kv_heads: int
    head_dim: int
    intermediate_size: int = 0
    int4_intermediate_size: int = 0  # the MLP size of published 4-bit (AWQ/GPTQ) checkpoints when padded for TP
    moe_intermediate_size: int = 0
    experts: int = 0
    shared_experts: int = 0
    experts_per_token: int = 0
    moe_layers: int = 0
    kv_lora_rank: int = 0
    qk_rope_head_dim: int = 0
    sliding_window: int = 0
    sliding_window_layers: int = 0
    vocab_size: int = 0
    tie_word_embeddings: bool = False
    max_context: int
    native_format: NativeFormat = "bf16"
    hf_repo: str = ""
    bf16_repo: str = ""
    fp8_repo: str = ""
    awq_repo: str = ""
    gptq_repo: str = ""
    w8a8_repo: str = ""
    nvfp4_repo: str = ""
    mxfp4_repo: str = ""
    gguf_repo: str = ""
    ollama_tag: str = ""
    draft_model: str = ""
    eagle_repo: str = ""
    source: str = ""
    checkpoints_source: str = ""
    checked: str = ""  # when the row was last written from its sources

    @field_validator("aliases", mode="before")
    @classmethod
    def _split_aliases(cls, value: object) -> object:
        return split_list(value)

    @field_validator("tie_word_embeddings", mode="before")
    @classmethod
    def _yes_no(cls, value: object) -> object:
        return yes_no(value)

    @field_validator(
        "active_params_b",
        "hidden_size",
        "intermediate_size",
        "int4_intermediate_size",
        "moe_intermediate_size",
        "experts",
        "shared_experts",
        "experts_per_token",
        "moe_layers",
        "kv_lora_rank",
        "qk_rope_head_dim",
        "sliding_window",
        "sliding_window_layers",
        "vocab_size",
        mode="before",
    )
    @classmethod
    def _blank_is_zero(cls, value: object) -> object:
        return blank_as(value, 0)

    @field_validator("native_format", mode="before")
    @classmethod
    def _blank_is_bf16(cls, value: object) -> object:
        return blank_as(value, "bf16")

    @model_validator(mode="after")
    def _consistent(self) -> "ModelSpec":
        if self.experts and not (0 < self.experts_per_token <= self.experts and 0 < self.moe_layers <= self.layers):
            raise ValueError(f"{self.id}: experts need experts_per_token (1-{self.experts}) and moe_layers")
        if self.sliding_window_layers > self.layers:
            raise ValueError(f"{self.id}: more sliding-window layers than layers")
        return self

    # -- what the model is -----------------------------------------------------------------------------------------
    @property
    def params(self) -> float:
        """Total parameters: every expert is resident, so memory follows these."""
        return self.params_b * 1e9

    @property
    def active_params(self) -> float:
        """Parameters one token passes through (compute follows these); the total for a dense model."""
        return (self.active_params_b or self.params_b) * 1e9

    @property
    def is_moe(self) -> bool:
        """Whether the model routes tokens to experts."""
        return self.experts > 0

    @property
    def kv_kind(self) -> KvKind:
        """The KV layout: mla (a compressed latent per token), mha (a KV head per query head), gqa (shared)."""
        if self.kv_lora_rank:
            return "mla"
        return "mha" if self.kv_heads == self.attention_heads else "gqa"

    @property
    def full_attention_layers(self) -> int:
        """Layers that keep KV for the whole context."""
        return self.layers - self.sliding_window_layers if self.sliding_window else self.layers

    @property
    def embedding_params(self) -> float:
        """Parameters in the token embedding and the output head (kept 16-bit by most weight-only formats)."""
        tables = 1 if self.tie_word_embeddings else 2
        return float(self.vocab_size * self.hidden_size * tables)

    @property
    def routed_expert_params(self) -> float:
        """Parameters of the routed experts (gate, up and down projections of every expert in every MoE layer)."""
        return float(self.moe_layers * self.experts * 3 * self.hidden_size * self.moe_intermediate_size)

    @property
    def architecture_key(self) -> tuple[object, ...]:
        """What the model computes: its fields from `architecture` to `native_format`, not its names and checkpoints.

        Two models with the same architecture (DeepSeek-R1 and DeepSeek-V3) serve at the same speed.
        """
        fields = list(type(self).model_fields)
        start, end = fields.index("architecture"), fields.index("native_format")
        return tuple(getattr(self, name) for name in fields[start : end + 1])

    @property
    def repo(self) -> str:
        """The checkpoint to name in commands (the HF repo, else the model's name)."""
        return self.hf_repo or self.name

    def checkpoint(self, method_id: str) -> str:
        """The published checkpoint in a format ('' when none is in the catalog); the official one in its format."""
        if method_id == self.native_format and self.hf_repo:
            return self.hf_repo
        column = CHECKPOINT_COLUMNS.get(method_id)
        found = str(getattr(self, column)) if column else ""
        if not found and method_id == "bf16" and self.native_format == "bf16":
            return self.repo
        return found


@cache
def load_models() -> tuple[ModelSpec, ...]:
    """Every model preset, in file order."""
    return load_table(MODELS_CSV, ModelSpec)


@cache
def _models_by_id() -> dict[str, ModelSpec]:
    return {m.id: m for m in load_models()}


@cache
def _model_names() -> dict[str, tuple[str, ...]]:
    return {m.id: (m.id, m.name, m.hf_repo, *m.aliases) for m in load_models()}


def find_model(name: str) -> ModelSpec:
    """Look a preset up by id, name, HF repo or alias, forgivingly ('qwen2.5-7b', 'Qwen/Qwen2.5-7B-Instruct')."""
    models = _models_by_id()
    found, candidates = match_names(name, _model_names(), kind="model")
    if found is None:
        raise UnknownModelError(name, candidates, [*models, CUSTOM_MODEL])
    return models[found]
