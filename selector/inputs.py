"""The advisor's inputs: one frozen model whose aliases are the page's URL parameters and the CLI's flags."""

import difflib
from collections.abc import Callable, Mapping
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field, field_validator

from catalog import GpuLookupError, find_gpu, load_handbook
from catalog.matching import normalize
from selector.engines import find_engine
from selector.errors import NameLookupError
from selector.models import CUSTOM_MODEL, find_model
from selector.quantization import AUTO, find_quant
from selector.rules import load_rules

_DEFAULTS = load_rules().defaults
_LIMITS = load_rules().limits
MIN_CONTEXT_TOKENS = 128
MAX_CONTEXT_TOKENS = 1_048_576
MAX_CONCURRENCY = 4096


class Workload(StrEnum):
    """What the traffic looks like."""

    CHAT = "chat"
    RAG = "rag"
    AGENT = "agent"
    CODE = "code"
    BATCH = "batch"


class Priority(StrEnum):
    """What matters most."""

    LATENCY = "latency"
    THROUGHPUT = "throughput"
    COST = "cost"


class Ecosystem(StrEnum):
    """Where the models come from."""

    INTERNATIONAL = "international"
    CHINESE = "chinese"
    HF = "hf"


class Deploy(StrEnum):
    """Where it runs."""

    DATACENTER = "datacenter"
    EDGE = "edge"
    APPLE = "apple"


class YesNo(StrEnum):
    """A yes/no answer that reads well in a URL."""

    YES = "yes"
    NO = "no"


LABELS: dict[str, dict[str, str]] = {
    "workload": {
        "chat": "Chat",
        "rag": "RAG (long shared prefix)",
        "agent": "Agent (tool calls)",
        "code": "Code / JSON generation",
        "batch": "Offline batch",
    },
    "priority": {"latency": "Latency", "throughput": "Throughput", "cost": "Cost"},
    "ecosystem": {
        "international": "International models",
        "chinese": "Chinese / domestic models",
        "hf": "Bound to the Hugging Face Hub",
    },
    "deploy": {"datacenter": "Datacenter", "edge": "Edge / laptop / CPU", "apple": "Apple Silicon"},
}

_TRUTHY = {"yes", "y", "true", "1", "on"}
_FALSY = {"no", "n", "false", "0", "off"}


def _yes_no(value: object) -> object:
    if isinstance(value, bool):
        return YesNo.YES if value else YesNo.NO
    if isinstance(value, str):
        text = value.strip().lower()
        if text in _TRUTHY:
            return YesNo.YES
        if text in _FALSY:
            return YesNo.NO
    return value


class AdviceRequest(BaseModel):
    """Everything the advisor asks. Aliases are the URL parameters and the CLI flags."""

    model_config = ConfigDict(frozen=True, populate_by_name=True, extra="ignore")

    gpu: str = Field(
        default=load_handbook().seed_benchmark.gpu,
        alias="gpu",
        title="GPU",
        description="a catalog GPU by id, name or alias (A800, h100, 'NVIDIA RTX 4090')",
    )
    gpus: int = Field(
        default=1,
        alias="gpus",
        ge=1,
        le=_LIMITS.max_gpus,
        title="GPU count",
        description=f"GPUs in one node (1-{_LIMITS.max_gpus})",
    )
    model: str = Field(
        default=_DEFAULTS.model,
        alias="model",
        title="Model",
        description="a model preset (qwen2.5-7b, llama3.1-70b, ...) or 'custom'",
    )
    workload: Workload = Field(default=Workload(_DEFAULTS.workload), alias="workload", title="Workload")
    priority: Priority = Field(default=Priority(_DEFAULTS.priority), alias="priority", title="Priority")
    ecosystem: Ecosystem = Field(default=Ecosystem(_DEFAULTS.ecosystem), alias="ecosystem", title="Model ecosystem")
    deploy: Deploy = Field(default=Deploy(_DEFAULTS.deploy), alias="deploy", title="Deployment")
    build_engines: YesNo = Field(
        default=YesNo(_DEFAULTS.build_engines), alias="build_engines", title="Team will build engines"
    )
    context: int = Field(
        default=_DEFAULTS.context,
        alias="context",
        ge=MIN_CONTEXT_TOKENS,
        le=MAX_CONTEXT_TOKENS,
        title="Context length (tokens)",
    )
    concurrency: int = Field(
        default=load_handbook().seed_benchmark.concurrency,
        alias="concurrency",
        ge=1,
        le=MAX_CONCURRENCY,
        title="Target concurrency",
    )
    engine: str = Field(
        default=AUTO,
        alias="engine",
        title="Engine",
        description="'auto' (follow the rules) or pin one engine (vllm, sglang, tensorrt-llm, ...)",
    )
    quant: str = Field(
        default=AUTO,
        alias="quant",
        title="Quantization",
        description="'auto' or pin one method (bf16, fp8, awq, gptq, w8a8-int8, nvfp4, nf4, gguf-q4_k_m)",
    )
    qlora: YesNo = Field(default=YesNo.NO, alias="qlora", title="Trained with QLoRA (NF4)")
    params_b: float = Field(default=7.0, alias="params_b", gt=0, le=2000, title="Custom model: parameters (billions)")
    layers: int = Field(default=32, alias="layers", ge=1, le=512, title="Custom model: layers")
    heads: int = Field(default=32, alias="heads", ge=1, le=1024, title="Custom model: attention heads")
    kv_heads: int = Field(default=8, alias="kv_heads", ge=1, le=1024, title="Custom model: KV heads")
    head_dim: int = Field(default=128, alias="head_dim", ge=1, le=1024, title="Custom model: head size")
    max_context: int = Field(
        default=32768,
        alias="max_context",
        ge=MIN_CONTEXT_TOKENS,
        le=MAX_CONTEXT_TOKENS,
        title="Custom model: maximum context",
    )

    @field_validator("gpu", mode="before")
    @classmethod
    def _known_gpu(cls, value: object) -> object:
        if not isinstance(value, str):
            return value
        try:
            return find_gpu(value).id
        except GpuLookupError as exc:
            raise ValueError(str(exc)) from exc

    @field_validator("model", mode="before")
    @classmethod
    def _known_model(cls, value: object) -> object:
        if not isinstance(value, str):
            return value
        if value.strip().lower() == CUSTOM_MODEL:
            return CUSTOM_MODEL
        return find_model(value).id

    @field_validator("engine", mode="before")
    @classmethod
    def _known_engine(cls, value: object) -> object:
        if not isinstance(value, str) or value.strip().lower() in {AUTO, ""}:
            return AUTO if isinstance(value, str) else value
        return find_engine(value).id

    @field_validator("quant", mode="before")
    @classmethod
    def _known_quant(cls, value: object) -> object:
        if not isinstance(value, str) or value.strip().lower() in {AUTO, ""}:
            return AUTO if isinstance(value, str) else value
        return find_quant(value).id

    @field_validator("workload", "priority", "ecosystem", "deploy", mode="before")
    @classmethod
    def _lower(cls, value: object) -> object:
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("build_engines", "qlora", mode="before")
    @classmethod
    def _yes_no(cls, value: object) -> object:
        return _yes_no(value)


def _closest(query: str, candidates: list[str]) -> str:
    wanted = normalize(query)
    return max(candidates, key=lambda c: difflib.SequenceMatcher(None, wanted, normalize(c)).ratio())


def nearest_params(params: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """Replace an unknown GPU, model, engine or quantization name in a link by its closest match, and say so.

    Names with no close match are left for validation to reject (it names them and uses the default).
    """
    fixed = dict(params)
    notes: list[str] = []
    lookups: dict[str, Callable[[str], object]] = {
        "gpu": find_gpu,
        "model": find_model,
        "engine": find_engine,
        "quant": find_quant,
    }
    for key, lookup in lookups.items():
        value = fixed.get(key)
        if value is None or value.strip().lower() in {AUTO, CUSTOM_MODEL, ""}:
            continue
        try:
            lookup(value)
        except (GpuLookupError, NameLookupError) as exc:
            if not exc.candidates:
                continue
            nearest = _closest(value, exc.candidates)
            fixed[key] = nearest
            notes.append(f"URL parameter `{key}`: {exc} Showing the advice for '{nearest}', the nearest match.")
    return fixed, notes
