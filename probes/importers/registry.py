"""The formats this branch's importers read (inference-perf folders, InferenceX results, llm-d Benchmark Reports)."""

from probes.importers.base import Importer
from probes.importers.inference_perf import IMPORTER as INFERENCE_PERF
from probes.importers.inferencex import IMPORTER as INFERENCEX
from probes.importers.llmd_br import IMPORTER as LLMD_BR

IMPORTERS: tuple[Importer, ...] = (INFERENCE_PERF, INFERENCEX, LLMD_BR)
