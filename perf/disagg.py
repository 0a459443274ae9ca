"""Disaggregated serving: a prefill pool and a decode pool estimated apart, the KV handed over, the ratio searched.

The prefill pool is simulated for TTFT with its users' prompts sent as a closed loop sends them: the first wave at
once, later ones as Poisson arrivals (prompts only, one output token; perf.levels.prompts_in_step), read out as the
one-pool copy's closed loop is and as the two-pool bands were measured (perf.disagg_check). The decode pool is
simulated for TPOT and throughput in a closed loop whose prompts arrive already in the KV cache. TTFT adds the KV
transfer (bytes over the link between pools, plus its latency) and the decode server's streams. The ratio of prefill
to decode replicas is searched within the deployment's GPUs for the most output tokens per second per GPU within the
SLO. Both pools use the aggregated step-time model as it was fitted, so a disaggregated figure is an extrapolation:
its basis says so.
"""

from dataclasses import dataclass, replace

from catalog.links import KvLink
from i18n import N_
from perf.errors import PerfError
from perf.estimate import estimate
from perf.hardware import model_facts
from perf.inputs import PerfRequest, Slo
from perf.kv_transfer import kv_bytes_per_request, kv_transfer_ms, pool_link
from perf.levels import UNBOUNDED_MS, closed_level, poisson_level, prompts_in_step, search_concurrency, search_rate
from perf.readout import TTFT_TERMS
from perf.resolve import Setup, copy_layout, resolve, with_advised_engine
from perf.result import Basis, Estimate, LevelEstimate, Percentiles, Wording
from perf.simulate import Workload
from perf.topology import (
    Pool,
    TopologyEstimate,
    TopologyOptions,
    TopologyResult,
    disagg_bands,
    min_gain,
    stream_budget_shares,
)


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
    return resolve(request.model_copy(update=copy_layout(request, gpus or copy)))


_ALONE_RPS = 1e-3  # a Poisson rate at which every prompt is prefilled alone


def _prefill_level(
    setup: Setup, request: PerfRequest, rate: float, levels: dict[float, LevelEstimate]
) -> LevelEstimate:
    """A prefill replica's Poisson level at `rate`, judged against no SLO, kept in `levels` for the next ask."""
    if rate not in levels:
        work = Workload(request.input_tokens, 1, setup.workload.cached_tokens)
        unbounded = Slo(ttft_p50_ms=UNBOUNDED_MS, ttft_p99_ms=UNBOUNDED_MS, tpot_p50_ms=UNBOUNDED_MS)
        levels[rate] = poisson_level(setup.base, work, unbounded, rate)
    return levels[rate]


def _prefill_rate(
    setup: Setup, request: PerfRequest, transfer_ms: float, levels: dict[float, LevelEstimate]
) -> tuple[float, LevelEstimate | None]:
    """The highest Poisson rate one prefill replica takes with TTFT plus `transfer_ms` within the SLO."""
    slo = request.slo
    if transfer_ms >= slo.ttft_p50_ms:
        return 0.0, None
    p50_ms, p99_ms = slo.ttft_p50_ms - transfer_ms, max(slo.ttft_p99_ms - transfer_ms, 1e-6)

    def at(rate: float) -> LevelEstimate:
        level = _prefill_level(setup, request, rate, levels)
        meets = level.ttft_ms.p50 <= p50_ms and (level.ttft_ms.p99 or 0.0) <= p99_ms
        return level.model_copy(update={"meets_slo": meets})

    single = at(_ALONE_RPS)  # one request alone: the fastest a prompt is prefilled
    per_batch = max(setup.base.budget_tokens / max(request.input_tokens, 1), 1.0)
    ceiling = 2 * per_batch * 1000 / max(single.ttft_ms.p50, 1e-3)
    rate = search_rate(at, ceiling)
    return (rate or 0.0), (at(rate) if rate else None)


def _decode_ceiling(setup: Setup, request: PerfRequest, stream_budget_ms: float) -> int:
    """The most users one decode replica may hold (0: not even one).

    Its sequence limit, its KV cache, and no more streams than `stream_budget_ms` of TTFT pays for (the readout's
    cost per request in flight).
    """
    limit = model_facts()["simulation"]["max_concurrency_search"]
    assert isinstance(limit, int)
    ceiling = max(1, min(setup.max_seqs, setup.capacity // max(request.context_tokens, 1), limit))
    per_stream_ms = _stream_ms(setup, 1)
    return min(ceiling, max(int(stream_budget_ms / per_stream_ms), 0)) if per_stream_ms > 0 else ceiling


def _decode_level(setup: Setup, request: PerfRequest, ceiling: int) -> LevelEstimate | None:
    """The busiest closed loop of at most `ceiling` users one decode replica runs within the TPOT limit.

    Its prompts arrive as KV (all but one token cached).
    """
    slo = Slo(ttft_p50_ms=UNBOUNDED_MS, ttft_p99_ms=UNBOUNDED_MS, tpot_p50_ms=request.slo.tpot_p50_ms)
    work = Workload(request.input_tokens, request.output_tokens, cached_tokens=max(request.input_tokens - 1, 0))
    cache: dict[int, LevelEstimate] = {}

    def at(c: int) -> LevelEstimate:
        if c not in cache:
            cache[c] = closed_level(setup.base, work, slo, c)
        return cache[c]

    best = search_concurrency(at, ceiling) if ceiling >= 1 else None
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
    stream_ms: float  # the decode server's work per open stream before it sends the first token
    prefill_ttft: Percentiles  # a prefill replica's TTFT, its users' prompts sent as a closed loop sends them


def _stream_ms(setup: Setup, streams: float) -> float:
    """TTFT the decode server adds for the streams it holds (the readout's cost per request in flight, ms).

    The decode server returns the first token, so its open streams cost a request what they cost one engine.
    """
    return setup.base.ttft_readout[TTFT_TERMS.index("per_in_flight_s")] * streams * 1000.0


@dataclass(frozen=True)
class _Handoff:
    """What every pairing shares: the pools' GPUs in all, the link, the KV bytes a request hands over."""

    total: int
    need: int
    link: KvLink
    kv_bytes: int


def _search(
    request: PerfRequest, prefills: dict[int, Setup], decodes: dict[int, Setup], handoff: _Handoff
) -> tuple[_Split | None, float]:
    """The replica sizes and ratio with the most requests/s per GPU within the SLO, and the first transfer time."""
    best: _Split | None = None
    transfer_seen = 0.0
    d_levels: dict[tuple[int, int], LevelEstimate | None] = {}
    for p_gpus, p_setup in prefills.items():
        p_levels: dict[float, LevelEstimate] = {}
        stepped: dict[tuple[int, float], Percentiles] = {}
        alone_ms = _prefill_level(p_setup, request, _ALONE_RPS, p_levels).ttft_ms.p50
        for d_gpus, d_setup in decodes.items():
            transfer = round(kv_transfer_ms(handoff.kv_bytes, handoff.link, p_setup.gpu, min(p_gpus, d_gpus)), 3)
            transfer_seen = transfer_seen or transfer
            if p_gpus + d_gpus > handoff.total:
                continue
            left = request.slo.ttft_p50_ms - transfer - alone_ms  # TTFT for the streams and the prefill queue
            ceilings = {_decode_ceiling(d_setup, request, left * share) for share in stream_budget_shares()}
            pair_best = 0.0
            for ceiling in sorted(ceilings, reverse=True):  # fewer streams, more prefill room: until it stops paying
                if (d_gpus, ceiling) not in d_levels:
                    d_levels[(d_gpus, ceiling)] = _decode_level(d_setup, request, ceiling)
                d_level = d_levels[(d_gpus, ceiling)]
                found = _split(request, handoff, (p_setup, p_levels, stepped), d_setup, d_level, transfer)
                per_gpu = found.per_gpu if found else 0.0
                if found and (best is None or per_gpu > best.per_gpu * (1 + 1e-9)):
                    best = found
                if per_gpu < pair_best:
                    break
                pair_best = per_gpu
    if best is None:
        return None, transfer_seen
    used = best.x * best.p.shape.gpus + best.y * best.d.shape.gpus
    scale = max(handoff.total // used, 1)  # the ratio repeated over the deployment's GPUs
    return replace(best, x=best.x * scale, y=best.y * scale, rate=best.rate * scale), transfer_seen


def _split(
    request: PerfRequest,
    handoff: _Handoff,
    prefill: tuple[Setup, dict[float, LevelEstimate], dict[tuple[int, float], Percentiles]],
    d_setup: Setup,
    d_level: LevelEstimate | None,
    transfer: float,
) -> _Split | None:
    """The best pairing of these replicas within the SLO (None: none meets it).

    The prefill replica takes the highest Poisson rate whose TTFT, with the handoff and the decode server's streams,
    meets the SLO; the ratio of replicas follows. Its users' prompts then come as a closed loop sends them, the first
    wave at once (perf.levels.prompts_in_step, as the one-pool copy and the two-pool bands are judged): prefill
    replicas are added until that TTFT meets the SLO too.
    """
    p_setup, p_levels, stepped = prefill
    if d_level is None or not d_level.req_s:
        return None
    stream = round(_stream_ms(d_setup, d_level.concurrency or d_level.mean_running), 3)
    p_rate, _ = _prefill_rate(p_setup, request, transfer + stream, p_levels)
    if not p_rate:
        return None
    p_gpus, d_gpus = p_setup.shape.gpus, d_setup.shape.gpus
    x, y, _ = _ratio(handoff.total, p_gpus, d_gpus, p_rate, d_level.req_s)
    slo, per_decode = request.slo, d_level.concurrency or max(round(d_level.mean_running), 1)
    work = Workload(request.input_tokens, 1, p_setup.workload.cached_tokens)
    while x and x * p_gpus + y * d_gpus <= handoff.total:
        rate = min(x * p_rate, y * d_level.req_s)
        key = (-(-y * per_decode // x), round(rate / x, 6))  # users and prompts a second per prefill replica
        if key not in stepped:
            stepped[key] = prompts_in_step(p_setup.base, work, *key)
        ttft = stepped[key]
        if ttft.p50 + transfer + stream <= slo.ttft_p50_ms and (ttft.p99 or 0) + transfer + stream <= slo.ttft_p99_ms:
            per_gpu = rate / (x * p_gpus + y * d_gpus)
            return _Split(x, y, rate, per_gpu, p_setup, d_setup, d_level, transfer, stream, ttft)
        x += 1
    return None


def _notes(request: PerfRequest, options: TopologyOptions, handoff: _Handoff, transfer_ms: float) -> list[Wording]:
    notes = [
        Wording(
            template=N_(
                "disaggregated: both pools use the aggregated step-time model; the KV handoff is {mb} MB over "
                "{link} ({ms} ms with its fixed latency)"
            ),
            values=(
                ("mb", f"{handoff.kv_bytes / 1e6:.1f}"),
                ("link", handoff.link.name),
                ("ms", f"{transfer_ms:g}"),
            ),
        )
    ]
    if (options.total_gpus or request.gpus) < handoff.need:
        notes.append(
            Wording(
                template=N_("{gpus} GPUs cannot hold two pools: estimated on {need}"),
                values=(("gpus", str(options.total_gpus or request.gpus)), ("need", str(handoff.need))),
            )
        )
    return notes


def disaggregated(request: PerfRequest, options: TopologyOptions) -> TopologyEstimate:
    """The two-pool figures: each pool simulated on its own, the KV transfer added, sizes and ratio searched."""
    prefills, decodes = _setups(request, options.prefill_gpus), _setups(request, options.decode_gpus)
    first = next(iter(prefills.values()))
    need = min(prefills) + min(decodes)
    total = max(options.total_gpus or request.gpus, need)
    kv_bytes = kv_bytes_per_request(first.advice.model, first.kv_dtype, request.input_tokens)
    handoff = _Handoff(total, need, pool_link(options.link, first.gpu, total), kv_bytes)
    best, transfer_seen = _search(request, prefills, decodes, handoff)
    notes = tuple(_notes(request, options, handoff, best.transfer_ms if best else transfer_seen))
    if best is None:
        zero = Percentiles(p50=0.0)
        return TopologyEstimate(
            topology="disagg",
            prefill=Pool(replicas=1, gpus_per_replica=min(prefills)),
            decode=Pool(replicas=1, gpus_per_replica=min(decodes)),
            gpus_used=need,
            link=handoff.link.id,
            kv_bytes_per_request=kv_bytes,
            kv_transfer_ms=transfer_seen,
            output_tok_s=0.0,
            output_tok_s_per_gpu=0.0,
            tok_s_per_user=0.0,
            request_rate_rps=0.0,
            ttft_ms=zero,
            tpot_ms=zero,
            meets_slo=False,
            basis=_disagg_basis(Basis(kind="extrapolated", text="")),
            bands=disagg_bands(),
            notes=notes,
        )
    return _met(request, best, handoff, notes)


def _met(request: PerfRequest, best: _Split, handoff: _Handoff, notes: tuple[Wording, ...]) -> TopologyEstimate:
    """The figures of the pools found: TTFT at their load plus the handoff, the decode pool's TPOT, per GPU."""
    p_gpus, d_gpus = best.p.shape.gpus, best.d.shape.gpus
    at_load = best.prefill_ttft
    used = best.x * p_gpus + best.y * d_gpus
    out = best.rate * request.output_tokens
    handed = best.transfer_ms + best.stream_ms
    est = estimate(request.model_copy(update=copy_layout(request, d_gpus)))
    return TopologyEstimate(
        topology="disagg",
        prefill=Pool(replicas=best.x, gpus_per_replica=p_gpus),
        decode=Pool(replicas=best.y, gpus_per_replica=d_gpus),
        gpus_used=used,
        link=handoff.link.id,
        kv_bytes_per_request=handoff.kv_bytes,
        kv_transfer_ms=best.transfer_ms,
        output_tok_s=round(out, 3),
        output_tok_s_per_gpu=round(out / used, 3),
        tok_s_per_user=_per_user(best.d_level.tpot_ms.p50),
        request_rate_rps=round(best.rate, 4),
        ttft_ms=Percentiles(
            p50=round(at_load.p50 + handed, 3),
            p99=round((at_load.p99 or 0) + handed, 3),
            mean=round((at_load.mean or 0) + handed, 3),
        ),
        tpot_ms=best.d_level.tpot_ms,
        meets_slo=True,
        basis=_disagg_basis(est.basis),
        bands=disagg_bands(),
        notes=notes,
    )


DISAGG_BASIS = N_(
    "extrapolated: two pools estimated apart with the aggregated model ({basis}); no disaggregated measurement "
    "of this configuration was used; the bands are the error on published disaggregated runs, held out "
    "(docs/disaggregated.md)"
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
            est = estimate(request if n == request.gpus else request.model_copy(update=copy_layout(request, n)))
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
    request = with_advised_engine(request)
    est, agg = _best_agg(request, options.total_gpus)
    if options.topology == "agg":
        return TopologyResult(est, agg, None)
    try:  # both topologies serve the same checkpoint: the one-pool copy's, where the advisor picked it
        split = disaggregated(request.model_copy(update={"quant": est.quant}), options)
    except PerfError as exc:
        if options.topology == "disagg":
            raise
        return TopologyResult(est.model_copy(update={"notes": (*est.notes, f"disaggregated: {exc}")}), agg, None)
    if options.topology == "disagg":
        return TopologyResult(est, split, None)
    if split.meets_slo and split.output_tok_s_per_gpu > agg.output_tok_s_per_gpu * (1 + min_gain()):
        return TopologyResult(est, split, agg)
    return TopologyResult(est, agg, split)


def smallest_replica_gpus(request: PerfRequest) -> int:
    """The fewest GPUs (a power of two up to --gpus) one replica of the model fits on: a pool's smallest replica."""
    return min(_setups(request, None))
