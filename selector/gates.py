"""Architecture gates: whether a quantization format runs on a GPU natively, degraded, or not at all (rules.toml)."""

from pydantic import BaseModel, ConfigDict

from catalog.engines import gpu_platform
from catalog.gpus import Gpu
from catalog.quantization import get_quant, load_quant_methods, sm_label, sm_name
from i18n import DEFAULT_LANGUAGE, Language
from selector.rules import Statement, load_rules

LIST_SEPARATOR: dict[Language, str] = {"en": ", ", "zh": "、"}


class Gate(BaseModel):
    """Whether a method runs on a GPU and how (full, degraded): the gate's rule id, its sentence and its source."""

    model_config = ConfigDict(frozen=True)

    method: str
    allowed: bool
    degraded: bool = False
    rule_id: str
    reason: str
    source: str


def gate(method_id: str, gpu: Gpu, language: Language = DEFAULT_LANGUAGE) -> Gate:
    """Check a method against a GPU's architecture: what runs natively, what runs degraded, what cannot run.

    The reason is worded in the language (rules.toml's `reason_zh`); the source stays English.
    """
    method = get_quant(method_id)
    gates = load_rules().gates
    platform = gpu_platform(gpu)
    sm = gpu.sm
    values: dict[str, object] = {
        "method": method.name,
        "method_source": method.source,
        "min_sm": method.min_sm,
        "fallback": method.older_arch_fallback,
        "gpu": gpu.name,
        "arch": gpu.arch,
        "platform": platform,
        "sm": sm_name(gpu),
        "marlin_sm": sm_label(gates.marlin_min_sm),
        "runs_there": LIST_SEPARATOR[language].join(m.name for m in load_quant_methods() if platform in m.vendors),
    }

    def outcome(statement: Statement, *, allowed: bool, degraded: bool = False) -> Gate:
        reason, source = statement.reason_for(values, language), statement.source_for(values)
        return Gate(
            method=method_id, allowed=allowed, degraded=degraded, rule_id=statement.id, reason=reason, source=source
        )

    marlin_arch = sm is not None and sm >= gates.marlin_min_sm
    if platform not in method.vendors:
        return outcome(gates.no_kernels, allowed=False)
    if method.needs == "fp4":
        if gpu.native_fp4:
            return outcome(gates.fp4_native, allowed=True)
        return outcome(gates.fp4_missing, allowed=False)
    if method.needs == "mxfp4":
        if gpu.native_fp4:
            return outcome(gates.fp4_native, allowed=True)
        if (platform == "nvidia" and marlin_arch) or (platform == "amd" and gpu.native_fp8):
            return outcome(gates.mxfp4_weight_only, allowed=True, degraded=True)
        return outcome(gates.fp4_missing, allowed=False)
    if method.needs == "fp8":
        if gpu.native_fp8:
            return outcome(gates.fp8_native, allowed=True)
        if platform == "nvidia" and marlin_arch:
            return outcome(gates.fp8_weight_only, allowed=True, degraded=True)
        return outcome(gates.fp8_missing, allowed=False)
    if sm is not None and sm < method.min_sm:
        return outcome(gates.below_min_sm, allowed=False)
    if method.needs == "marlin" and not (gpu.marlin_kernels and marlin_arch):
        return outcome(gates.marlin_missing, allowed=True, degraded=True)
    if method.needs == "marlin":
        return outcome(gates.marlin, allowed=True)
    return outcome(gates.runs, allowed=True)
