"""The model catalog: real configurations (layers, heads, KV heads, head size, context) with their sources."""

import csv
from functools import cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, field_validator

from catalog.matching import match_names
from selector.errors import UnknownModelError

MODELS_CSV = Path(__file__).parent / "data" / "models.csv"
CUSTOM_MODEL = "custom"


class ModelSpec(BaseModel):
    """One model's serving-relevant configuration (from its Hugging Face config.json)."""

    model_config = ConfigDict(frozen=True)

    id: str
    name: str
    aliases: tuple[str, ...] = ()
    family: str = "custom"
    params_b: float
    layers: int
    hidden_size: int = 0
    attention_heads: int
    kv_heads: int
    head_dim: int
    vocab_size: int = 0
    tie_word_embeddings: bool = False
    max_context: int
    hf_repo: str = ""
    awq_repo: str = ""
    fp8_repo: str = ""
    gguf_repo: str = ""
    ollama_tag: str = ""
    draft_model: str = ""
    eagle_repo: str = ""
    source: str = ""

    @field_validator("aliases", mode="before")
    @classmethod
    def _split_aliases(cls, value: object) -> object:
        return tuple(a.strip() for a in value.split(";") if a.strip()) if isinstance(value, str) else value

    @field_validator("tie_word_embeddings", mode="before")
    @classmethod
    def _yes_no(cls, value: object) -> object:
        return value == "yes" if isinstance(value, str) else value

    @property
    def params(self) -> float:
        """Total parameters."""
        return self.params_b * 1e9

    @property
    def embedding_params(self) -> float:
        """Parameters in the token embedding and the output head (kept 16-bit by most weight-only formats)."""
        tables = 1 if self.tie_word_embeddings else 2
        return float(self.vocab_size * self.hidden_size * tables)

    @property
    def repo(self) -> str:
        """The checkpoint to name in commands (the HF repo, else the model's name)."""
        return self.hf_repo or self.name


@cache
def load_models() -> tuple[ModelSpec, ...]:
    """Every model preset, in file order."""
    with MODELS_CSV.open(newline="", encoding="utf-8") as handle:
        return tuple(ModelSpec.model_validate(row) for row in csv.DictReader(handle))


def find_model(name: str) -> ModelSpec:
    """Look a preset up by id, name, HF repo or alias, forgivingly ('qwen2.5-7b', 'Qwen/Qwen2.5-7B-Instruct')."""
    models = {m.id: m for m in load_models()}
    found, candidates = match_names(name, {m.id: (m.id, m.name, m.hf_repo, *m.aliases) for m in models.values()})
    if found is None:
        raise UnknownModelError(name, candidates, [*models, CUSTOM_MODEL])
    return models[found]


def custom_model(
    *, params_b: float, layers: int, attention_heads: int, kv_heads: int, head_dim: int, max_context: int
) -> ModelSpec:
    """A model the user describes by hand (embeddings are counted with the other weights)."""
    return ModelSpec(
        id=CUSTOM_MODEL,
        name=f"Custom {params_b:g}B",
        params_b=params_b,
        layers=layers,
        attention_heads=attention_heads,
        kv_heads=kv_heads,
        head_dim=head_dim,
        max_context=max_context,
        source="entered by the user",
    )
