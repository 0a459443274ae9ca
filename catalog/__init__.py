"""Catalogs with sources: GPUs and the handbook's numbers, loaded from the data files beside them."""

from catalog.gpus import Gpu, GpuLookupError, find_gpu, load_gpus
from catalog.handbook import Handbook, load_handbook

__all__ = ["Gpu", "GpuLookupError", "Handbook", "find_gpu", "load_gpus", "load_handbook"]
