"""What a topology estimate asks and answers: agg, disagg or best; the pools, the handoff, the figures per GPU."""

import argparse
import json
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from perf.kv_transfer import AUTO_LINK
from perf.result import Band, Basis, Estimate, Percentiles, Wording

ServedTopology = Literal["agg", "disagg"]  # how a deployment serves: one pool, or prefill and decode pools
Topology = Literal["agg", "disagg", "best"]  # what to estimate: either, or the better of the two
DISAGG_TOML = Path(__file__).parent / "data" / "disagg.toml"
DISAGG_BANDS = Path(__file__).parent / "data" / "disagg_bands.json"


@cache
def _disagg_data() -> dict[str, object]:
    return tomllib.loads(DISAGG_TOML.read_text(encoding="utf-8"))


def disagg_bands() -> dict[str, Band]:
    """The two-pool estimate's bands, from its held-out check (perf/data/disagg_bands.json, by bench/perf_model.py)."""
    data = json.loads(DISAGG_BANDS.read_text(encoding="utf-8"))
    return {
        key: Band(low_ratio=data[key][0], high_ratio=data[key][1], group=str(data["group"]), groups=int(data["groups"]))
        for key in ("output_tok_s", "tpot_ms", "ttft_ms")
    }


def min_gain() -> float:
    """The smallest gain per GPU for which `best` picks two pools (perf/data/disagg.toml)."""
    value = _disagg_data()["min_gain"]
    assert isinstance(value, float)
    return value


def stream_budget_shares() -> tuple[float, ...]:
    """Shares of the TTFT left to a two-pool request that its decode server's streams may take (disagg.toml)."""
    value = _disagg_data()["stream_budget_shares"]
    assert isinstance(value, list)
    return tuple(float(v) for v in value)


class TopologyOptions(BaseModel):
    """How the deployment is split: one pool (agg), a prefill and a decode pool (disagg), or the better of the two."""

    model_config = ConfigDict(frozen=True)

    topology: Topology = Field(default="agg", description="agg (one pool), disagg (prefill and decode pools) or best")
    prefill_gpus: int | None = Field(
        default=None, ge=1, le=64, description="GPUs of one prefill replica (default: the advisor's copy)"
    )
    decode_gpus: int | None = Field(
        default=None, ge=1, le=64, description="GPUs of one decode replica (default: the advisor's copy)"
    )
    total_gpus: int | None = Field(
        default=None, ge=1, le=4096, description="GPUs of the whole deployment the pools share (default: --gpus)"
    )
    link: str = Field(
        default=AUTO_LINK,
        description="the link between pools: nvlink, infiniband, roce, ethernet or auto (NVLink inside one "
        "NVLink domain, else InfiniBand)",
    )

    @field_validator("topology", "link", mode="before")
    @classmethod
    def _lower(cls, value: object) -> object:
        return value.strip().lower() if isinstance(value, str) else value


TOPOLOGY_FLAGS = tuple(TopologyOptions.model_fields)


def add_topology_flags(parser: argparse.ArgumentParser) -> None:
    """One flag per TopologyOptions field (--topology, --prefill-gpus, ...), its help the field's description."""
    for name, info in TopologyOptions.model_fields.items():
        choices = ("agg", "disagg", "best") if name == "topology" else None
        parser.add_argument(
            f"--{name.replace('_', '-')}",
            dest=name,
            choices=choices,
            metavar=None if choices else "LINK" if name == "link" else "N",
            help=info.description,
        )


class Pool(BaseModel):
    """One pool: how many replicas, of how many GPUs each."""

    model_config = ConfigDict(frozen=True)

    replicas: int
    gpus_per_replica: int


class TopologyEstimate(BaseModel):
    """One topology's figures for the whole deployment within the SLO (an estimate; see `basis`)."""

    model_config = ConfigDict(frozen=True)

    topology: ServedTopology
    prefill: Pool
    decode: Pool
    gpus_used: int
    link: str  # '' for one pool
    kv_bytes_per_request: int
    kv_transfer_ms: float
    output_tok_s: float  # the deployment's, at the operating point within the SLO (0: the SLO cannot be met)
    output_tok_s_per_gpu: float
    tok_s_per_user: float  # 1000 / TPOT
    request_rate_rps: float
    ttft_ms: Percentiles  # the transfer included
    tpot_ms: Percentiles
    meets_slo: bool
    basis: Basis
    bands: dict[str, Band]
    notes: tuple[Wording, ...] = ()

    def to_json_dict(self) -> dict[str, object]:
        """The topology's keys of the CLI's --json object (a contract)."""
        return {
            "topology": self.topology,
            "prefill": self.prefill.model_dump(),
            "decode": self.decode.model_dump(),
            "gpus_used": self.gpus_used,
            "link": self.link,
            "kv_bytes_per_request": self.kv_bytes_per_request,
            "kv_transfer_ms": self.kv_transfer_ms,
            "output_tok_s_deployment": self.output_tok_s,
            "output_tok_s_per_gpu": self.output_tok_s_per_gpu,
            "tok_s_per_user": self.tok_s_per_user,
            "request_rate_rps": self.request_rate_rps,
            # null when no layout meets the SLO: there is no operating point within it to report
            "ttft_ms": self.ttft_ms.model_dump() if self.meets_slo else None,
            "tpot_ms": self.tpot_ms.model_dump() if self.meets_slo else None,
            "meets_slo": self.meets_slo,
            "topology_basis": self.basis.model_dump(),
            "topology_bands": {
                k: {"low_ratio": b.low_ratio, "high_ratio": b.high_ratio} for k, b in self.bands.items()
            },
            "topology_notes": [n.worded() for n in self.notes],
        }


@dataclass(frozen=True)
class TopologyResult:
    """The aggregated estimate (its request, names and levels), the chosen topology and the other one, if asked."""

    estimate: Estimate
    chosen: TopologyEstimate
    alternative: TopologyEstimate | None

    def to_json_dict(self) -> dict[str, object]:
        """The CLI's --json: the estimate's keys, the chosen topology's, and `alternative` for --topology best."""
        out = {**self.estimate.to_json_dict(), **self.chosen.to_json_dict()}
        if self.alternative is not None:
            out["alternative"] = self.alternative.to_json_dict()
        return out


def _line(t: TopologyEstimate) -> str:
    pools = (
        f"{t.prefill.replicas}x{t.prefill.gpus_per_replica} GPU prefill + "
        f"{t.decode.replicas}x{t.decode.gpus_per_replica} GPU decode, KV over {t.link} {t.kv_transfer_ms:g} ms"
        if t.topology == "disagg"
        else f"{t.prefill.replicas}x{t.prefill.gpus_per_replica} GPU replicas"
    )
    if not t.meets_slo:
        return f"{t.topology:>6}: no layout searched meets the SLO ({pools})"
    return (
        f"{t.topology:>6}: {t.output_tok_s_per_gpu:,.0f} tok/s/GPU, {t.tok_s_per_user:,.1f} tok/s/user, "
        f"TTFT p50 {t.ttft_ms.p50:,.0f} ms, TPOT p50 {t.tpot_ms.p50:.1f} ms, {pools}"
    )


def render_topology(result: TopologyResult) -> str:
    """A plain-text summary for people: the chosen topology, then the other one, then the basis."""
    lines = ["ESTIMATE (within the SLO) " + _line(result.chosen)]
    if result.alternative is not None:
        lines.append("alternative             " + _line(result.alternative))
    lines.append(f"basis: {result.chosen.basis.text}")
    lines.extend(f"note: {n.worded()}" for n in result.chosen.notes)
    return "\n".join(lines)
