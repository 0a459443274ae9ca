"""InferenceMAX / InferenceX aggregated results (agg_*.json, one object or a list): a run each, aggregate-only.

Definitions from InferenceX's utils/process_result.py: the file copies vLLM's benchmark result with every *_ms key
renamed without '_ms' and divided by 1000 (seconds: median_ttft, p99_tpot, mean_e2el, ...), so ttft, tpot (vLLM's,
excluding the first token), itl and e2el are read back in ms. tput_per_gpu and output_tput_per_gpu divide total
and output throughput by the GPUs (tp on one node; prefill + decode GPUs, output by decode GPUs, multinode); they
are multiplied back. intvty (1000 / tpot) is not read. The file states no request counts, wall time or failures:
those stay 0 / unknown, so a level's SLO verdict says no request was counted.
"""

from datetime import datetime
from pathlib import Path
from typing import Any

from probes.deployment import Deployment
from probes.importers.base import ImportedRun, ImportFormatError, ImportProvenance
from probes.importers.common import (
    FILE_SOURCE,
    MS_PER_S,
    content_sha256,
    imported_run,
    imported_settings,
    level_of_aggregates,
    load_json,
    mapping,
    number,
    peek,
    stats_of,
)
from probes.importers.names import catalog_match
from probes.models import Stats

FORMAT_ID = "inferencex"
TOOL = "InferenceX"
MARKERS = ("tput_per_gpu", "conc", "hw")  # keys every aggregated result has
METRICS = {"ttft": "ttft_ms", "tpot": "tpot_ms", "itl": "itl_ms", "e2el": "e2e_ms"}  # InferenceX -> the level's
SETTINGS_KEYS = (
    "hw",
    "conc",
    "image",
    "model",
    "infmax_model_prefix",
    "framework",
    "precision",
    "spec_decoding",
    "disagg",
    "isl",
    "osl",
    "is_multinode",
    "tp",
    "ep",
    "dp_attention",
    "num_prefill_gpu",
    "num_decode_gpu",
)


def _stats(record: dict[str, Any], name: str, where: str) -> Stats:
    def value(prefix: str) -> float | None:
        return number(record, f"{prefix}_{name}", where)

    return stats_of(0, mean=value("mean"), p50=value("median"), p90=value("p90"), p99=value("p99"), scale=MS_PER_S)


def _gpus(record: dict[str, Any], where: str) -> tuple[float | None, float | None]:
    """(GPUs the total throughput is divided by, GPUs the output throughput is divided by)."""
    if record.get("is_multinode"):
        prefill, decode = number(record, "num_prefill_gpu", where), number(record, "num_decode_gpu", where)
        total = prefill + decode if prefill is not None and decode is not None else None
        return total, decode
    tp = number(record, "tp", where)
    return tp, tp


def _deployment(record: dict[str, Any], gpus: float | None) -> Deployment:
    values: dict[str, Any] = {
        "gpu": catalog_match("gpu", record.get("hw")),
        "model": catalog_match("model", record.get("model")),
        "engine": catalog_match("engine", record.get("framework")),
        "quant": catalog_match("quant", record.get("precision")),
        "gpu_count": int(gpus) if gpus is not None and gpus >= 1 else None,
    }
    known = {field: value for field, value in values.items() if value is not None}
    return Deployment(**known, source=dict.fromkeys(known, FILE_SOURCE))


def _records(document: Any, where: str) -> list[dict[str, Any]]:
    records = document if isinstance(document, list) else [document]
    if not records:
        raise ImportFormatError(f"{where}: an empty list, no result")
    found = [dict(mapping(record, f"{where} result {number}")) for number, record in enumerate(records)]
    for number_, record in enumerate(found):
        missing = [key for key in MARKERS if key not in record]
        if missing:
            raise ImportFormatError(f"{where} result {number_}: missing {', '.join(missing)}")
    return found


class InferenceXImporter:
    """InferenceMAX / InferenceX aggregated result JSON."""

    format_id = FORMAT_ID
    expected = (
        "inferencex: an InferenceMAX/InferenceX aggregated result JSON (agg_*.json) with hw, conc, "
        "tput_per_gpu and the latencies in seconds (median_ttft, ...), or a list of them"
    )

    def detect(self, path: Path) -> bool:
        if not path.is_file() or path.suffix.lower() != ".json":
            return False
        head = peek(path)
        return all(f'"{key}"' in head for key in MARKERS)

    def parse(self, path: Path, imported_at: datetime) -> list[ImportedRun]:
        records = _records(load_json(path), path.name)
        sha256 = content_sha256([path])
        runs: list[ImportedRun] = []
        for part, record in enumerate(records):
            where = f"{path.name} result {part}"
            total_gpus, output_gpus = _gpus(record, where)
            per_gpu = number(record, "tput_per_gpu", where)
            output_per_gpu = number(record, "output_tput_per_gpu", where)
            concurrency = int(number(record, "conc", where) or 1)
            level = level_of_aggregates(
                0,
                max(1, concurrency),
                started_at=imported_at,
                duration_s=0.0,
                completed=0,
                failed=0,
                input_tokens=0,
                output_tokens=0,
                ttft_ms=_stats(record, "ttft", where),
                tpot_ms=_stats(record, "tpot", where),
                itl_ms=_stats(record, "itl", where),
                e2e_ms=_stats(record, "e2el", where),
                req_s=None,
                output_tok_s=output_per_gpu * output_gpus if output_per_gpu is not None and output_gpus else None,
                total_tok_s=per_gpu * total_gpus if per_gpu is not None and total_gpus else None,
                counted=False,  # the file states no request counts
            )
            isl, osl = number(record, "isl", where), number(record, "osl", where)
            settings = imported_settings(
                model=str(record.get("model") or "unknown"),
                base_url=None,
                concurrency=[level.concurrency],
                requests_per_level=0,
                input_tokens=int(isl) if isl else None,
                max_tokens=int(osl) if osl else None,
                deployment=_deployment(record, total_gpus),
            )
            provenance = ImportProvenance(
                format=FORMAT_ID,
                tool=TOOL,
                tool_version=str(record["image"]) if record.get("image") else None,  # the serving image it ran
                file_name=path.name,
                file_sha256=sha256,
                part=part,
                settings={key: record[key] for key in SETTINGS_KEYS if key in record},
                imported_at=imported_at,
            )
            runs.append(
                imported_run(
                    provenance=provenance,
                    settings=settings,
                    levels=[level],
                    samples=[],
                    started_at=imported_at,
                    aggregate_only=True,
                )
            )
        return runs


IMPORTER = InferenceXImporter()
