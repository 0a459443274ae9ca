"""Disaggregated serving: a prefill pool and a decode pool estimated apart, the KV handed over, the ratio searched.

The prefill pool is simulated for TTFT under Poisson arrivals (prompts only, one output token); the decode pool for
TPOT and throughput in a closed loop whose prompts arrive already in the KV cache. TTFT adds the KV transfer (bytes
over the link between pools, plus its latency). The ratio of prefill to decode replicas is searched within the
deployment's GPUs for the most output tokens per second per GPU within the SLO. Both pools use the aggregated
step-time model as it was fitted, so a disaggregated figure is an extrapolation: its basis says so.
"""

import argparse
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from i18n import N_
from perf.errors import PerfError
from perf.estimate import estimate
from perf.hardware import model_facts
from perf.inputs import PerfRequest, Slo
from perf.kv_transfer import AUTO_LINK, kv_bytes_per_request, kv_transfer_ms, pool_link
from perf.levels import closed_level, poisson_level, search_concurrency, search_rate
from perf.resolve import Setup, resolve
from perf.result import Band, Basis, Estimate, LevelEstimate, Percentiles, Wording
from perf.simulate import Workload

Topology = Literal["agg", "disagg", "best"]
DISAGG_TOML = Path(__file__).parent / "data" / "disagg.toml"


@cache
def min_gain() -> float:
    """The smallest gain per GPU for which `best` picks two pools (perf/data/disagg.toml)."""
    value = tomllib.loads(DISAGG_TOML.read_text(encoding="utf-8"))["min_gain"]
    assert isinstance(value, float)
    return value


_UNBOUNDED_MS = 1e12  # an SLO term a pool does not answer for (the decode pool's TTFT, the prefill pool's TPOT)


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

    topology: Literal["agg", "disagg"]
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
            "ttft_ms": self.ttft_ms.model_dump(),
            "tpot_ms": self.tpot_ms.model_dump(),
            "meets_slo": self.meets_slo,
            "topology_basis": self.basis.model_dump(),
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


def _per_user(tpot_ms: float) -> float:
    return round(1000 / tpot_ms, 3) if tpot_ms > 0 else 0.0


def aggregated(request: PerfRequest, est: Estimate, total_gpus: int | None = None) -> TopologyEstimate:
    """The one-pool figures of an estimate: its operating point within the SLO, on every copy of the deployment."""
    lay = est.layout
    replicas = max((total_gpus or request.gpus) // lay.gpus, 1)
    level = est.slo_level
    per_replica = level.output_tok_s if level else 0.0
    zero = Percentiles(p50=0.0)
    return TopologyEstimate(
        topology="agg",
        prefill=Pool(replicas=replicas, gpus_per_replica=lay.gpus),
        decode=Pool(replicas=replicas, gpus_per_replica=lay.gpus),
        gpus_used=replicas * lay.gpus,
        link="",
        kv_bytes_per_request=0,
        kv_transfer_ms=0.0,
        output_tok_s=round(per_replica * replicas, 3),
        output_tok_s_per_gpu=round(per_replica / lay.gpus, 3),
        tok_s_per_user=_per_user(level.tpot_ms.p50) if level else 0.0,
        request_rate_rps=round(level.req_s * replicas, 4) if level else 0.0,
        ttft_ms=level.ttft_ms if level else zero,
        tpot_ms=level.tpot_ms if level else zero,
        meets_slo=level is not None,
        basis=est.basis,
        bands=est.bands,
    )


def _pool_setup(request: PerfRequest, gpus: int | None, copy: int) -> Setup:
    """One replica of a pool, resolved by the advisor for its GPUs (the aggregated copy's by default)."""
    return resolve(request.model_copy(update={"gpus": gpus or copy, "tp": None, "pp": None, "ep": None, "dp": None}))


def _prefill_rate(setup: Setup, request: PerfRequest, transfer_ms: float) -> tuple[float, LevelEstimate | None]:
    """The highest Poisson rate one prefill replica takes with TTFT plus the transfer within the SLO."""
    slo = request.slo
    if transfer_ms >= slo.ttft_p50_ms:
        return 0.0, None
    prefill_slo = Slo(
        ttft_p50_ms=slo.ttft_p50_ms - transfer_ms,
        ttft_p99_ms=max(slo.ttft_p99_ms - transfer_ms, 1e-6),
        tpot_p50_ms=_UNBOUNDED_MS,
    )
    work = Workload(request.input_tokens, 1, setup.workload.cached_tokens)
    cache: dict[float, LevelEstimate] = {}

    def at(rate: float) -> LevelEstimate:
        if rate not in cache:
            cache[rate] = poisson_level(setup.base, work, prefill_slo, rate)
        return cache[rate]

    single = at(1e-3)  # one request alone: the fastest a prompt is prefilled
    per_batch = max(setup.base.budget_tokens / max(request.input_tokens, 1), 1.0)
    ceiling = 2 * per_batch * 1000 / max(single.ttft_ms.p50, 1e-3)
    rate = search_rate(at, ceiling)
    return (rate or 0.0), (at(rate) if rate else None)


def _decode_level(setup: Setup, request: PerfRequest) -> LevelEstimate | None:
    """The busiest closed loop one decode replica runs within the TPOT limit (prompts arrive as KV)."""
    slo = Slo(ttft_p50_ms=_UNBOUNDED_MS, ttft_p99_ms=_UNBOUNDED_MS, tpot_p50_ms=request.slo.tpot_p50_ms)
    work = Workload(request.input_tokens, request.output_tokens, cached_tokens=max(request.input_tokens - 1, 0))
    cache: dict[int, LevelEstimate] = {}

    def at(c: int) -> LevelEstimate:
        if c not in cache:
            cache[c] = closed_level(setup.base, work, slo, c)
        return cache[c]

    limit = model_facts()["simulation"]["max_concurrency_search"]
    assert isinstance(limit, int)
    ceiling = max(1, min(setup.max_seqs, setup.capacity // max(request.context_tokens, 1), limit))
    best = search_concurrency(at, ceiling)
    return at(best) if best else None


def _ratio(total: int, p_gpus: int, d_gpus: int, p_rate: float, d_rate: float) -> tuple[int, int, float]:
    """Prefill and decode replicas within `total` GPUs that give the most requests/s per GPU (fewest GPUs on ties)."""
    best = (0, 0, 0.0, 0.0)
    for x in range(1, total // p_gpus + 1):
        y = (total - x * p_gpus) // d_gpus
        for yy in range(1, y + 1):
            rate = min(x * p_rate, yy * d_rate)
            per_gpu = rate / (x * p_gpus + yy * d_gpus)
            if per_gpu > best[3] * (1 + 1e-9):
                best = (x, yy, rate, per_gpu)
    return best[0], best[1], best[2]


def _sizes(request: PerfRequest, given: int | None) -> tuple[int, ...]:
    """The replica sizes tried: the one given, else powers of two up to --gpus (the model must fit)."""
    if given:
        return (given,)
    return tuple(n for n in (1, 2, 4, 8, 16, 32, 64) if n <= request.gpus)


def _setups(request: PerfRequest, given: int | None) -> dict[int, Setup]:
    out: dict[int, Setup] = {}
    for n in _sizes(request, given):
        try:
            setup = _pool_setup(request, n, n)
        except PerfError:
            if given:
                raise
            continue
        out.setdefault(setup.shape.gpus, setup)
    if not out:
        raise PerfError(f"gpus: the model fits no replica of up to {request.gpus} GPUs")
    return out


@dataclass(frozen=True)
class _Split:
    x: int
    y: int
    rate: float
    per_gpu: float
    p: Setup
    d: Setup
    d_level: LevelEstimate
    transfer_ms: float


def disaggregated(request: PerfRequest, options: TopologyOptions) -> TopologyEstimate:
    """The two-pool figures: each pool simulated on its own, the KV transfer added, sizes and ratio searched."""
    prefills, decodes = _setups(request, options.prefill_gpus), _setups(request, options.decode_gpus)
    first = next(iter(prefills.values()))
    need = min(prefills) + min(decodes)
    total = max(options.total_gpus or request.gpus, need)
    link = pool_link(options.link, first.gpu, total)
    kv_bytes = kv_bytes_per_request(first.advice.model, first.kv_dtype, request.input_tokens)
    d_levels = {n: _decode_level(s, request) for n, s in decodes.items()}
    best: _Split | None = None
    transfer_seen = 0.0
    for p_gpus, p_setup in prefills.items():
        for d_gpus, d_setup in decodes.items():
            d_level = d_levels[d_gpus]
            transfer = round(kv_transfer_ms(kv_bytes, link, p_setup.gpu, min(p_gpus, d_gpus)), 3)
            transfer_seen = transfer_seen or transfer
            if d_level is None or p_gpus + d_gpus > total:
                continue
            p_rate, _ = _prefill_rate(p_setup, request, transfer)
            if not p_rate:
                continue
            x, y, rate = _ratio(total, p_gpus, d_gpus, p_rate, d_level.req_s)
            per_gpu = rate / (x * p_gpus + y * d_gpus) if x else 0.0
            if per_gpu > 0 and (best is None or per_gpu > best.per_gpu * (1 + 1e-9)):
                best = _Split(x, y, rate, per_gpu, p_setup, d_setup, d_level, transfer)
    notes = []
    transfer = best.transfer_ms if best else transfer_seen
    notes.append(
        Wording(
            template=N_(
                "disaggregated: both pools use the aggregated step-time model; the KV handoff is {mb} MB over "
                "{link} ({ms} ms with its fixed latency)"
            ),
            values=(("mb", f"{kv_bytes / 1e6:.1f}"), ("link", link.name), ("ms", f"{transfer:g}")),
        )
    )
    if (options.total_gpus or request.gpus) < need:
        notes.append(
            Wording(
                template=N_("{gpus} GPUs cannot hold two pools: estimated on {need}"),
                values=(("gpus", str(options.total_gpus or request.gpus)), ("need", str(need))),
            )
        )
    zero = Percentiles(p50=0.0)
    if best is None:
        return TopologyEstimate(
            topology="disagg",
            prefill=Pool(replicas=1, gpus_per_replica=min(prefills)),
            decode=Pool(replicas=1, gpus_per_replica=min(decodes)),
            gpus_used=need,
            link=link.id,
            kv_bytes_per_request=kv_bytes,
            kv_transfer_ms=transfer,
            output_tok_s=0.0,
            output_tok_s_per_gpu=0.0,
            tok_s_per_user=0.0,
            request_rate_rps=0.0,
            ttft_ms=zero,
            tpot_ms=zero,
            meets_slo=False,
            basis=_disagg_basis(Basis(kind="extrapolated", text="")),
            bands={},
            notes=tuple(notes),
        )
    p_gpus, d_gpus = best.p.shape.gpus, best.d.shape.gpus
    scale = max(total // (best.x * p_gpus + best.y * d_gpus), 1)  # the ratio repeated over the deployment's GPUs
    best = _Split(
        best.x * scale, best.y * scale, best.rate * scale, best.per_gpu, best.p, best.d, best.d_level, best.transfer_ms
    )
    at_load = poisson_level(
        best.p.base, Workload(request.input_tokens, 1, best.p.workload.cached_tokens), request.slo, best.rate / best.x
    ).ttft_ms
    used = best.x * p_gpus + best.y * d_gpus
    out = best.rate * request.output_tokens
    est = estimate(request.model_copy(update={"gpus": d_gpus, "tp": None, "pp": None, "ep": None, "dp": None}))
    return TopologyEstimate(
        topology="disagg",
        prefill=Pool(replicas=best.x, gpus_per_replica=p_gpus),
        decode=Pool(replicas=best.y, gpus_per_replica=d_gpus),
        gpus_used=used,
        link=link.id,
        kv_bytes_per_request=kv_bytes,
        kv_transfer_ms=best.transfer_ms,
        output_tok_s=round(out, 3),
        output_tok_s_per_gpu=round(out / used, 3),
        tok_s_per_user=_per_user(best.d_level.tpot_ms.p50),
        request_rate_rps=round(best.rate, 4),
        ttft_ms=Percentiles(
            p50=round(at_load.p50 + best.transfer_ms, 3),
            p99=round((at_load.p99 or 0) + best.transfer_ms, 3),
            mean=round((at_load.mean or 0) + best.transfer_ms, 3),
        ),
        tpot_ms=best.d_level.tpot_ms,
        meets_slo=True,
        basis=_disagg_basis(est.basis),
        bands=est.bands,
        notes=tuple(notes),
    )


DISAGG_BASIS = N_(
    "extrapolated: two pools estimated apart with the aggregated model ({basis}); no disaggregated measurement "
    "of this configuration was used, and the bands are the aggregated model's (docs/disaggregated.md reports the "
    "error on published disaggregated runs, held out)"
)


def _disagg_basis(agg: Basis) -> Basis:
    wording = Wording(template=DISAGG_BASIS, values=(("basis", agg.wording or agg.text),))
    return Basis(kind="extrapolated", text=wording.worded(), wording=wording)


def _best_agg(request: PerfRequest, total: int | None) -> tuple[Estimate, TopologyEstimate]:
    """The aggregated copy size (powers of two up to --gpus) with the most output tokens/s per GPU within the SLO."""
    best: tuple[Estimate, TopologyEstimate] | None = None
    error: PerfError | None = None
    sizes = (request.gpus,) if request.layout_given else _sizes(request, None)
    for n in sizes:
        try:
            est = estimate(request if n == request.gpus else request.model_copy(update={"gpus": n}))
        except PerfError as exc:
            error = error or exc
            continue
        agg = aggregated(request, est, total or request.gpus)
        if best is None or agg.output_tok_s_per_gpu > best[1].output_tok_s_per_gpu * (1 + 1e-9):
            best = (est, agg)
    if best is None:
        assert error is not None
        raise error
    return best


def estimate_topology(request: PerfRequest, options: TopologyOptions) -> TopologyResult:
    """The asked topology's figures (with --topology best: the better per GPU within the SLO, and the other).

    `best` takes two pools only when they give `min_gain` more output tokens/s per GPU (perf/data/disagg.toml).

    The aggregated copy and the pools' replica sizes are searched over powers of two up to --gpus unless given.
    """
    est, agg = _best_agg(request, options.total_gpus)
    if options.topology == "agg":
        return TopologyResult(est, agg, None)
    try:
        split = disaggregated(request, options)
    except PerfError as exc:
        if options.topology == "disagg":
            raise
        return TopologyResult(est.model_copy(update={"notes": (*est.notes, f"disaggregated: {exc}")}), agg, None)
    if options.topology == "disagg":
        return TopologyResult(est, split, None)
    if split.meets_slo and split.output_tok_s_per_gpu > agg.output_tok_s_per_gpu * (1 + min_gain()):
        return TopologyResult(est, split, agg)
    return TopologyResult(est, agg, split)


def _line(t: TopologyEstimate) -> str:
    pools = (
        f"{t.prefill.replicas}x{t.prefill.gpus_per_replica} GPU prefill + "
        f"{t.decode.replicas}x{t.decode.gpus_per_replica} GPU decode, KV over {t.link} {t.kv_transfer_ms:g} ms"
        if t.topology == "disagg"
        else f"{t.prefill.replicas}x{t.prefill.gpus_per_replica} GPU replicas"
    )
    return (
        f"{t.topology:>6}: {t.output_tok_s_per_gpu:,.0f} tok/s/GPU, {t.tok_s_per_user:,.1f} tok/s/user, "
        f"TTFT p50 {t.ttft_ms.p50:,.0f} ms, TPOT p50 {t.tpot_ms.p50:.1f} ms, {pools}"
        f"{'' if t.meets_slo else ' (misses the SLO)'}"
    )


def render_topology(result: TopologyResult) -> str:
    """A plain-text summary for people: the chosen topology, then the other one, then the basis."""
    lines = ["ESTIMATE (within the SLO) " + _line(result.chosen)]
    if result.alternative is not None:
        lines.append("alternative             " + _line(result.alternative))
    lines.append(f"basis: {result.chosen.basis.text}")
    lines.extend(f"note: {n.worded()}" for n in result.chosen.notes)
    return "\n".join(lines)


def pool_levels(
    prefill: PerfRequest, decode: PerfRequest, prefill_replicas: int, decode_replicas: int, per_decode: int
) -> tuple[float, float]:
    """TTFT and TPOT p50 (ms) of fixed pools under a closed loop of `per_decode` users on every decode replica.

    The decode pool runs the closed loop. Its users cycle through prefill and decode, so when the prefill pool
    cannot keep up, they queue before it (Little's law: users = rate x (TTFT + decode time)); otherwise each
    prefill replica sees the rate as Poisson arrivals. TTFT adds the KV handoff (NVLink inside one domain, else
    InfiniBand) and the wait for a seat and KV room in the decode replica.
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
    saturated = closed_level(p_setup.base, prefill_work, prefill.slo, max(users // prefill_replicas, 1))
    capacity_rps = saturated.req_s * prefill_replicas  # the most prompts a second the prefill pool takes
    queued_ms = (users / capacity_rps - decode_s) * 1000 if capacity_rps else 0.0
    rate = min(level.req_s * decode_replicas, capacity_rps * 0.98) / prefill_replicas
    open_ms = poisson_level(p_setup.base, prefill_work, prefill.slo, rate).ttft_ms.p50
    waits_ms = level.ttft_ms.p50  # for a seat and KV room in the decode replica, and its first step
    return max(open_ms, queued_ms) + transfer + waits_ms, level.tpot_ms.p50


def interference_ratio(request: PerfRequest) -> float | None:
    """Prefill interference: one pool's TPOT at the SLO's load over decode-only TPOT there (None: no such load)."""
    est = estimate(request)
    level = est.slo_level
    if level is None or not level.concurrency or level.tpot_ms.p50 <= 0:
        return None
    setup = resolve(request.model_copy(update={"gpus": est.layout.gpus}))
    work = Workload(request.input_tokens, request.output_tokens, cached_tokens=max(request.input_tokens - 1, 0))
    alone = closed_level(setup.base, work, request.slo, level.concurrency)
    return round(level.tpot_ms.p50 / alone.tpot_ms.p50, 3) if alone.tpot_ms.p50 > 0 else None


def smallest_replica_gpus(request: PerfRequest) -> int:
    """The fewest GPUs (a power of two up to --gpus) one replica of the model fits on: a pool's smallest replica."""
    return min(_setups(request, None))


FRONTIER_TPOT_FACTORS = (0.5, 0.75, 1.0, 1.5, 2.0)
"""TPOT limits the frontier is drawn at, as multiples of the request's SLO TPOT."""


class FrontierPoint(BaseModel):
    """One topology's best output tokens/s per GPU within the SLO at one TPOT limit (an estimate)."""

    model_config = ConfigDict(frozen=True)

    topology: Literal["agg", "disagg"]
    tpot_limit_ms: float
    tok_s_per_user: float
    output_tok_s_per_gpu: float


def frontier(request: PerfRequest, options: TopologyOptions) -> list[FrontierPoint]:
    """Tokens/s per GPU against tokens/s per user for one pool and two, at TPOT limits around the request's."""
    points: list[FrontierPoint] = []
    for factor in FRONTIER_TPOT_FACTORS:
        limit = round(request.slo.tpot_p50_ms * factor, 3)
        asked = request.model_copy(update={"slo": request.slo.model_copy(update={"tpot_p50_ms": limit})})
        try:
            result = estimate_topology(asked, options.model_copy(update={"topology": "best"}))
        except PerfError:
            continue
        for t in (result.chosen, result.alternative):
            if t is not None and t.meets_slo and t.output_tok_s_per_gpu > 0:
                points.append(
                    FrontierPoint(
                        topology=t.topology,
                        tpot_limit_ms=limit,
                        tok_s_per_user=t.tok_s_per_user,
                        output_tok_s_per_gpu=t.output_tok_s_per_gpu,
                    )
                )
    return points
