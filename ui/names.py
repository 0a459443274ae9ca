"""Catalog ids as the pages name them: engines, quantizations, KV cache dtypes, a band's group, an estimate."""

from catalog import load_engines, load_quant_methods
from i18n import N_, Translate
from perf.result import CALIBRATING_GROUP, Basis, Wording
from tco.throughput import OperatingPoint

_KV_DTYPES = {"auto": N_("the model's own (auto)")}  # the engines' --kv-cache-dtype values that are not names
_KV_DTYPES_SHORT = {"auto": N_("as model")}  # the same, short enough for a metric card
_ENGINE_TOPICS = {"engine", "runner_up"}
_NEW_ARCH = "new-architecture"  # perf's band key of architectures the fit never saw
_ALL = "all"  # perf's band key of every engine pooled


def engine_name(engine_id: str) -> str:
    """'vllm' -> 'vLLM' (the id itself when the catalog has no such engine)."""
    return next((e.name for e in load_engines() if e.id == engine_id), engine_id)


def quant_name(method_id: str, *, short: bool = False) -> str:
    """'awq' -> 'AWQ 4-bit (W4A16)', or with short 'AWQ 4-bit' (the id itself when the catalog has no such method)."""
    name = next((q.name for q in load_quant_methods() if q.id == method_id), method_id)
    return name.split(" (")[0] if short else name


def kv_dtype_text(dtype: str, tr: Translate, *, short: bool = False) -> str:
    """A KV cache dtype as the page shows it: 'fp8' as it is, 'auto' worded (with short, as a metric card fits it)."""
    words = _KV_DTYPES_SHORT if short else _KV_DTYPES
    return tr(words[dtype]) if dtype in words else dtype


def choice_text(topic: str, choice: str, tr: Translate) -> str:
    """A decision's choice by its display name: an engine's or a quantization's name, a KV dtype worded."""
    if topic in _ENGINE_TOPICS:
        return engine_name(choice)
    if topic == "quantization":
        return quant_name(choice)
    if topic == "kv_cache_dtype":
        return kv_dtype_text(choice, tr)
    return choice


def group_words(group: str, tr: Translate) -> str:
    """A band's group key ('vllm|Hopper', 'new-architecture|vllm', 'all') in words, engines by their names."""
    if group == CALIBRATING_GROUP:
        return tr(group)
    parts = group.split("|")
    engine = parts[-1] if parts[0] == _NEW_ARCH else parts[0]
    who = tr("every engine") if engine == _ALL else engine_name(engine)
    if parts[0] == _NEW_ARCH:
        return tr("{engine} on architectures the fit never saw").format(engine=who)
    if len(parts) == 2:
        return tr("{engine} on {architecture} GPUs").format(engine=who, architecture=parts[1])
    return who


def basis_words(basis: Basis, tr: Translate) -> str:
    """What an estimate rests on, in the language of `tr`, engines by their names ('vllm 0.19.0' -> 'vLLM 0.19.0')."""
    return basis.text if basis.wording is None else _named(basis.wording).worded(tr)


def _named(wording: Wording) -> Wording:
    """The wording with its `engine` values by the engine's name (perf words them by id)."""
    values = tuple(
        (key, _named(value) if isinstance(value, Wording) else engine_name(value) if key == "engine" else value)
        for key, value in wording.values
    )
    return wording.model_copy(update={"values": values})


def estimate_label(point: OperatingPoint, tr: Translate) -> str:
    """How a page names an estimate: its bands, the held-out group in words, and its basis (tco's `label`, worded)."""
    group = group_words(point.estimate.band.group, tr)
    return point.label_text(tr, group=group, basis=basis_words(point.estimate.basis, tr))


def unmodelled_gpu_note(gpu_name: str, tr: Translate) -> str:
    """Why a part the step-time model cannot speak for (a Huawei Ascend NPU) gets no estimate, and what to do."""
    return tr(
        "No estimate on {gpu}: the step-time model was fitted on published NVIDIA and AMD measurements only, "
        "none on Huawei Ascend NPUs, so the page estimates no figure rather than one nothing supports. The few "
        "measurements published on this NPU, if any, are listed as published. Measure yours with /probe against "
        "your endpoint."
    ).format(gpu=gpu_name)
