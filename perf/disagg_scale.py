"""The step-time model at published large-scale DeepSeek prefill and decode pools (none fitted on them).

`python -m perf.disagg_scale` estimates each row of perf/data/large_scale_disagg.csv (LMSYS's SGLang deployment on
96 H100s, DeepSeek's production on H800s; sources in large_scale_disagg.md) at its own layout and batch: one prefill
step of `batch_per_gpu` new tokens on every GPU, or one decode step of `batch_per_gpu` sequences on every GPU, and
prints throughput per node of 8 GPUs against the published figure.
"""

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from catalog.tables import read_rows
from commands import run_command
from perf.features import StepInputs
from perf.inputs import PerfRequest, Slo
from perf.resolve import node_gpus, resolve

LARGE_SCALE = Path(__file__).parent / "data" / "large_scale_disagg.csv"
_UNBOUNDED = Slo(ttft_p50_ms=1e12, ttft_p99_ms=1e12, tpot_p50_ms=1e12)


@dataclass(frozen=True)
class ScalePoint:
    """One published pool and the estimate of it, in tokens/s per node (input for prefill, output for decode)."""

    row_id: str
    publisher: str
    role: str
    gpus: int
    measured_tok_s_per_node: float
    est_tok_s_per_node: float

    @property
    def ratio(self) -> float:
        """Measured / estimated."""
        return self.measured_tok_s_per_node / self.est_tok_s_per_node


def _request(row: dict[str, str]) -> PerfRequest:
    gpus = int(row["gpus"])
    per_gpu = int(row["batch_per_gpu"])
    return PerfRequest(
        gpu=row["gpu"],
        model=row["model"],
        engine=row["engine_as"],
        quant=row["quant"],
        tp=int(row["tp"]),
        dp=int(row["dp"]),
        ep=int(row["ep"]),
        input_tokens=int(row["input_tokens"]),
        output_tokens=max(int(row["context_tokens"]) - int(row["input_tokens"]), 1),
        concurrency=(1,),
        max_num_seqs=max(per_gpu * gpus, 1) if row["role"] == "decode" else 1,
        speculative_tokens=int(row["speculative_tokens"]),
        acceptance_rate=float(row["acceptance_rate"]),
        slo=_UNBOUNDED,
    )


def estimate_row(row: dict[str, str]) -> float:
    """Tokens/s per node the step-time model gives at the row's layout and batch."""
    setup = resolve(_request(row))
    engine = setup.base
    gpus, per_gpu = int(row["gpus"]), float(row["batch_per_gpu"])
    nodes = gpus / node_gpus()
    if row["role"] == "prefill":
        prompt = float(row["input_tokens"])
        cached = prompt * float(row["cached_share"])
        new = per_gpu * gpus  # tokens computed in one step, over the whole copy
        seqs = new / (prompt - cached)
        step = StepInputs(
            decode_seqs=0.0,
            decode_ctx=0.0,
            prefill_tokens=new,
            prefill_pairs=new * (cached + (prompt - cached) / 2),
            prefill_ctx=seqs * cached,
            prefill_seqs=seqs,
        )
        return seqs * prompt / engine.step_s(step) / nodes  # input tokens, cache hits counted as DeepSeek counts them
    seqs = per_gpu * gpus
    step = StepInputs(
        decode_seqs=seqs, decode_ctx=seqs * float(row["context_tokens"]), tokens_per_decode=engine.computed_per_step
    )
    return seqs * engine.accepted_per_step / engine.step_s(step) / nodes


def scale_points(path: Path = LARGE_SCALE) -> list[ScalePoint]:
    """Every published large-scale pool with its estimate."""
    return [
        ScalePoint(
            row_id=row["id"],
            publisher=row["publisher"],
            role=row["role"],
            gpus=int(row["gpus"]),
            measured_tok_s_per_node=float(row["measured_tok_s_per_node"]),
            est_tok_s_per_node=estimate_row(row),
        )
        for row in read_rows(path)
    ]


def main() -> int:
    """Print each pool's measured and estimated throughput per node, and the median ratio."""
    points = scale_points()
    for p in points:
        print(
            f"{p.row_id} ({p.role}, {p.gpus} GPUs): measured {p.measured_tok_s_per_node:,.0f} tok/s per node, "
            f"estimated {p.est_tok_s_per_node:,.0f} ({p.ratio:.2f}x)"
        )
    print(f"median measured / estimated: {float(np.median([p.ratio for p in points])):.2f}x over {len(points)} pools")
    return 0


if __name__ == "__main__":
    run_command(main)
