"""Every fact with its source: GPUs, models, engines, quantization formats, KV-cache types, limits, the handbook."""

from catalog.engine_limits import EngineLimit, default_max_num_seqs, load_engine_limits
from catalog.engines import ServingEngine, find_engine, get_engine, gpu_platform, load_engines
from catalog.errors import (
    GpuLookupError,
    InputError,
    NameLookupError,
    UnknownEngineError,
    UnknownModelError,
    UnknownQuantizationError,
)
from catalog.gpus import Gpu, find_gpu, load_gpus
from catalog.handbook import Handbook, load_handbook
from catalog.kvcache import kv_bytes_per_token, kv_bytes_per_token_per_gpu
from catalog.models import CUSTOM_MODEL, ModelSpec, find_model, load_models
from catalog.quantization import AUTO, QuantMethod, find_quant, get_quant, load_quant_methods, weights_gb
from catalog.releases import engine_release

__all__ = [
    "AUTO",
    "CUSTOM_MODEL",
    "EngineLimit",
    "Gpu",
    "GpuLookupError",
    "Handbook",
    "InputError",
    "ModelSpec",
    "NameLookupError",
    "QuantMethod",
    "ServingEngine",
    "UnknownEngineError",
    "UnknownModelError",
    "UnknownQuantizationError",
    "default_max_num_seqs",
    "engine_release",
    "find_engine",
    "find_gpu",
    "find_model",
    "find_quant",
    "get_engine",
    "get_quant",
    "gpu_platform",
    "kv_bytes_per_token",
    "kv_bytes_per_token_per_gpu",
    "load_engine_limits",
    "load_engines",
    "load_gpus",
    "load_handbook",
    "load_models",
    "load_quant_methods",
    "weights_gb",
]
