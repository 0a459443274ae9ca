"""The formats this branch's importers read (inference-perf folders, InferenceX results, llm-d Benchmark Reports)."""

from probes.importers.base import Importer
from probes.importers.llmd_br import IMPORTER as LLMD_BR

IMPORTERS: tuple[Importer, ...] = (LLMD_BR,)
