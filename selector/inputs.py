"""The advisor's inputs: one frozen model whose aliases are the page's URL parameters and the CLI's flags."""

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field, field_validator

from catalog import GpuLookupError, engine_release, find_gpu, load_gpus, load_handbook
from catalog.engines import find_engine, load_engines
from catalog.errors import NameLookupError
from catalog.matching import nearest, normalize
from catalog.models import CUSTOM_MODEL, NativeFormat, find_model, load_models
from catalog.quantization import AUTO, find_quant, load_quant_methods
from i18n import N_, Translate, identity
from selector.rules import load_rules

_DEFAULTS = load_rules().defaults
_LIMITS = load_rules().limits
MIN_CONTEXT_TOKENS = 128
MAX_CONTEXT_TOKENS = 10_485_760  # Llama 4 Scout's 10M-token window, the longest in the catalog
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
        "chat": N_("Chat"),
        "rag": N_("RAG (long shared prefix)"),
        "agent": N_("Agent (tool calls)"),
        "code": N_("Code / JSON generation"),
        "batch": N_("Offline batch"),
    },
    "priority": {"latency": N_("Latency"), "throughput": N_("Throughput"), "cost": N_("Cost")},
    "ecosystem": {
        "international": N_("International models"),
        "chinese": N_("Chinese / domestic models"),
        "hf": N_("Bound to the Hugging Face Hub"),
    },
    "deploy": {"datacenter": N_("Datacenter"), "edge": N_("Edge / laptop / CPU"), "apple": N_("Apple Silicon")},
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
        title=N_("GPU"),
        description="a catalog GPU by id, name or alias (A800, h100, 'NVIDIA RTX 4090')",
    )
    gpus: int = Field(
        default=1,
        alias="gpus",
        ge=1,
        le=_LIMITS.max_gpus,
        title=N_("GPU count"),
        description=f"GPUs in one node (1-{_LIMITS.max_gpus})",
    )
    model: str = Field(
        default=_DEFAULTS.model,
        alias="model",
        title=N_("Model"),
        description="a model preset (qwen2.5-7b, llama3.1-70b, ...) or 'custom'",
    )
    workload: Workload = Field(default=Workload(_DEFAULTS.workload), alias="workload", title=N_("Workload"))
    priority: Priority = Field(default=Priority(_DEFAULTS.priority), alias="priority", title=N_("Priority"))
    ecosystem: Ecosystem = Field(default=Ecosystem(_DEFAULTS.ecosystem), alias="ecosystem", title=N_("Model ecosystem"))
    deploy: Deploy = Field(default=Deploy(_DEFAULTS.deploy), alias="deploy", title=N_("Deployment"))
    build_engines: YesNo = Field(
        default=YesNo(_DEFAULTS.build_engines), alias="build_engines", title=N_("Team will build engines")
    )
    context: int = Field(
        default=_DEFAULTS.context,
        alias="context",
        ge=MIN_CONTEXT_TOKENS,
        le=MAX_CONTEXT_TOKENS,
        title=N_("Context length (tokens)"),
    )
    concurrency: int = Field(
        default=load_handbook().seed_benchmark.concurrency,
        alias="concurrency",
        ge=1,
        le=MAX_CONCURRENCY,
        title=N_("Target concurrency"),
    )
    in_tokens_per_request: int = Field(
        default=load_handbook().tco_project_defaults.in_tokens_per_request,
        alias="in_tokens",
        ge=0,
        le=100_000_000,
        title=N_("Input tokens per request"),
    )
    out_tokens_per_request: int = Field(
        default=load_handbook().tco.out_tokens_per_request,
        alias="out_tokens",
        ge=1,
        le=10_000_000,
        title=N_("Output tokens per request"),
    )
    traffic_requests_per_day: float = Field(
        default=load_handbook().tco_project_defaults.traffic_requests_per_day,
        alias="traffic",
        ge=0,
        le=1e13,
        title=N_("Traffic (requests/day)"),
    )
    engine: str = Field(
        default=AUTO,
        alias="engine",
        title=N_("Engine"),
        description="'auto' (follow the rules) or pin one engine (vllm, sglang, tensorrt-llm, ...)",
    )
    engine_version: str = Field(
        default="",
        alias="engine_version",
        max_length=40,
        title=N_("Engine release (for the estimate)"),
        description="the engine release the estimate is for ('' = the newest release with measured data)",
    )
    quant: str = Field(
        default=AUTO,
        alias="quant",
        title=N_("Quantization"),
        description="'auto' or pin one method (bf16, fp8, awq, gptq, w8a8-int8, nvfp4, nf4, gguf-q4_k_m)",
    )
    qlora: YesNo = Field(default=YesNo.NO, alias="qlora", title=N_("Trained with QLoRA (NF4)"))
    params_b: float = Field(
        default=7.0, alias="params_b", gt=0, le=5000, title=N_("Custom model: parameters (billions)")
    )
    active_params_b: float = Field(
        default=0.0,
        alias="active_params_b",
        ge=0,
        le=5000,
        title=N_("Custom model: active parameters per token (billions; 0 = dense, all of them)"),
    )
    layers: int = Field(default=32, alias="layers", ge=1, le=512, title=N_("Custom model: layers"))
    hidden_size: int = Field(default=4096, alias="hidden_size", ge=1, le=65536, title=N_("Custom model: hidden size"))
    heads: int = Field(default=32, alias="heads", ge=1, le=1024, title=N_("Custom model: attention heads"))
    kv_heads: int = Field(default=8, alias="kv_heads", ge=1, le=1024, title=N_("Custom model: KV heads"))
    head_dim: int = Field(default=128, alias="head_dim", ge=1, le=1024, title=N_("Custom model: head size"))
    intermediate_size: int = Field(
        default=14336, alias="intermediate_size", ge=0, le=262144, title=N_("Custom model: dense MLP size")
    )
    vocab_size: int = Field(
        default=128256, alias="vocab_size", ge=1, le=1_048_576, title=N_("Custom model: vocabulary")
    )
    tie_embeddings: YesNo = Field(default=YesNo.NO, alias="tie_embeddings", title=N_("Custom model: tied embeddings"))
    experts: int = Field(
        default=0, alias="experts", ge=0, le=4096, title=N_("Custom model: routed experts (0 = dense)")
    )
    experts_per_token: int = Field(
        default=0, alias="experts_per_token", ge=0, le=4096, title=N_("Custom model: experts per token")
    )
    shared_experts: int = Field(
        default=0, alias="shared_experts", ge=0, le=64, title=N_("Custom model: shared experts")
    )
    moe_intermediate_size: int = Field(
        default=0, alias="moe_intermediate_size", ge=0, le=262144, title=N_("Custom model: one expert's MLP size")
    )
    moe_layers: int = Field(
        default=0, alias="moe_layers", ge=0, le=512, title=N_("Custom model: layers with experts (0 = all layers)")
    )
    kv_lora_rank: int = Field(
        default=0, alias="kv_lora_rank", ge=0, le=16384, title=N_("Custom model: MLA compressed KV rank (0 = no MLA)")
    )
    rope_head_dim: int = Field(
        default=0, alias="rope_head_dim", ge=0, le=1024, title=N_("Custom model: MLA rotary head size")
    )
    sliding_window: int = Field(
        default=0,
        alias="sliding_window",
        ge=0,
        le=MAX_CONTEXT_TOKENS,
        title=N_("Custom model: sliding window (0 = none)"),
    )
    sliding_window_layers: int = Field(
        default=0, alias="sliding_window_layers", ge=0, le=512, title=N_("Custom model: layers with the sliding window")
    )
    max_context: int = Field(
        default=32768,
        alias="max_context",
        ge=MIN_CONTEXT_TOKENS,
        le=MAX_CONTEXT_TOKENS,
        title=N_("Custom model: maximum context"),
    )
    native_format: NativeFormat = Field(
        default="bf16", alias="native_format", title=N_("Custom model: format of the published weights")
    )
    custom_name: str = Field(default="", alias="custom_name", max_length=120, title=N_("Custom model: name"))

    @field_validator("gpu", mode="before")
    @classmethod
    def _known_gpu(cls, value: object) -> object:
        if not isinstance(value, str):
            return value
        try:
            return find_gpu(value).id
        except GpuLookupError as exc:
            raise _unknown(N_("GPU"), value, exc.candidates, [g.id for g in load_gpus()]) from exc

    @field_validator("model", mode="before")
    @classmethod
    def _known_model(cls, value: object) -> object:
        if not isinstance(value, str):
            return value
        if value.strip().lower() == CUSTOM_MODEL:
            return CUSTOM_MODEL
        try:
            return find_model(value).id
        except NameLookupError as exc:
            raise _unknown(N_("model"), value, exc.candidates, [*(m.id for m in load_models()), CUSTOM_MODEL]) from exc

    @field_validator("engine", mode="before")
    @classmethod
    def _known_engine(cls, value: object) -> object:
        if not isinstance(value, str) or value.strip().lower() in {AUTO, ""}:
            return AUTO if isinstance(value, str) else value
        try:
            return find_engine(value).id
        except NameLookupError as exc:
            raise _unknown(N_("engine"), value, exc.candidates, [AUTO, *(e.id for e in load_engines())]) from exc

    @field_validator("engine_version", mode="before")
    @classmethod
    def _release(cls, value: object) -> object:
        return engine_release(value)

    @field_validator("quant", mode="before")
    @classmethod
    def _known_quant(cls, value: object) -> object:
        if not isinstance(value, str) or value.strip().lower() in {AUTO, ""}:
            return AUTO if isinstance(value, str) else value
        try:
            return find_quant(value).id
        except NameLookupError as exc:
            allowed = [AUTO, *(q.id for q in load_quant_methods())]
            raise _unknown(N_("quantization"), value, exc.candidates, allowed) from exc

    @field_validator("workload", "priority", "ecosystem", "deploy", mode="before")
    @classmethod
    def _lower(cls, value: object) -> object:
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("build_engines", "qlora", "tie_embeddings", mode="before")
    @classmethod
    def _yes_no(cls, value: object) -> object:
        return _yes_no(value)


def printable(value: str) -> str:
    """A value as it can be shown: control characters escaped as Python writes them, everything else kept."""
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in value)


# How AdviceRequest's validators word an unknown name: English (the CLI, the JSON, the tests) unless a page wraps its
# validation in `names_worded_by(_)`. A validator takes no `tr`, so the page's translation travels in this variable.
_NAME_WORDING: ContextVar[Translate] = ContextVar("selector_name_wording", default=identity)


@contextmanager
def names_worded_by(tr: Translate) -> Iterator[None]:
    """Inside the block, AdviceRequest words its unknown-name errors with `tr` (the page passes `_`)."""
    token = _NAME_WORDING.set(tr)
    try:
        yield
    finally:
        _NAME_WORDING.reset(token)


def _unknown(kind: str, value: str, candidates: Sequence[str], allowed: Sequence[str]) -> ValueError:
    """An unknown name: what was given, the close names as suggestions (never applied) and every allowed value.

    `kind` is an N_-marked noun ('GPU', 'model', ...); the message is worded by `names_worded_by` (English otherwise).
    """
    tr = _NAME_WORDING.get()
    values = {
        "kind": tr(kind),
        "value": printable(value),
        "candidates": ", ".join(candidates),
        "allowed": ", ".join(allowed),
    }
    wanted = normalize(value)
    if len(candidates) > 1 and wanted and all(wanted in normalize(c) for c in candidates):
        return ValueError(
            tr("{kind} '{value}' is ambiguous; it could be {candidates}. Allowed: {allowed}").format(**values)
        )
    if candidates:
        return ValueError(
            tr("{kind} '{value}' is not in the catalog; did you mean: {candidates}? Allowed: {allowed}").format(
                **values
            )
        )
    return ValueError(tr("{kind} '{value}' is not in the catalog; allowed: {allowed}").format(**values))


def _names(entry: object) -> tuple[str, ...]:
    """Every name a catalog entry answers to (id, name, Hugging Face repo, aliases)."""
    names = (getattr(entry, "id", ""), getattr(entry, "name", ""), getattr(entry, "hf_repo", ""))
    return tuple(n for n in (*names, *getattr(entry, "aliases", ())) if n)


_LOOKUPS: dict[str, tuple[str, Callable[[str], object]]] = {
    "gpu": ("GPU", find_gpu),
    "model": (N_("model"), find_model),
    "engine": (N_("engine"), find_engine),
    "quant": (N_("quantization"), find_quant),
}


def nearest_params(params: Mapping[str, str], tr: Translate = identity) -> tuple[dict[str, str], dict[str, str]]:
    """Read an unknown GPU, model, engine or quantization name in a link as the one entry clearly closest to it.

    Returns the parameters with those names replaced, and per replaced parameter a note that names it, the value,
    and what it is read as ('H1000' -> the H100 80GB SXM). Only a clear nearest match stands in
    (catalog.matching.nearest); a value with no close entry ('y', 'x', 'nope') is left for validation, which names
    it, lists what is allowed and uses the default. Whether the advice then uses a replaced engine or quantization
    is for the advice to say (a pinned engine may not run on the GPU).
    """
    fixed = dict(params)
    notes: dict[str, str] = {}
    for key, (kind, lookup) in _LOOKUPS.items():
        value = fixed.get(key)
        if value is None or value.strip().lower() in {AUTO, CUSTOM_MODEL, ""}:
            continue
        try:
            lookup(value)
            continue
        except (GpuLookupError, NameLookupError) as exc:
            candidates = list(exc.candidates)
        entries = {c: lookup(c) for c in candidates}
        best = nearest(value, {c: _names(entry) for c, entry in entries.items()})
        if best is None:
            continue
        fixed[key] = best
        title = tr(AdviceRequest.model_fields[key].title or key)
        others = [c for c in candidates if c != best]
        note = tr(
            "URL parameter `{key}` ({title}): {kind} '{value}' is not in the catalog; read as '{best}' ({name}), "
            "the nearest match."
        ).format(
            key=key,
            title=title,
            kind=tr(kind),
            value=printable(value),
            best=best,
            name=getattr(entries[best], "name", best),
        )
        also = tr("Other close names: {names}.").format(names=", ".join(others))
        notes[key] = tr("{first} {second}").format(first=note, second=also) if others else note
    return fixed, notes
