"""Catalogs with sources: GPUs, engine limits and the handbook's numbers, loaded from the data files beside them."""

from catalog.engine_limits import EngineLimit, default_max_num_seqs, load_engine_limits
from catalog.gpus import Gpu, GpuLookupError, find_gpu, load_gpus
from catalog.handbook import Handbook, load_handbook
from catalog.releases import engine_release

__all__ = [
    "EngineLimit",
    "Gpu",
    "GpuLookupError",
    "Handbook",
    "default_max_num_seqs",
    "engine_release",
    "find_gpu",
    "load_engine_limits",
    "load_gpus",
    "load_handbook",
]
