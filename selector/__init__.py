"""The engine and quantization advisor: rules as data over GPU, model and engine catalogs, no Streamlit."""

from selector.advisor import Advice, Decision, advise, gpu_class
from selector.engines import ServingEngine, find_engine, get_engine, gpu_platform, load_engines
from selector.errors import NameLookupError, SelectorError, UnknownEngineError, UnknownModelError
from selector.figures import memory_fit_figure
from selector.inputs import (
    LABELS,
    AdviceRequest,
    Deploy,
    Ecosystem,
    Priority,
    Workload,
    YesNo,
    names_worded_by,
    nearest_params,
)
from selector.kvcache import kv_bytes_per_token, kv_bytes_per_token_per_gpu
from selector.launch import LaunchCommand
from selector.memory import MemoryFit
from selector.models import CUSTOM_MODEL, ModelSpec, find_model, load_models
from selector.quantization import AUTO, Gate, find_quant, gate, load_quant_methods, weights_gb
from selector.rules import load_rules
from selector.speculative import Speculative

__all__ = [
    "AUTO",
    "CUSTOM_MODEL",
    "LABELS",
    "Advice",
    "AdviceRequest",
    "Decision",
    "Deploy",
    "Ecosystem",
    "Gate",
    "LaunchCommand",
    "MemoryFit",
    "ModelSpec",
    "NameLookupError",
    "Priority",
    "SelectorError",
    "ServingEngine",
    "Speculative",
    "UnknownEngineError",
    "UnknownModelError",
    "Workload",
    "YesNo",
    "advise",
    "find_engine",
    "find_model",
    "find_quant",
    "gate",
    "get_engine",
    "gpu_class",
    "gpu_platform",
    "kv_bytes_per_token",
    "kv_bytes_per_token_per_gpu",
    "load_engines",
    "load_models",
    "load_quant_methods",
    "load_rules",
    "memory_fit_figure",
    "names_worded_by",
    "nearest_params",
    "weights_gb",
]
