"""What the server tells of its deployment: the engine from its metric names, the model from /v1/models.

Only an unambiguous answer counts: one engine's metric prefix, one catalog model whose name (or published
checkpoint) is exactly the served one. A quantized checkpoint the catalog lists ('Qwen/Qwen2.5-7B-Instruct-AWQ')
also tells the quantization. Fields given by the person are never replaced.
"""

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from catalog.engines import load_engines
from catalog.matching import normalize
from catalog.models import CHECKPOINT_COLUMNS, load_models
from probes.deployment import Deployment

METRICS = "metrics"
MODELS = "/v1/models"

# Metric name prefix -> engine id (catalog/data/engines.csv). Other prefixes (python_, process_, http_) tell nothing.
ENGINE_METRIC_PREFIXES: tuple[tuple[str, str], ...] = (
    ("vllm:", "vllm"),
    ("sglang:", "sglang"),
    ("lmdeploy", "lmdeploy"),
    ("trtllm", "tensorrt-llm"),
    ("tensorrt_llm", "tensorrt-llm"),
    ("nv_trt_llm", "tensorrt-llm"),
    ("tgi_", "tgi"),
    ("llamacpp:", "llama.cpp"),
)
_METRIC_NAME = re.compile(r"^(?:# (?:HELP|TYPE) )?([A-Za-z_:][A-Za-z0-9_:]*)")
# Published checkpoints in these formats hold several quantizations (GGUF files): they name the model, not its quant.
_MANY_QUANTS = ("gguf",)


@dataclass(frozen=True)
class ServedModel:
    """One entry of /v1/models: the served id, vLLM's and SGLang's `root` (the checkpoint), and the owner."""

    id: str
    root: str | None = None
    owned_by: str | None = None


def served_models(listing: object) -> list[ServedModel]:
    """The entries of a /v1/models answer (an OpenAI model list); [] for anything else."""
    data = listing.get("data") if isinstance(listing, Mapping) else None
    if not isinstance(data, list):
        return []
    found: list[ServedModel] = []
    for item in data:
        if isinstance(item, Mapping) and isinstance(item.get("id"), str):
            root, owner = item.get("root"), item.get("owned_by")
            found.append(
                ServedModel(
                    id=item["id"],
                    root=root if isinstance(root, str) and root else None,
                    owned_by=owner if isinstance(owner, str) and owner else None,
                )
            )
    return found


def engine_from_metrics(text: str) -> str | None:
    """The engine whose metric names the exposition carries; None when none or several engines' do."""
    engines: set[str] = set()
    for line in text.splitlines():
        found = _METRIC_NAME.match(line.strip())
        if found is None:
            continue
        name = found.group(1).lower()
        engines.update(engine for prefix, engine in ENGINE_METRIC_PREFIXES if name.startswith(prefix))
        if len(engines) > 1:
            return None
    return next(iter(engines), None)


def engine_from_owner(owned_by: str | None) -> str | None:
    """The engine a /v1/models `owned_by` names exactly (vLLM, SGLang, LMDeploy and llama.cpp put their own name)."""
    wanted = normalize(owned_by or "")
    if not wanted:
        return None
    hits = {e.id for e in load_engines() if wanted in {normalize(n) for n in (e.id, e.name, *e.aliases)}}
    return hits.pop() if len(hits) == 1 else None


def _tails(name: str) -> set[str]:
    """A name and its last path segment, normalised: 'Qwen/Qwen2.5-7B' and '/models/qwen2.5-7b' match 'qwen2.5-7b'."""
    cleaned = name.strip().rstrip("/")
    return {n for n in (normalize(cleaned), normalize(cleaned.rsplit("/", 1)[-1])) if n}


@cache
def _checkpoint_names() -> dict[str, frozenset[tuple[str, str | None]]]:
    """Normalised name -> the (model id, quantization or None) it stands for, from the model catalog."""
    names: dict[str, set[tuple[str, str | None]]] = {}

    def add(name: str, model_id: str, quant: str | None) -> None:
        for key in _tails(name):
            names.setdefault(key, set()).add((model_id, quant))

    for model in load_models():
        for name in (model.id, model.name, model.hf_repo, model.ollama_tag, *model.aliases):
            if name:
                add(name, model.id, None)
        for method, column in CHECKPOINT_COLUMNS.items():
            repo = str(getattr(model, column, "") or "")
            if not repo or repo == model.hf_repo:
                continue
            add(repo, model.id, None if method.startswith(_MANY_QUANTS) else method)
    return {key: frozenset(found) for key, found in names.items()}


def model_from_names(names: Iterable[str]) -> tuple[str | None, str | None]:
    """(model id, quantization) the served names point to, each only when exactly one catalog entry fits.

    The quantization comes only from a published quantized checkpoint ('…-AWQ'); the official checkpoint tells
    none (an engine may quantize it on the fly).
    """
    table = _checkpoint_names()
    hits: set[tuple[str, str | None]] = set()
    for name in names:
        for key in _tails(name):
            hits |= table.get(key, frozenset())
    models = {model_id for model_id, _ in hits}
    if len(models) != 1:
        return None, None
    quants = {quant for _, quant in hits if quant is not None}
    return models.pop(), quants.pop() if len(quants) == 1 else None


def detect(given: Deployment, served_name: str, listing: object = None, metrics_text: str | None = None) -> Deployment:
    """The deployment with its blank engine, model and quantization filled from what the server told.

    `listing` is the /v1/models answer (parsed JSON), `metrics_text` the /metrics exposition; either may be None.
    Given fields stay; what was filled is named in `source`.
    """
    found: dict[str, Any] = {}
    source = dict(given.source)
    entry = next((m for m in served_models(listing) if m.id == served_name), None)
    if given.engine is None:
        engine = engine_from_metrics(metrics_text) if metrics_text else None
        where = METRICS
        if engine is None and entry is not None:
            engine, where = engine_from_owner(entry.owned_by), MODELS
        if engine is not None:
            found["engine"], source["engine"] = engine, where
    if entry is not None and (given.model is None or given.quant is None):
        model, quant = model_from_names([n for n in (entry.root, entry.id) if n])
        if given.model is None and model is not None:
            found["model"], source["model"] = model, MODELS
        if given.quant is None and quant is not None and (given.model or model) == model:
            found["quant"], source["quant"] = quant, MODELS
    if not found:
        return given
    return given.model_copy(update={**found, "source": source})
