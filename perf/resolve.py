"""What a configuration resolves to before it is simulated: the advice, the layout, the limits and the release."""

from collections.abc import Sequence
from dataclasses import dataclass

from catalog import Gpu, GpuLookupError, default_max_num_seqs, find_gpu, find_model, get_engine
from catalog.models import CUSTOM_MODEL, ModelSpec
from i18n import N_
from perf.coefficients import family_for, load_coefficients, newest_release, release_order
from perf.errors import PerfError
from perf.features import ReplicaShape
from perf.hardware import model_facts
from perf.inputs import AUTO_ENGINE, PerfRequest
from perf.replica import kv_capacity_tokens, replica_engine
from perf.result import Wording
from perf.simulate import Engine, Workload
from selector import Advice, AdviceRequest, SelectorError
from selector.advisor import advise_remembered
from selector.custom import custom_model
from selector.memory import split_objections
from selector.rules import load_rules


def copy_gpus(request: PerfRequest) -> int:
    """GPUs of one copy: --gpus, or tp x pp x dp when the layout is given (they must agree when both are)."""
    if not request.layout_given:
        return request.gpus
    if request.gpus not in (1, request.layout_gpus):
        raise PerfError(
            f"gpus: --tp {request.tp or 1} x --pp {request.pp or 1} x --dp {request.dp or 1} is "
            f"{request.layout_gpus} GPUs, but --gpus says {request.gpus}; give one or make them agree"
        )
    return request.layout_gpus


def node_gpus() -> int:
    """GPUs in one node, as the advisor lays them out (selector/data/rules.toml [limits] max_gpus)."""
    return load_rules().limits.max_gpus


def spans_nodes(request: PerfRequest) -> bool:
    """Whether one copy is laid out over more GPUs than a node holds (its layout given, as wide expert parallelism)."""
    return copy_gpus(request) > node_gpus()


def _spec(request: PerfRequest) -> ModelSpec:
    """The model estimated: the catalog's, or a custom one as its fields describe it."""
    if request.custom is not None:
        return custom_model(request.custom)
    try:
        return find_model(request.model)
    except SelectorError as exc:
        raise PerfError(f"model: {exc}") from exc


def copy_layout(request: PerfRequest, gpus: int) -> dict[str, int | None]:
    """The layout fields of one copy of `gpus` GPUs: the advisor's inside a node, wide expert parallelism beyond.

    Past one node a mixture of experts is served as the large deployments serve it: attention data parallel and
    routed experts over every GPU (tp 1, dp = ep = gpus). A dense model keeps the advisor's layout, which refuses
    a copy wider than a node.
    """
    if gpus > node_gpus() and _spec(request).is_moe:
        return {"gpus": gpus, "tp": 1, "pp": 1, "ep": gpus, "dp": gpus}
    return {"gpus": gpus, "tp": None, "pp": None, "ep": None, "dp": None}


def with_copy_layout(request: PerfRequest) -> PerfRequest:
    """The request with its layout filled in when one copy spans nodes and none was given.

    The advisor's own layout over nodes comes first: when, asked about one node, it lays the model over exactly
    these GPUs (DeepSeek-R1 on 24 A800s: tensor parallel 8, three pipeline stages), `--gpus 24` is that advice, as
    `--gpus 8` is. Otherwise see copy_layout.
    """
    if request.layout_given or request.gpus <= node_gpus():
        return request
    per_node = request.model_copy(update={"gpus": node_gpus()})
    if _advisor_spans(per_node, request.gpus):
        return per_node
    return request.model_copy(update=copy_layout(request, request.gpus))


def _advisor_spans(per_node: PerfRequest, gpus: int) -> bool:
    """Whether the advisor, asked about one node, lays the model over nodes totalling exactly `gpus` GPUs."""
    try:
        memory = _advice(per_node, max(per_node.concurrency, default=1)).memory
    except PerfError:
        return False  # the wide layout's own checks word what is wrong
    return memory.fits and memory.nodes > 1 and memory.nodes * memory.gpus_per_node == gpus


def _advised_gpus(request: PerfRequest) -> int:
    """The GPUs the advisor is asked about: the copy's, or one node's when a given layout spans nodes.

    The advisor lays out one node (a model too large for it goes over several nodes by pipeline stages). A copy
    spread wider, such as wide expert parallelism over 32 or 72 GPUs, is estimated from its given layout; the
    advisor then only picks the engine's settings, from one node of the same GPUs.
    """
    gpus, node = copy_gpus(request), node_gpus()
    if gpus <= node:
        return gpus
    if not request.layout_given:
        raise PerfError(
            f"gpus: one copy of {gpus} GPUs spans nodes of {node}, and only a mixture of experts is laid out over "
            f"nodes by default (attention data parallel and experts over every GPU); give this model's layout with "
            f"--tp, --pp and --dp, or at most {node} GPUs"
        )
    return node


def _advice(request: PerfRequest, concurrency: int) -> Advice:
    try:
        gpu = find_gpu(request.gpu)
    except GpuLookupError as exc:
        raise PerfError(f"gpu: {exc}") from exc
    advised_gpus = _advised_gpus(request)
    quant = request.quant
    if quant == "auto" and spans_nodes(request):
        quant = _spec(request).native_format  # one node's pick would squeeze the weights to fit it
    asked = {
        "gpu": gpu.id,
        "gpus": advised_gpus,
        "engine": request.engine,
        "quant": quant,
        "context": max(request.context_tokens, 256),
        "concurrency": min(concurrency, 4096),
    }
    if request.custom is not None:  # a model outside the catalog, as the advisor's custom fields describe it
        advice_request = request.custom.model_copy(update={"model": CUSTOM_MODEL, **asked})
    else:
        try:
            model = find_model(request.model)
        except SelectorError as exc:
            raise PerfError(f"model: {exc}") from exc
        advice_request = AdviceRequest(model=model.id, **asked)
    try:
        advice = advise_remembered(advice_request)
    except (SelectorError, ValueError) as exc:
        raise PerfError(str(exc)) from exc
    model = advice.model
    if request.engine != AUTO_ENGINE and advice.engine != request.engine:
        raise PerfError(f"engine: {request.engine} does not run on {gpu.name} (the advisor: {advice.switch_when})")
    if request.quant != "auto" and advice.quantization != request.quant:
        raise PerfError(
            f"quant: {request.quant} is not available for {model.name} with {advice.engine_name} on {gpu.name}; "
            f"the advisor would use {advice.quantization}"
        )
    _check_kv_dtype(request, advice)
    return advice


def _check_kv_dtype(request: PerfRequest, advice: Advice) -> None:
    """A KV dtype given must be one the engine stores: the model's own or its 8-bit one (engines.csv)."""
    given = request.kv_dtype_given
    if given is None or given == "auto":
        return
    engine = get_engine(advice.engine)
    if given != engine.kv_cache_8bit:
        stores = f"the model's own or {engine.kv_cache_8bit}" if engine.kv_cache_8bit else "the model's own only"
        raise PerfError(f"kv_cache: {engine.name} has no {given} KV cache; it stores {stores}")


def with_advised_engine(request: PerfRequest) -> PerfRequest:
    """The request with engine 'auto' replaced by the engine the advisor picks for its GPU, model and load."""
    if request.engine != AUTO_ENGINE:
        return request
    return request.model_copy(update={"engine": _advice(request, max(request.concurrency, default=1)).engine})


def _shape(request: PerfRequest, advice: Advice) -> ReplicaShape:
    """The layout estimated: as given (--tp, --pp, --ep, --dp) and checked as the engines would, else the advisor's."""
    memory = advice.memory
    if not request.layout_given:
        return ReplicaShape(
            tensor_parallel=memory.tensor_parallel,
            pipeline_parallel=memory.pipeline_parallel,
            attention_data_parallel=memory.attention_data_parallel,
            expert_parallel=memory.expert_parallel,
        )
    model = advice.model
    tp, pp, dp, ep = request.tp or 1, request.pp or 1, request.dp or 1, request.ep or 1
    if ep > 1 and not model.is_moe:
        raise PerfError(f"ep: {model.name} has no experts; expert parallelism needs a mixture-of-experts model")
    if ep > tp * dp:
        raise PerfError(f"ep: {ep} expert-parallel GPUs is more than the tp x dp = {tp * dp} GPUs of a stage")
    block = get_engine(advice.engine).online_fp8_block
    problems = split_objections(
        model, advice.quantization, tp, expert_parallel=ep > 1, attention_data_parallel=False, online_fp8_block=block
    )
    if problems:
        raise PerfError("tp: the engines refuse " + f"--tp {tp}: " + "; ".join(p.worded() for p in problems))
    if pp > model.layers:
        raise PerfError(f"pp: {model.layers} layers cannot fill {pp} pipeline stages")
    return ReplicaShape(
        tensor_parallel=tp * dp,
        pipeline_parallel=pp,
        attention_data_parallel=dp > 1,
        expert_parallel=ep > 1,
        dp_ranks=dp if dp > 1 else 0,
    )


def _speculation(request: PerfRequest, model: ModelSpec) -> tuple[float, float, float]:
    """Accepted tokens per step, computed tokens per sequence per step and the draft's share of a step's reads."""
    k, alpha = request.speculative_tokens, request.acceptance_rate
    if not k:
        return 1.0, 1.0, 0.0
    accepted = float(k + 1) if alpha >= 1 else (1 - alpha ** (k + 1)) / (1 - alpha)
    share = 0.0
    if request.draft == "model" and model.draft_model:
        share = k * find_model(model.draft_model).params / model.params
    return accepted, float(k + 1), share


@dataclass(frozen=True)
class Release:
    """The engine release estimated, and why its estimate is an extrapolation (empty when measured data backs it)."""

    version: str
    gaps: tuple[Wording, ...]


def _release(request: PerfRequest, gpu: Gpu) -> Release:
    """--engine-version or the newest release with data; what the measured data lacks for this engine and GPU."""
    coefficients = load_coefficients()
    releases = coefficients.releases.get(request.engine, {})
    version = request.engine_version or newest_release(request.engine) or ""
    gaps: list[Wording] = []
    if not releases:
        gaps.append(Wording(template=N_("no measured data of {engine} at all"), values=(("engine", request.engine),)))
    elif version and version not in releases:
        gaps.append(
            Wording(
                template=N_("no measured data of {engine} {version}"),
                values=(("engine", request.engine), ("version", version)),
            )
        )
    on_vendor = coefficients.vendors.get(request.engine, {})
    if releases and gpu.vendor not in on_vendor:
        gaps.append(
            Wording(
                template=N_("no measured data of {engine} on {vendor} GPUs"),
                values=(("engine", request.engine), ("vendor", gpu.vendor)),
            )
        )
    elif version in releases and version not in on_vendor.get(gpu.vendor, []):
        gaps.append(_release_elsewhere(request.engine, version, gpu.vendor, on_vendor.get(gpu.vendor, [])))
    return Release(version=version or "unversioned", gaps=tuple(gaps))


def _release_elsewhere(engine: str, version: str, vendor: str, measured: Sequence[str]) -> Wording:
    """A release measured on other vendors' GPUs only: another build (CUDA or ROCm), so its efficiency is not known."""
    numbered = [v for v in measured if release_order(v)]
    newest = max(numbered, key=lambda v: release_order(v) or ()) if numbered else ", ".join(measured)
    return Wording(
        template=N_("no measured data of {engine} {version} on {vendor} GPUs (the newest measured there: {newest})"),
        values=(("engine", engine), ("version", version), ("vendor", vendor), ("newest", newest)),
    )


def _max_seqs(request: PerfRequest, gpu: Gpu) -> int:
    """--max-num-seqs, else the engine's own default on this GPU (catalog/data/engine_limits.csv)."""
    if request.max_num_seqs:
        return request.max_num_seqs
    limit = default_max_num_seqs(request.engine, gpu)
    return limit.max_num_seqs if limit else int(str(model_facts()["fit"]["default_max_num_seqs"]))


@dataclass(frozen=True)
class Setup:
    """Everything a level's simulation needs, resolved once: advice, layout, limits, engine and workload."""

    advice: Advice
    gpu: Gpu
    shape: ReplicaShape
    kv_dtype: str
    capacity: int
    max_seqs: int
    base: Engine
    workload: Workload
    family: str
    release: Release


def resolve(request: PerfRequest) -> Setup:
    """The advice, layout, KV capacity, sequence limit, engine, workload and release of a configuration."""
    advice = _advice(request, max(request.concurrency, default=1))
    gpu, model = find_gpu(advice.gpu_id), advice.model
    if not advice.memory.fits and not request.layout_given:
        raise PerfError(f"gpus: {model.name} does not fit {request.gpus}x {gpu.name} in {advice.quantization}")
    shape = _shape(request, advice)
    kv_dtype = request.kv_dtype_given or advice.kv_cache_dtype
    family, family_name = family_for(request.engine)
    accepted, computed, draft_share = _speculation(request, model)
    capacity = kv_capacity_tokens(
        model, gpu, advice.quantization, kv_dtype, shape, request.context_tokens, advice.engine
    )
    if capacity <= 0:
        raise PerfError(f"gpus: {model.name} does not fit {shape.gpus}x {gpu.name} in {advice.quantization}")
    max_seqs, budget = _max_seqs(request, gpu), advice.max_num_batched_tokens
    if spans_nodes(request):  # one node's limits on every node: the copy batches as that many nodes would
        nodes = -(-shape.gpus // node_gpus())
        max_seqs = max_seqs if request.max_num_seqs else max_seqs * nodes
        budget *= nodes if shape.attention_ranks == 1 else 1  # attention DP: each rank has its budget already
    base = replica_engine(
        model,
        gpu,
        quant=advice.quantization,
        kv_dtype=kv_dtype,
        shape=shape,
        theta=family.theta,
        max_seqs=max_seqs,
        budget_tokens=budget,
        context=request.context_tokens,
        accepted_per_step=accepted,
        computed_per_step=computed,
        draft_share=draft_share,
        kv_capacity=capacity,
        ttft_readout=family.ttft,
    )
    workload = Workload(
        request.input_tokens, request.output_tokens, cached_tokens=int(request.input_tokens * request.prefix_cache_hit)
    )
    return Setup(
        advice=advice,
        gpu=gpu,
        shape=shape,
        kv_dtype=kv_dtype,
        capacity=capacity,
        max_seqs=max_seqs,
        base=base,
        workload=workload,
        family=family_name,
        release=_release(request, gpu),
    )
