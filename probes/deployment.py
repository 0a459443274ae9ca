"""Which deployment a probe run measured (GPU, GPU count, model, engine, quantization), defined once.

The fields' titles, help, limits and option names feed the /probe form, the command line's flags and the docs
(probes/options.py builds its fields from them); the stored run keeps the model itself. Names are matched to the
catalogs as the engine advisor matches them ('H100', 'Qwen/Qwen2.5-7B-Instruct', 'trtllm', 'AWQ'), and stored as
catalog ids, so a run can calibrate the estimate of exactly that deployment.
"""

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from catalog.engines import find_engine, load_engines
from catalog.errors import GpuLookupError, NameLookupError
from catalog.gpus import find_gpu, load_gpus
from catalog.matching import normalize
from catalog.models import find_model, load_models
from catalog.quantization import find_quant, load_quant_methods
from i18n import N_, Translate, identity

MAX_GPU_COUNT = 4096
OPTION = "option"  # json_schema_extra key: the field's name (URL parameter, flag) among the probe's options
ALLOWED = "allowed"  # json_schema_extra key: the allowed values in words (probes/field_text.py reads the same key)
STORED = "stored"  # validation context flag: reading a stored run, whose names the catalog may no longer know
CATALOG_FIELDS = ("gpu", "model", "engine", "quant")  # the fields named by a catalog id


class Deployment(BaseModel):
    """The deployment behind the endpoint; every field optional (None: not known).

    `source` says which fields the server told (field -> "metrics" or "/v1/models"); the others were given by the
    person who started the run, or are unknown.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    gpu: str | None = Field(
        default=None,
        title=N_("GPU type"),
        description=N_("The GPU the server runs on, a catalog GPU by id or name (H100, a800-80gb-sxm, 4090)."),
        json_schema_extra={OPTION: "gpu", ALLOWED: N_("a GPU of catalog/data/gpus.csv, by id or name")},
    )
    gpu_count: int | None = Field(
        default=None,
        ge=1,
        le=MAX_GPU_COUNT,
        title=N_("GPU count"),
        description=N_("How many GPUs serve the endpoint in total (tensor × pipeline × data parallel, all replicas)."),
        json_schema_extra={OPTION: "gpu_count"},
    )
    model: str | None = Field(
        default=None,
        title=N_("Deployed model"),
        description=N_(
            "The model as the catalog knows it (llama3.1-8b, Qwen/Qwen2.5-7B-Instruct), not the served "
            "name. When not given: read from /v1/models if it names one catalog model."
        ),
        json_schema_extra={OPTION: "deploy_model", ALLOWED: N_("a model of catalog/data/models.csv, by id or name")},
    )
    engine: str | None = Field(
        default=None,
        title=N_("Engine"),
        description=N_(
            "The inference engine (vllm, sglang, tensorrt-llm, lmdeploy, …). When not given: read from "
            "the server's metric names (vllm:, sglang:, …) or its /v1/models owner."
        ),
        json_schema_extra={OPTION: "engine", ALLOWED: N_("an engine of catalog/data/engines.csv, by id or name")},
    )
    quant: str | None = Field(
        default=None,
        title=N_("Quantization"),
        description=N_(
            "The weights' quantization (bf16, fp8, awq, gptq, w8a8-int8, nvfp4, mxfp4, …). When not "
            "given: read from /v1/models if the served checkpoint is a quantized one the catalog lists."
        ),
        json_schema_extra={OPTION: "quant", ALLOWED: N_("a method of catalog/data/quantization.csv, by id or name")},
    )
    source: dict[str, str] = Field(
        default_factory=dict,
        description="the fields the server told, and where from (metrics, /v1/models); the others were given",
    )

    @field_validator(*CATALOG_FIELDS, mode="before")
    @classmethod
    def _catalog_id(cls, value: object, info: ValidationInfo) -> object:
        if not isinstance(value, str):
            return value
        try:
            return catalog_id(info.field_name or "", value)
        except ValueError:
            if isinstance(info.context, Mapping) and info.context.get(STORED):
                return value.strip()  # a stored run loads even when the catalog has changed since
            raise

    @property
    def known(self) -> bool:
        """True when any field is known."""
        return any(getattr(self, name) is not None for name in (*CATALOG_FIELDS, "gpu_count"))

    @property
    def complete(self) -> bool:
        """True when every field is known: only then can the run calibrate an estimate."""
        return all(getattr(self, name) is not None for name in (*CATALOG_FIELDS, "gpu_count"))


def deployment_fields() -> dict[str, str]:
    """Deployment field -> its option name (URL parameter; the flag is --<option> with hyphens)."""
    return {
        name: str(extra[OPTION])
        for name, field in Deployment.model_fields.items()
        if isinstance(extra := field.json_schema_extra, dict) and OPTION in extra
    }


def _lookups() -> dict[str, tuple[str, Callable[[str], Any], Callable[[], Sequence[str]]]]:
    """Field -> (what people call it, the advisor's forgiving lookup, every catalog id)."""
    return {
        "gpu": ("GPU", find_gpu, lambda: [g.id for g in load_gpus()]),
        "model": ("model", find_model, lambda: [m.id for m in load_models()]),
        "engine": ("engine", find_engine, lambda: [e.id for e in load_engines()]),
        "quant": ("quantization", find_quant, lambda: [q.id for q in load_quant_methods()]),
    }


def catalog_id(field: str, value: str) -> str | None:
    """The catalog id a name stands for, matched as the advisor matches it; None for a blank name.

    An unknown or ambiguous name raises ValueError saying what was given, the close names (never applied) and
    every allowed id.
    """
    text = value.strip()
    if not text:
        return None
    kind, lookup, ids = _lookups()[field]
    try:
        return str(lookup(text).id)
    except (GpuLookupError, NameLookupError) as exc:
        raise _unknown(kind, text, list(exc.candidates), ids()) from None


def _unknown(kind: str, value: str, candidates: list[str], allowed: Sequence[str]) -> ValueError:
    shown = "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in value)
    wanted = normalize(value)
    every = f"Allowed: {', '.join(allowed)}"
    if len(candidates) > 1 and wanted and all(wanted in normalize(c) for c in candidates):
        return ValueError(f"{kind} '{shown}' is ambiguous; it could be {', '.join(candidates)}. {every}")
    if candidates:
        return ValueError(f"{kind} '{shown}' is not in the catalog; did you mean: {', '.join(candidates)}? {every}")
    return ValueError(f"{kind} '{shown}' is not in the catalog. {every}")


def display_names() -> dict[str, dict[str, str]]:
    """Field -> catalog id -> the name people read (for choices and captions)."""
    return {
        "gpu": {g.id: g.name for g in load_gpus()},
        "model": {m.id: m.name for m in load_models()},
        "engine": {e.id: e.name for e in load_engines()},
        "quant": {q.id: q.name for q in load_quant_methods()},
    }


# How deployment_text names a field ('gpu unknown', 'engine from metrics'), marked for the page's translation.
FIELD_WORDS = {"gpu": N_("gpu"), "model": N_("model"), "engine": N_("engine"), "quant": N_("quant")}


def deployment_text(deployment: Deployment, tr: Translate = identity) -> str:
    """The deployment in one line ('2 × H100 80GB SXM · Llama-3.1-8B-Instruct · vLLM · FP8 W8A8'); '' when unknown.

    Detected fields say where from; unknown ones are named as such.
    """
    if not deployment.known:
        return ""
    names = display_names()

    def word(field: str) -> str:
        return tr(FIELD_WORDS.get(field, field))

    def shown(field: str) -> str:
        value = getattr(deployment, field)
        return names[field].get(value, value) if value is not None else tr("{field} unknown").format(field=word(field))

    gpus = shown("gpu") if deployment.gpu_count is None else f"{deployment.gpu_count} × {shown('gpu')}"
    parts = [gpus, shown("model"), shown("engine"), shown("quant")]
    told = ", ".join(
        tr("{field} from {where}").format(field=word(field), where=where)
        for field, where in sorted(deployment.source.items())
    )
    if not told:
        return " · ".join(parts)
    return tr("{deployment} (detected: {fields})").format(deployment=" · ".join(parts), fields=told)
