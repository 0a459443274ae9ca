"""The two-pool estimate against measured disaggregated rows, aiconfigurator's and InferenceX's (none is fitted).

`python -m perf.disagg_check` prints one line per row it can estimate and the error of TTFT and TPOT (median
measured / estimated and the 10th-90th percentile band), and counts the rows it left out with the reason.
"""

import re
import sys
from collections import Counter
from dataclasses import dataclass

import numpy as np
from pydantic import ValidationError

from catalog.tables import read_rows
from commands import run_command
from perf.errors import PerfError
from perf.fitset import DATA, fitset_config
from perf.inputs import PerfRequest, Slo
from perf.kv_transfer import AUTO_LINK, kv_bytes_per_request, kv_transfer_ms, pool_link
from perf.levels import closed_level, prompts_in_step
from perf.resolve import resolve
from perf.simulate import Workload


@dataclass(frozen=True)
class Checked:
    """One measured disaggregated row and the estimate of it."""

    row_id: str
    engine: str  # the catalog's engine id
    ttft_ms: float
    tpot_ms: float
    est_ttft_ms: float
    est_tpot_ms: float


def _int(value: str) -> int:
    return int(float(value or 1) or 1)


def _why(exc: Exception) -> str:
    """A refusal in one line: the field and what it allows, a validation error's message, else its first words."""
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        return f"{'.'.join(str(p) for p in first['loc'])}: {first['msg'].lower()}"
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    said = [line.removeprefix("Value error, ") for line in lines if line.startswith("Value error, ")]
    if said:
        return said[0].split(";")[0]
    return lines[0].split(":")[0] if lines else type(exc).__name__


def _per_decode(row: dict[str, str]) -> int:
    """Users on one decode replica: the row's concurrency (`_c<N>_` in its id) over the decode workers."""
    found = re.search(r"_c(\d+)_", row["id"])
    workers = _int(row["decode_num_workers"])
    if found:
        return max(int(found.group(1)) // workers, 1)
    return _int(row["decode_batch_size"]) * _int(row["decode_attention_dp_size"])


def checked_rows(limit: int | None = None) -> tuple[list[Checked], Counter[str]]:
    """Every disaggregated row whose model, GPU and engine the catalog has, estimated with its own pools."""
    cfg = fitset_config()["aiconfigurator"]
    assert isinstance(cfg, dict)
    systems, backends, models, quants = cfg["systems"], cfg["backends"], cfg["models"], cfg["quant"]
    out: list[Checked] = []
    left: Counter[str] = Counter()
    for row in read_rows(DATA / str(cfg["file"])):
        if row["mode"] == "agg":
            continue
        if row["model_path"] not in models or row["system"] not in systems:
            left["model or system not in the catalog"] += 1
            continue
        if not (row["prefill_num_workers"] and row["decode_num_workers"]):
            # its concurrency is over pools of unknown size: read as one replica each, every user would sit on one
            # decode replica (the estimate's TPOT came out about twice the measured one on these rows)
            left["pool sizes not given (prefill and decode workers)"] += 1
            continue
        p_tp, p_dp, p_ep = (_int(row[f"prefill_{k}"]) for k in ("tp_size", "attention_dp_size", "moe_ep_size"))
        d_tp, d_dp, d_ep = (_int(row[f"decode_{k}"]) for k in ("tp_size", "attention_dp_size", "moe_ep_size"))
        base = {
            "gpu": systems[row["system"]],
            "model": models[row["model_path"]],
            "engine": backends[row["backend"]],
            "quant": quants[row["gemm_quant_mode"]],  # as the fit set reads it (fitset.toml [aiconfigurator.quant])
            "input_tokens": int(row["isl"]),
            "output_tokens": int(row["osl"]),
            "slo": Slo(ttft_p50_ms=1e9, ttft_p99_ms=1e9, tpot_p50_ms=1e9),
        }
        try:
            prefill = PerfRequest(
                **base,
                gpus=p_tp * p_dp,
                tp=p_tp,
                dp=p_dp,
                ep=p_ep if p_ep > 1 else None,
            )
            decode = PerfRequest(**base, gpus=d_tp * d_dp, tp=d_tp, dp=d_dp, ep=d_ep if d_ep > 1 else None)
            ttft, tpot = pool_levels(
                prefill,
                decode,
                _int(row["prefill_num_workers"]),
                _int(row["decode_num_workers"]),
                _per_decode(row),
            )
        except (PerfError, ValueError) as exc:
            left[f"no estimate: {_why(exc)}"] += 1
            continue
        measured_ttft, measured_tpot = float(row["silicon_ttft_ms"]), float(row["silicon_tpot_ms"])
        out.append(Checked(row["id"], str(base["engine"]), measured_ttft, measured_tpot, ttft, tpot))
        if limit and len(out) >= limit:
            break
    return out, left


INFERENCEX = DATA / "inferencex_disagg.csv"  # another publisher's measured runs: AMD, vLLM (inferencex_disagg.md)


def inferencex_rows() -> tuple[list[Checked], Counter[str]]:
    """InferenceX's measured 1P1D runs on MI300X, estimated with their own pools; held out from the bands too."""
    out: list[Checked] = []
    left: Counter[str] = Counter()
    for row in read_rows(INFERENCEX):
        base = {
            "gpu": row["gpu"],
            "model": row["model"],
            "engine": row["engine"],
            "quant": row["quant"],
            "input_tokens": int(row["input_tokens"]),
            "output_tokens": int(row["output_tokens"]),
            "slo": Slo(ttft_p50_ms=1e9, ttft_p99_ms=1e9, tpot_p50_ms=1e9),
        }
        pools = []
        try:
            for role in ("prefill", "decode"):
                tp, ep = int(row[f"{role}_tp"]), int(row[f"{role}_ep"])
                pools.append(PerfRequest(**base, gpus=tp, tp=tp, ep=ep if ep > 1 else None))
            replicas = int(row["prefill_replicas"]), int(row["decode_replicas"])
            per_decode = max(int(row["concurrency"]) // replicas[1], 1)
            ttft, tpot = pool_levels(pools[0], pools[1], replicas[0], replicas[1], per_decode)
        except (PerfError, ValueError) as exc:
            left[f"no estimate: {_why(exc)}"] += 1
            continue
        measured = float(row["median_ttft_ms"]), float(row["median_tpot_ms"])
        out.append(Checked(row["id"], row["engine"], *measured, ttft, tpot))
    return out, left


def pool_levels(
    prefill: PerfRequest, decode: PerfRequest, prefill_replicas: int, decode_replicas: int, per_decode: int
) -> tuple[float, float]:
    """TTFT and TPOT p50 (ms) of fixed pools under a closed loop of `per_decode` users on every decode replica.

    The decode pool runs the closed loop. Its users cycle through prefill and decode, so when the prefill pool
    cannot keep up, they queue before it (Little's law: users = rate x (TTFT + decode time)). Otherwise each
    prefill replica takes its users' prompts as a closed loop sends them (perf.levels.prompts_in_step): the first
    wave at once, later ones as Poisson arrivals at the rate, each read out with the one-pool readout's factor.
    TTFT is the longer of those two waits, plus the KV handoff (NVLink inside one domain, else InfiniBand) and the
    wait for a seat and KV room in the decode replica.
    """
    p_setup, d_setup = resolve(prefill), resolve(decode)
    work = Workload(decode.input_tokens, decode.output_tokens, cached_tokens=max(decode.input_tokens - 1, 0))
    level = closed_level(d_setup.base, work, decode.slo, per_decode)
    total = prefill_replicas * p_setup.shape.gpus + decode_replicas * d_setup.shape.gpus
    link = pool_link(AUTO_LINK, p_setup.gpu, total)
    kv_bytes = kv_bytes_per_request(p_setup.advice.model, p_setup.kv_dtype, prefill.input_tokens)
    transfer = kv_transfer_ms(kv_bytes, link, p_setup.gpu, min(p_setup.shape.gpus, d_setup.shape.gpus))
    prefill_work = Workload(prefill.input_tokens, 1, p_setup.workload.cached_tokens)
    users = per_decode * decode_replicas
    decode_s = max(decode.output_tokens - 1, 1) * level.tpot_ms.p50 / 1000
    per_replica = max(users // prefill_replicas, 1)
    saturated = closed_level(p_setup.base, prefill_work, prefill.slo, per_replica)
    capacity_rps = saturated.req_s * prefill_replicas  # the most prompts a second the prefill pool takes
    queued_ms = (users / capacity_rps - decode_s) * 1000 if capacity_rps else 0.0
    rate = min(level.req_s * decode_replicas, capacity_rps * 0.98) / prefill_replicas
    in_step_ms = prompts_in_step(p_setup.base, prefill_work, per_replica, rate).p50
    waits_ms = level.ttft_ms.p50  # for a seat and KV room in the decode replica, and its first step
    return max(in_step_ms, queued_ms) + transfer + waits_ms, level.tpot_ms.p50


def ratios(rows: list[Checked]) -> dict[str, list[float]]:
    """Measured / estimated TTFT and TPOT of each row (rows estimated at zero are left out)."""
    return {
        "ttft_ms": [r.ttft_ms / r.est_ttft_ms for r in rows if r.est_ttft_ms > 0],
        "tpot_ms": [r.tpot_ms / r.est_tpot_ms for r in rows if r.est_tpot_ms > 0],
    }


def bands(rows: list[Checked]) -> dict[str, object]:
    """The two-pool estimate's bands: measured / estimated, 10th and 90th percentile, over the held-out rows.

    Output tok/s is users / (TTFT + decode time), dominated by TPOT at these lengths, so its band is TPOT's inverted
    (a TPOT measured 0.35x the estimate means about 1/0.35 = 2.86x the tokens).
    """
    found = ratios(rows)
    ttft10, ttft90 = (round(float(v), 2) for v in np.percentile(found["ttft_ms"], [10, 90]))
    tpot10, tpot90 = (round(float(v), 2) for v in np.percentile(found["tpot_ms"], [10, 90]))
    return {
        "source": "python -m perf.disagg_check over aiconfigurator's measured disaggregated rows, none fitted "
        "(written by bench/perf_model.py)",
        "group": "disaggregated|held-out",
        "groups": len(rows),
        "ttft_ms": [ttft10, ttft90],
        "tpot_ms": [tpot10, tpot90],
        "output_tok_s": [round(1 / tpot90, 2), round(1 / tpot10, 2)],
    }


def _band(ratios: list[float]) -> str:
    if not ratios:
        return "-"
    p10, p50, p90 = np.percentile(ratios, [10, 50, 90])
    return f"median {p50:.2f}x, 80% within {p10:.2f}-{p90:.2f}x"


def main() -> int:
    """Print the rows and the error summary."""
    rows, left = checked_rows(int(sys.argv[1]) if len(sys.argv) > 1 else None)
    for r in rows:
        print(
            f"{r.row_id}: TTFT {r.ttft_ms:.0f} vs {r.est_ttft_ms:.0f} ms, "
            f"TPOT {r.tpot_ms:.1f} vs {r.est_tpot_ms:.1f} ms"
        )
    found = ratios(rows)
    print(
        f"{len(rows)} rows estimated; measured/estimated TTFT {_band(found['ttft_ms'])}; TPOT {_band(found['tpot_ms'])}"
    )
    for reason, n in left.most_common():
        print(f"left out {n}: {reason}")
    other, other_left = inferencex_rows()
    found = ratios(other)
    ttft, tpot = _band(found["ttft_ms"]), _band(found["tpot_ms"])
    print(f"InferenceX (held out by publisher): {len(other)} rows; TTFT {ttft}; TPOT {tpot}")
    for reason, n in other_left.most_common():
        print(f"InferenceX left out {n}: {reason}")
    return 0


if __name__ == "__main__":
    run_command(main)
