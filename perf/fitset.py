"""The public measurements the step model is fitted and validated on, read into catalog terms."""

import math
import os
import re
import tomllib
from functools import cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from catalog.models import ModelSpec, load_models
from catalog.tables import read_rows
from perf.features import ReplicaShape
from perf.inputs import PerfRequest

DATA = Path(__file__).parent / "data"
FITSET_TOML = DATA / "fitset.toml"
LOCAL_POINTS_ENV = "PERF_LOCAL_POINTS"
REPEATED = "the same measurement repeated in a second file of the source"
UNKNOWN_RANKS = "a concurrency that is not the batch size times the attention-DP ranks (layout unknown)"


class Point(BaseModel):
    """One measured closed-loop operating point: a deployment, request lengths, concurrency, TTFT and TPOT."""

    model_config = ConfigDict(frozen=True)

    source: str  # 'aiconfigurator' or 'published'
    publisher: str  # who measured and published it (one held-out source per publisher and engine release)
    row_id: str
    model: str
    gpu: str
    engine: str
    engine_version: str
    quant: str
    shape: ReplicaShape
    input_tokens: int
    output_tokens: int
    concurrency: int | None  # None: the maximum-throughput ('max load') rows
    ttft_ms: float | None
    tpot_ms: float | None
    output_tok_s: float | None = None
    ttft_stat: str = "mean"  # what ttft_ms is: the mean over requests, or 'median' / 'p99' where a source says so
    layout: tuple[int | None, int | None, int | None, int | None] = (None, None, None, None)  # tp, pp, ep, dp given
    load: Literal["closed-loop", "one-batch"] = "closed-loop"  # one-batch: every request sent at once, once

    def max_load_request(self) -> PerfRequest:
        """The estimate this point's maximum throughput is compared with: its configuration, no SLO levels."""
        return PerfRequest(
            gpu=self.gpu,
            gpus=self.shape.gpus,
            model=self.model,
            engine=self.engine,
            engine_version=self.engine_version,
            quant=self.quant,
            tp=self.layout[0],
            pp=self.layout[1],
            ep=self.layout[2],
            dp=self.layout[3],
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            concurrency=(),
            max_throughput=True,
        )

    @property
    def kv_dtype(self) -> str:
        """The KV cache the benchmark ran with: FP8 beside FP8 and FP4 weights (aiconfigurator's default)."""
        return "fp8" if self.source == "aiconfigurator" and self.quant in {"fp8", "nvfp4"} else "auto"

    @property
    def release(self) -> str:
        """The engine release as published ('unversioned' where the source names none)."""
        return self.engine_version or "unversioned"

    @property
    def source_key(self) -> str:
        """The held-out source: one publisher's measurements of one engine release."""
        return f"{self.publisher} | {self.engine} {self.release}"

    @property
    def group(self) -> str:
        """The held-out unit: one (model, GPU, engine)."""
        return f"{self.model} | {self.gpu} | {self.engine}"

    @property
    def measured_tok_s(self) -> float | None:
        """Output tokens/s: as published, else from closed-loop TTFT and TPOT (concurrency x OSL / E2E)."""
        if self.output_tok_s is not None:
            return self.output_tok_s
        if self.ttft_ms is None or self.tpot_ms is None or not self.concurrency or self.load == "one-batch":
            return None
        e2e_ms = self.ttft_ms + (self.output_tokens - 1) * self.tpot_ms
        return self.concurrency * self.output_tokens / e2e_ms * 1000.0


@cache
def fitset_config() -> dict[str, object]:
    """perf/data/fitset.toml, as read."""
    with FITSET_TOML.open("rb") as handle:
        return tomllib.load(handle)


def _section(name: str) -> dict[str, object]:
    section = fitset_config()[name]
    assert isinstance(section, dict)
    return section


def _num(value: str) -> float | None:
    return float(value) if value not in ("", None) else None


def _aiconfigurator() -> tuple[list[Point], dict[str, int]]:
    cfg = _section("aiconfigurator")
    systems, backends, models, quants = (cfg[k] for k in ("systems", "backends", "models", "quant"))
    assert isinstance(systems, dict) and isinstance(backends, dict)
    assert isinstance(models, dict) and isinstance(quants, dict)
    points, left_out = [], dict[str, int]()
    known = {m.id: m for m in load_models()}
    for row in read_rows(DATA / str(cfg["file"])):
        reason = ""
        if row["mode"] != cfg["mode"]:
            reason = "disaggregated serving"
        elif row["model_path"] not in models:
            reason = f"model {row['model_path']} left out"
        elif str(models[row["model_path"]]) not in known:
            reason = f"model {models[row['model_path']]} not in the catalog"
        elif row["system"] not in systems:
            reason = f"system {row['system']} not in the catalog"
        shape = None if reason else _aiconfigurator_shape(row, known[str(models[row["model_path"]])])
        if shape is None:
            reason = reason or UNKNOWN_RANKS
            left_out[reason] = left_out.get(reason, 0) + 1
            continue
        points.append(
            Point(
                source="aiconfigurator",
                publisher="aiconfigurator",
                row_id=row["id"],
                model=str(models[row["model_path"]]),
                gpu=str(systems[row["system"]]),
                engine=str(backends[row["backend"]]),
                engine_version=row["backend_version"],
                quant=str(quants[row["gemm_quant_mode"]]),
                shape=shape,
                input_tokens=int(row["isl"]),
                output_tokens=int(row["osl"]),
                concurrency=_aiconfigurator_concurrency(row),
                ttft_ms=_num(row["silicon_ttft_ms"]),
                tpot_ms=_num(row["silicon_tpot_ms"]),
            )
        )
    once: dict[tuple[object, ...], Point] = {}
    for point in points:
        once.setdefault(_measurement(point, known[point.model]), point)  # the first of a repeated one is kept
    if len(once) < len(points):
        left_out[REPEATED] = len(points) - len(once)
    return list(once.values()), left_out


def _measurement(point: Point, model: ModelSpec) -> tuple[object, ...]:
    """What makes two rows one measurement: everything but the row id, as the source repeats runs in two files.

    A repeat may print a figure's last digit differently (15.855620048654977 and ...975) and name another model
    of the same architecture (its `dsr1_...` rows say DeepSeek-V3 where the 2026-03-25 file says DeepSeek-R1), so
    figures compare to 12 significant digits and the model by its architecture.
    """
    fields: list[object] = []
    for name, value in point:
        if name == "model":
            fields.append(model.architecture_key)
        elif isinstance(value, float):
            fields.append(float(f"{value:.12g}"))
        elif name != "row_id":
            fields.append(value)
    return tuple(fields)


def _aiconfigurator_concurrency(row: dict[str, str]) -> int:
    """The benchmark's concurrency: `silicon_concurrency` in the row's provenance, else its batch size.

    The batch size is per attention data-parallel rank (c256 over 8 ranks is written batch_size 32), so with
    attention DP it is not the load the benchmark offered.
    """
    given = re.search(r"silicon_concurrency=(\d+)", row["silicon_data_source"])
    return int(given.group(1)) if given else int(float(row["batch_size"]))


def _aiconfigurator_shape(row: dict[str, str], model: ModelSpec) -> ReplicaShape | None:
    """A row's layout (tp x attention-DP GPUs), mended where the columns cannot be what the source ran; None if unknown.

    - Squared expert parallelism: rows that give attention DP and split the experts as moe_tp = moe_ep > 1 with
      tp x adp = moe_tp x moe_ep are an export error of the source. The same measurements appear in its 2026-03-25
      rows with moe_tp 1, and the row ids name the real layout (`..._tp8_ep8_...` is written tp_size 64, moe_tp 8,
      moe_ep 8), so such a row ran on moe_tp GPUs with the experts spread over all of them.
    - The batch size is per attention-DP rank, so the benchmark's concurrency is the batch size x the ranks. Older
      rows leave attention DP blank: a concurrency of tp x the batch size (c224 written batch_size 56 on tp 4) ran
      attention data-parallel over tp GPUs, and any other multiple leaves the layout unknown (None).
    - Tensor parallelism that does not divide the attention heads (DeepSeek-R1 on 12 to 72 GB200s) cannot split
      attention: an MoE model at that width runs attention data-parallel with experts over every GPU.
    """
    tp = int(float(row["tp_size"] or 1))
    adp = int(float(row["attention_dp_size"] or 1) or 1)
    moe_tp = int(float(row["moe_tp_size"] or 1) or 1)
    ep = int(float(row["moe_ep_size"] or 1) or 1)
    if row["attention_dp_size"] != "" and moe_tp == ep > 1 and tp * adp == moe_tp * ep:
        tp, adp = (tp // ep, adp) if tp > 1 else (tp, adp // ep)
    ranks = _aiconfigurator_concurrency(row) / (float(row["batch_size"] or 0) or 1.0)
    if adp == 1 and ranks == tp > 1:
        tp, adp = 1, tp
    elif ranks != int(float(row["attention_dp_size"] or 1) or 1):
        return None
    if adp == 1 and model.experts and model.attention_heads % tp:
        tp, adp, ep = 1, tp, tp
    return ReplicaShape(tensor_parallel=tp * adp, attention_data_parallel=adp > 1, expert_parallel=ep > 1)


@cache
def published_points() -> tuple[Point, ...]:
    """The published measurements alone (an estimate looks here for ones of its own configuration)."""
    return tuple(_published())


def local_points_files() -> list[Path]:
    """Local CSVs written by `python -m perf.localsource`, named by PERF_LOCAL_POINTS (os.pathsep between them)."""
    return [Path(p) for p in os.environ.get(LOCAL_POINTS_ENV, "").split(os.pathsep) if p]


def _published() -> list[Point]:
    path = DATA / str(_section("published")["file"])
    points = []
    for found in (path, *local_points_files()):
        if found.exists():
            points += read_points(found)
    return points


def read_points(path: Path) -> list[Point]:
    """The measured points of one CSV in published_points.csv's columns."""
    points = []
    for row in read_rows(path, comment="#"):
        conc = row["concurrency"].strip()
        points.append(
            Point(
                source="published",
                publisher=row["publisher"],
                row_id=row["id"],
                model=row["model"],
                gpu=row["gpu"],
                engine=row["engine"],
                engine_version=row["engine_version"],
                quant=row["quant"],
                shape=_published_shape(row),
                input_tokens=int(row["input_tokens"]),
                output_tokens=int(row["output_tokens"]),
                concurrency=None if conc == "max" else int(conc),
                ttft_ms=_num(row["ttft_ms"]),
                tpot_ms=_num(row["tpot_ms"]),
                output_tok_s=_num(row["output_tok_s"]),
                ttft_stat=row["ttft_stat"] or "mean",
                layout=_given_layout(row),
                load="one-batch" if row.get("load") == "one-batch" else "closed-loop",
            )
        )
    return points


def _given_layout(row: dict[str, str]) -> tuple[int | None, int | None, int | None, int | None]:
    tp, pp, ep, dp = (int(row[k]) if row.get(k) else None for k in ("tp", "pp", "ep", "dp"))
    return tp, pp, ep, dp


def _published_shape(row: dict[str, str]) -> ReplicaShape:
    """A published row's layout: tp x pp x dp GPUs where the source gives them, else tensor parallel over all."""
    gpus = int(row["gpus"] or 1)
    tp, pp, dp, ep = (int(row[k]) if row.get(k) else 0 for k in ("tp", "pp", "dp", "ep"))
    if not (tp or pp or dp):
        return ReplicaShape(tensor_parallel=gpus, expert_parallel=ep > 1)
    pp, dp = pp or 1, dp or 1
    return ReplicaShape(
        tensor_parallel=(tp or max(gpus // (pp * dp), 1)) * dp,
        pipeline_parallel=pp,
        attention_data_parallel=dp > 1,
        expert_parallel=ep > 1,
        dp_ranks=dp if dp > 1 else 0,
    )


@cache
def load_points() -> tuple[tuple[Point, ...], tuple[tuple[str, int], ...]]:
    """Every usable point (aiconfigurator first, then the published ones) and the counts left out, by reason."""
    ai, left_out = _aiconfigurator()
    points = [p for p in ai if p.ttft_ms is not None and p.tpot_ms is not None and math.isfinite(p.tpot_ms)]
    return tuple(points + _published()), tuple(sorted(left_out.items()))
