"""The advisor's entry point: advise(request) -> Advice, every decision with its rule, reason and source."""

import math
from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict

from catalog import Gpu, find_gpu, load_gpus, load_handbook
from selector.custom import custom_model
from selector.engines import ServingEngine, get_engine, gpu_platform
from selector.errors import SelectorError
from selector.inputs import MIN_CONTEXT_TOKENS, AdviceRequest
from selector.kvcache import eight_bit_kv
from selector.launch import LaunchCommand, Plan, launch_command
from selector.memory import MemoryFit, Policy, fit, memory_pressure, min_gpus, min_nodes
from selector.models import CUSTOM_MODEL, ModelSpec, find_model
from selector.quantization import AUTO, Gate, gate, get_quant, sm_name, weights_gb
from selector.rules import Explained, Rule, load_rules, matching, render
from selector.speculative import Speculative, decide_speculative


class Decision(BaseModel):
    """One decision: what, which rule fired, why (one sentence) and where the rule comes from."""

    model_config = ConfigDict(frozen=True)

    topic: str
    choice: str
    rule_id: str
    reason: str
    source: str
    handbook_choice: str = ""


class Advice(BaseModel):
    """The whole recommendation. `reasons` lists every decision; `warnings` name problems with the inputs."""

    model_config = ConfigDict(frozen=True)

    request: AdviceRequest
    gpu_id: str
    gpu_name: str
    model_id: str
    model_name: str
    engine: str
    engine_name: str
    runner_up: str
    runner_up_name: str
    switch_when: str
    quantization: str
    quantization_name: str
    kv_cache_dtype: str
    prefix_caching: bool
    chunked_prefill: bool
    kv_offload_gb: int | None
    max_num_seqs: int
    max_num_batched_tokens: int
    speculative: Speculative
    memory: MemoryFit
    model: ModelSpec
    launch: LaunchCommand
    runner_up_launch: LaunchCommand | None
    reasons: tuple[Decision, ...]
    today_vs_handbook: tuple[str, ...]
    warnings: tuple[str, ...]

    @property
    def launch_command(self) -> str:
        """The chosen engine's command, ready to paste."""
        return self.launch.shell

    def summary(self) -> str:
        """One readable sentence."""
        spec = "n-gram speculation" if self.speculative.enabled else "no speculation"
        fit_text = (
            f"up to {self.memory.max_concurrent_sequences} sequences of {self.memory.context_tokens} tokens"
            if self.memory.fits
            else "does NOT fit"
        )
        return (
            f"{self.engine_name} with {self.quantization_name} weights, {self.kv_cache_dtype} KV cache and {spec} "
            f"on {self.request.gpus}x {self.gpu_name}: {fit_text}."
        )

    def to_json_dict(self) -> dict[str, object]:
        """The CLI's --json object."""
        memory = self.memory.model_dump()
        return {
            "gpu": self.gpu_id,
            "gpus": self.request.gpus,
            "model": self.model_id,
            "engine": self.engine,
            "runner_up": self.runner_up,
            "switch_when": self.switch_when,
            "quantization": self.quantization,
            "kv_cache_dtype": self.kv_cache_dtype,
            "prefix_caching": self.prefix_caching,
            "chunked_prefill": self.chunked_prefill,
            "kv_offload_gb": self.kv_offload_gb,
            "speculative": self.speculative.model_dump(),
            "launch_command": self.launch.shell,
            "launch_argv": list(self.launch.argv),
            "runner_up_launch_command": self.runner_up_launch.shell if self.runner_up_launch else None,
            "memory": memory,
            "model_facts": model_facts(self.model),
            "reasons": [d.model_dump() for d in self.reasons],
            "today_vs_handbook": list(self.today_vs_handbook),
            "warnings": list(self.warnings),
        }


def resolve_model(request: AdviceRequest) -> ModelSpec:
    """The preset, or the custom model the request describes."""
    if request.model != CUSTOM_MODEL:
        return find_model(request.model)
    return custom_model(request)


def model_facts(model: ModelSpec) -> dict[str, object]:
    """The model's architecture as the CLI's --json `model_facts` reports it."""
    return {
        "id": model.id,
        "name": model.name,
        "total_params_b": model.params_b,
        "active_params_b": model.active_params / 1e9,
        "layers": model.layers,
        "hidden_size": model.hidden_size,
        "attention_heads": model.attention_heads,
        "kv_heads": model.kv_heads,
        "head_dim": model.head_dim,
        "experts": model.experts,
        "shared_experts": model.shared_experts,
        "experts_per_token": model.experts_per_token,
        "kv_kind": model.kv_kind,
        "kv_lora_rank": model.kv_lora_rank or None,
        "sliding_window": model.sliding_window or None,
        "sliding_window_layers": model.sliding_window_layers if model.sliding_window else None,
        "max_context": model.max_context,
        "native_format": model.native_format,
        "source": model.source,
    }


def gpu_class(gpu: Gpu) -> str:
    """apple, consumer, fp8_datacenter (H-series, B200, MI300X) or datacenter."""
    if gpu.kind in {"apple", "consumer"}:
        return gpu.kind
    if gpu.native_fp8 and (gpu_platform(gpu) == "amd" or (gpu.sm or 0) >= load_rules().facts.fp8_datacenter_min_sm):
        return "fp8_datacenter"
    return "datacenter"


def _yn(flag: bool) -> str:
    return "yes" if flag else "no"


def _engine_values(engine: ServingEngine) -> dict[str, object]:
    """What a statement about an engine may name: {engine}, {engine_source} and the catalog's wording."""
    return {
        "engine": engine.name,
        "engine_source": engine.source,
        "hardware": engine.hardware,
        "formats": engine.quant_formats,
        "engine_prefix_caching": engine.prefix_caching,
        "engine_chunked_prefill": engine.chunked_prefill,
    }


class _Advisor:
    """One advice run: collects decisions and warnings as it goes."""

    def __init__(self, request: AdviceRequest) -> None:
        self.request = request
        self.book = load_rules()
        self.limits = self.book.limits
        self.gpu = find_gpu(request.gpu)
        self.model = resolve_model(request)
        self.decisions: list[Decision] = []
        self.quant_pinned = False  # the user's pinned format is the one advised (not refused by a gate)
        self.warnings: list[str] = []
        self.today: list[str] = []
        self.context = request.context
        if self.context > self.model.max_context:
            self.warnings.append(
                f"Context {request.context} is longer than {self.model.name}'s maximum of "
                f"{self.model.max_context} tokens; advising for {self.model.max_context}."
            )
            self.context = self.model.max_context
        self.platform = self._platform()

    def _platform(self) -> str:
        gpu, deploy = self.gpu, self.request.deploy.value
        if gpu.kind == "apple":
            if deploy != "apple":
                self.warnings.append(
                    f"{gpu.name} is Apple Silicon, so the advice is for an Apple deployment "
                    f"(you chose deploy={deploy})."
                )
            return "apple"
        if gpu.kind == "cpu":
            if deploy != "edge":
                self.warnings.append(
                    f"{gpu.name} is a CPU-only host, so the advice is for CPU serving (the handbook's edge / CPU "
                    f"row: llama.cpp with GGUF), although you chose deploy={deploy}."
                )
            return "edge"
        if deploy == "apple":
            self.warnings.append(
                f"deploy=apple, but {gpu.name} is not Apple Silicon; advising for the {gpu.name} "
                "instead. Pick an Apple GPU (M2 Ultra, M3 Ultra, M4 Max) for Mac advice."
            )
            return "datacenter"
        return deploy

    def facts(self, **extra: str) -> dict[str, str]:
        r, gpu = self.request, self.gpu
        return {
            "platform": self.platform,
            "vendor": gpu_platform(gpu),
            "gpu_kind": gpu.kind,
            "gpu_class": gpu_class(gpu),
            "priority": r.priority.value,
            "workload": r.workload.value,
            "ecosystem": r.ecosystem.value,
            "build_engines": r.build_engines.value,
            "qlora": r.qlora.value,
            "fp8_native": _yn(gpu.native_fp8),
            "marlin": _yn(gpu.marlin_kernels),
            "gpu": gpu.name,
            "gpus": str(r.gpus),
            "model": self.model.name,
            "concurrency": str(r.concurrency),
            "context": str(self.context),
            "concurrency_band": "high" if r.concurrency >= self.book.facts.high_concurrency else "low",
            "native_format": self.model.native_format,
            "kv_kind": self.model.kv_kind,
            "moe": _yn(self.model.is_moe),
            **extra,
        }

    def decide(
        self,
        topic: str,
        choice: str,
        rule: Explained,
        values: Mapping[str, object] | None = None,
        *,
        reason: str | None = None,
        source: str | None = None,
        handbook: str = "",
    ) -> None:
        """Record a decision under its rule: the rule's reason and source filled with `values`, unless given."""
        filled = values or {}
        self.decisions.append(
            Decision(
                topic=topic,
                choice=choice,
                rule_id=rule.id,
                reason=rule.reason_for(filled) if reason is None else reason,
                source=rule.source_for(filled) if source is None else source,
                handbook_choice=handbook,
            )
        )

    # -- engine -------------------------------------------------------------------------------------------------
    def choose_engine(self) -> tuple[ServingEngine, ServingEngine, str]:
        facts = self.facts()
        rules = matching(self.book.engine, facts)
        r = self.request
        if r.build_engines.value == "yes" and r.priority.value == "latency" and gpu_platform(self.gpu) != "nvidia":
            self.warnings.append(
                f"TensorRT-LLM needs NVIDIA GPUs; {self.gpu.name} is not, so the team's willingness "
                "to build engines does not apply here."
            )
        tree_rule = None
        for rule in rules:
            engine = get_engine(rule.choice)
            if engine.runs_on_gpu(self.gpu):
                tree_rule = rule
                break
            self.decide(
                "hardware gate",
                f"not {engine.name}",
                self.book.engine_hardware_gate,
                {**facts, **_engine_values(engine), "row": rule.id},
            )
        if tree_rule is None:  # every catalog GPU runs vLLM or llama.cpp, so the catch-all rows always apply
            raise SelectorError(f"No engine in the catalog runs on {self.gpu.name}.")
        engine = get_engine(tree_rule.choice)
        if r.engine != AUTO:
            pinned = get_engine(r.engine)
            if not pinned.runs_on_gpu(self.gpu):
                self.warnings.append(
                    f"{pinned.name} does not run on {self.gpu.name} ({pinned.hardware}); showing the "
                    f"advice for {engine.name} instead."
                )
            elif not pinned.launchable:
                self.warnings.append(
                    f"{pinned.name} is {pinned.status}; the advisor gives no launch command for it, "
                    f"so it shows the advice for {engine.name} instead."
                )
            else:
                runner = engine if engine.id != pinned.id else get_engine(tree_rule.runner_up)
                values = {
                    **facts,
                    **_engine_values(pinned),
                    "rule_engine": engine.name,
                    "rule_reason": tree_rule.reason_for(facts),
                }
                self.decide("engine", pinned.id, self.book.engine_pinned, values)
                return pinned, self._runner_up(runner, pinned, rules), runner.name + " is what the rules pick here."
        self.decide(
            "engine",
            engine.id,
            tree_rule,
            facts,
            handbook=tree_rule.handbook if tree_rule.handbook != engine.name else "",
        )
        runner = self._runner_up(get_engine(tree_rule.runner_up), engine, rules)
        self.decide("runner_up", runner.id, tree_rule, reason=tree_rule.switch_when)
        return engine, runner, tree_rule.switch_when

    def _runner_up(self, preferred: ServingEngine, engine: ServingEngine, rules: list[Rule]) -> ServingEngine:
        options = [
            preferred,
            *(get_engine(rule.choice) for rule in rules),
            get_engine("vllm"),
            get_engine("llama.cpp"),
            get_engine("ollama"),
        ]
        for option in options:
            if option.id != engine.id and option.runs_on_gpu(self.gpu) and option.launchable:
                return option
        return engine

    # -- quantization -------------------------------------------------------------------------------------------
    def _gate(self, method_id: str, engine: ServingEngine, gpu: Gpu | None = None) -> Gate:
        """The architecture gate, narrowed by what this engine and this model can do with the format."""
        gpu = gpu or self.gpu
        checked = gate(method_id, gpu)
        method = get_quant(method_id)
        values = {
            "gpu": gpu.name,
            "sm": sm_name(gpu),
            "engine": engine.name,
            "engine_source": engine.source,
            "method": method.name,
            "method_source": method.source,
            "model": self.model.name,
        }
        gates = self.book.gates
        if checked.allowed and checked.degraded and method.needs == "fp8" and not engine.fp8_weight_only:
            refused = gates.fp8_engine_no_fallback
        elif method.scope == "experts" and not self.model.is_moe:
            refused = gates.experts_only
        else:
            return checked
        return Gate(
            method=method_id,
            allowed=False,
            rule_id=refused.id,
            reason=refused.reason_for(values),
            source=refused.source_for(values),
        )

    def choose_quant(self, engine: ServingEngine) -> str:
        r = self.request
        pressure = memory_pressure(
            self.model, self.gpu, gpus=r.gpus, split_kind=engine.split, context=self.context, concurrency=r.concurrency
        )
        self.pressure = pressure
        facts = self.facts(memory_pressure=pressure)
        if r.quant != AUTO:
            pinned = get_quant(r.quant)
            checked = self._gate(r.quant, engine)
            if not checked.allowed:
                self.warnings.append(f"{checked.reason} Showing the advice with the rules' choice instead.")
                self.decide(
                    "architecture gate",
                    f"not {pinned.name}",
                    self.book.get(checked.rule_id),
                    reason=checked.reason,
                    source=checked.source,
                )
            elif r.quant not in engine.quant_methods:
                self.warnings.append(f"{engine.name} does not serve {pinned.name}; showing the rules' choice instead.")
            else:
                values: dict[str, object] = {
                    **facts,
                    "method": pinned.name,
                    "method_source": pinned.source,
                    "gate": checked.reason,
                }
                self.decide("quantization", r.quant, self.book.quantization_pinned, values)
                if checked.degraded:
                    self.warnings.append(checked.reason)
                self.quant_pinned = True
                return r.quant
        native = get_quant(self.model.native_format)
        facts_values = {
            **facts,
            "native_name": native.name,
            "native_bits": native.bits_per_weight,
            "hf_repo": self.model.repo,
            "model_source": self.model.source,
        }
        for rule in matching(self.book.quantization, facts):
            choice = self.model.native_format if rule.choice == "native" else rule.choice
            checked = self._gate(choice, engine)
            method = get_quant(choice)
            if not checked.allowed:
                self.decide(
                    "architecture gate",
                    f"not {method.name}",
                    rule,
                    reason=checked.reason,
                    source=f"{rule.source_for(facts_values)}; {checked.source}",
                )
                continue
            if choice not in engine.quant_methods:
                values = {**facts, **_engine_values(engine), "row": rule.id, "method": method.name}
                self.decide("engine gate", f"not {method.name}", self.book.quantization_engine_gate, values)
                continue
            reason = rule.reason_for(facts_values)
            if checked.degraded:
                reason += " " + checked.reason
            self.decide(
                "quantization",
                choice,
                rule,
                reason=reason,
                source=rule.source_for(facts_values),
                handbook=rule.handbook,
            )
            return choice
        fallback = engine.quant_methods[0]
        values = {**facts, **_engine_values(engine), "method": get_quant(fallback).name}
        self.decide("quantization", fallback, self.book.quantization_engine_only, values)
        return fallback

    def fit_quant(self, engine: ServingEngine, quant: str, kv: str) -> str:
        """Step to a lighter format when the chosen one does not fit at all."""
        current = self._fit(engine, quant, kv)
        if current.fits or self.quant_pinned:
            return quant
        step = self.book.quantization_fit
        for option in step.fallbacks:
            if (
                option not in engine.quant_methods
                or not self._gate(option, engine).allowed
                or self._gate(option, engine).degraded
            ):
                continue
            if weights_gb(self.model, option) >= weights_gb(self.model, quant):
                continue
            if self._fit(engine, option, kv).fits:
                values = {
                    **self.facts(),
                    "from_method": get_quant(quant).name,
                    "from_weights_gb": weights_gb(self.model, quant),
                    "to_method": get_quant(option).name,
                    "to_weights_gb": weights_gb(self.model, option),
                    "to_source": get_quant(option).source,
                }
                self.decide("quantization", option, step, values)
                return option
        return quant

    # -- KV cache -----------------------------------------------------------------------------------------------
    def choose_kv(self, engine: ServingEngine, quant: str) -> str:
        sixteen = self._fit(engine, quant, "auto")
        facts = self.facts(kv_pressure=_yn(not sixteen.meets_concurrency))
        eight = eight_bit_kv(engine)
        for rule in matching(self.book.kv_cache, facts):
            if rule.choice == "8bit" and eight is None:
                continue
            choice = eight if rule.choice == "8bit" and eight else "auto"
            self.decide("kv_cache_dtype", choice, rule, facts)
            return choice
        return "auto"

    def policy(self, engine: ServingEngine) -> Policy:
        """Expert parallelism and data-parallel attention, where the model and the engine have them."""
        model, book = self.model, self.book
        ep_allowed = model.is_moe and engine.split == "tensor" and engine.id in book.expert_parallel.engines
        latency_first = self.request.priority.value == "latency"
        low_concurrency = self.request.concurrency < book.facts.high_concurrency
        return Policy(
            expert_parallel=ep_allowed and model.experts >= book.expert_parallel.min_experts,
            expert_parallel_allowed=ep_allowed,
            attention_data_parallel=ep_allowed
            and model.kv_kind == "mla"
            and engine.id in book.attention_data_parallel.engines
            and not (latency_first and low_concurrency),
        )

    def _fit(self, engine: ServingEngine, quant: str, kv: str, gpus: int | None = None) -> MemoryFit:
        return fit(
            self.model,
            self.gpu,
            gpus=gpus or self.request.gpus,
            split_kind=engine.split,
            quant=quant,
            kv_dtype=kv,
            context=self.context,
            concurrency=self.request.concurrency,
            prefer_wide=self.request.priority.value == "latency",
            policy=self.policy(engine),
        )

    def multi_node(self, engine: ServingEngine, quant: str, kv: str, result: MemoryFit) -> MemoryFit:
        """When no GPU count of one node holds the model, the smallest multi-node layout (said as a decision)."""
        r = self.request
        if result.fits or engine.split != "tensor":
            return result
        one_node = min_gpus(
            self.model,
            self.gpu,
            split_kind=engine.split,
            quant=quant,
            kv_dtype=kv,
            context=self.context,
            concurrency=1,
            meet_concurrency=False,
            policy=self.policy(engine),
        )
        if one_node is not None:
            return result
        statement = self.book.multi_node
        values: dict[str, object] = {
            **self.facts(),
            "method": get_quant(quant).name,
            "max_gpus": self.limits.max_gpus,
            "max_nodes": self.limits.max_nodes,
            "weights_gb": weights_gb(self.model, quant),
        }
        if engine.id not in statement.engines or self.gpu.kind not in statement.gpu_kinds:
            return result
        nodes = min_nodes(
            self.model,
            self.gpu,
            quant=quant,
            kv_dtype=kv,
            context=self.context,
            concurrency=r.concurrency,
            policy=self.policy(engine),
        )
        if nodes is None:
            self.decide(
                "parallelism",
                "does not fit on any layout",
                statement,
                values,
                reason=render(statement.reason_none, values),
            )
            return result
        values.update(nodes.model_dump())
        self.decide("parallelism", f"{nodes.nodes} nodes x {nodes.gpus_per_node} GPUs", statement, values)
        self.warnings.append(
            f"{self.model.name} does not fit in one node of {self.limits.max_gpus}x {self.gpu.name}: the advice is "
            f"for {nodes.nodes} nodes ({nodes.gpus} GPUs); the command is the first node's; its notes give the rest."
        )
        return nodes

    # -- memory suggestions -------------------------------------------------------------------------------------
    def suggestions(self, engine: ServingEngine, quant: str, kv: str, result: MemoryFit) -> list[str]:
        r, out = self.request, list[str]()
        if result.meets_concurrency:
            return out
        for option in self.book.quantization_fit.fallbacks:
            if (
                option == quant
                or option not in engine.quant_methods
                or not self._gate(option, engine).allowed
                or weights_gb(self.model, option) >= weights_gb(self.model, quant)
            ):
                continue
            alt = self._fit(engine, option, kv)
            if alt.fits:
                out.append(
                    f"Quantize to {get_quant(option).name}: weights {alt.weights_gb:.1f} GB, room for "
                    f"{alt.max_concurrent_sequences} sequences."
                )
                break
        eight = eight_bit_kv(engine)
        if kv == "auto" and eight and result.fits:
            alt = self._fit(engine, quant, eight)
            out.append(
                f"8-bit KV cache ({eight}): room for {alt.max_concurrent_sequences} sequences instead of "
                f"{result.max_concurrent_sequences}."
            )
        need = min_gpus(
            self.model,
            self.gpu,
            split_kind=engine.split,
            quant=quant,
            kv_dtype=kv,
            context=self.context,
            concurrency=r.concurrency,
            meet_concurrency=True,
        )
        if need is not None and need > r.gpus:
            out.append(f"More GPUs: {need}x {self.gpu.name} hold {r.concurrency} sequences of {self.context} tokens.")
        if result.fits and result.max_concurrent_sequences:
            per_seq = result.kv_budget_gb_per_gpu / max(1, result.max_concurrent_sequences // result.replicas)
            shorter = int(
                result.kv_budget_gb_per_gpu / per_seq * self.context / math.ceil(r.concurrency / result.replicas)
            )
            if shorter >= MIN_CONTEXT_TOKENS:
                out.append(f"Shorter context: about {shorter} tokens per sequence lets {r.concurrency} sequences fit.")
        if not result.fits and need is None:
            fits_any = min_gpus(
                self.model,
                self.gpu,
                split_kind=engine.split,
                quant=quant,
                kv_dtype=kv,
                context=self.context,
                concurrency=1,
                meet_concurrency=False,
            )
            if fits_any is None:
                self.warnings.append(self._nowhere_message(engine, quant, kv))
        return out

    def _nowhere_message(self, engine: ServingEngine, quant: str, kv: str) -> str:
        best: tuple[float, str] | None = None
        for gpu in load_gpus():
            if not engine.runs_on_gpu(gpu):
                continue
            for option in (quant, *self.book.quantization_fit.fallbacks):
                if option not in engine.quant_methods or not self._gate(option, engine, gpu).allowed:
                    continue
                count = min_gpus(
                    self.model,
                    gpu,
                    split_kind=engine.split,
                    quant=option,
                    kv_dtype=kv,
                    context=self.context,
                    concurrency=1,
                    meet_concurrency=False,
                )
                if count is not None:
                    memory = count * gpu.memory_gb
                    if best is None or memory < best[0]:
                        best = (memory, f"{count}x {gpu.name} with {get_quant(option).name}")
                    break
        limit = self.limits.max_gpus
        head = (
            f"{self.model.name} does not fit on any count (1-{limit}) of {self.gpu.name} with "
            f"{get_quant(quant).name} weights, even with one sequence of {self.context} tokens."
        )
        if best is None:
            return head + " No GPU in the catalog holds it on one node; pick a smaller model."
        return head + f" Nearest valid setup: {best[1]}; or pick a smaller model."

    # -- the rest -------------------------------------------------------------------------------------------------
    def run(self) -> Advice:
        r = self.request
        engine, runner, switch_when = self.choose_engine()
        quant = self.choose_quant(engine)
        quant = self.fit_quant(engine, quant, "auto")
        kv = self.choose_kv(engine, quant)
        result = self.multi_node(engine, quant, kv, self._fit(engine, quant, kv))
        offload_gb = self._offload_decision(engine, result)
        result = result.model_copy(update={"suggestions": tuple(self.suggestions(engine, quant, kv, result))})
        self._memory_decision(result)
        self._parallel_decisions(engine, result)
        if result.fits and result.max_concurrent_sequences and engine.id not in self.book.paging.engines_without_paging:
            self._paging_decision(result.max_concurrent_sequences)
        self._caching_decisions(engine)
        facts = self.facts(engine_has_spec=_yn(bool(engine.spec_methods)))
        spec = decide_speculative(self.model, engine, facts)
        self.decide("speculative", spec.method, self.book.get(spec.rule_id), reason=spec.reason, source=spec.source)
        max_seqs, batched = self._batching_decision()
        plan_kwargs = {
            "model": self.model,
            "split": result.split,
            "replicas": result.replicas,
            "tensor_parallel": result.tensor_parallel,
            "pipeline_parallel": result.pipeline_parallel,
            "expert_parallel": result.expert_parallel,
            "attention_data_parallel": result.attention_data_parallel,
            "nodes": result.nodes,
            "gpus_per_node": result.gpus_per_node,
            "gpu_offload": self.gpu.kind != "cpu",
            "context": self.context,
            "max_num_seqs": max_seqs,
            "batched_tokens": batched,
            "gpu_memory_utilization": self.limits.gpu_memory_utilization,
            "slots": max(1, min(r.concurrency, result.max_concurrent_sequences)),
        }
        launch = launch_command(
            Plan(engine=engine, quant=quant, kv_dtype=kv, speculative=spec, offload_gb=offload_gb, **plan_kwargs)
        )
        runner_launch = None
        if runner.id != engine.id:
            runner_quant = quant if quant in runner.quant_methods else runner.quant_methods[0]
            runner_kv = kv if kv == "auto" or kv == eight_bit_kv(runner) else (eight_bit_kv(runner) or "auto")
            runner_spec = decide_speculative(
                self.model, runner, self.facts(engine_has_spec=_yn(bool(runner.spec_methods)))
            )
            runner_launch = launch_command(
                Plan(engine=runner, quant=runner_quant, kv_dtype=runner_kv, speculative=runner_spec, **plan_kwargs)
            )
        for warning in launch.warnings:
            if warning not in self.warnings:
                self.warnings.append(warning)
        if runner_launch is not None:
            for warning in runner_launch.warnings:
                self.warnings.append(f"Runner-up ({runner.name}): {warning}")
        for item in (engine, runner):
            if item.today_vs_handbook and item.today_vs_handbook not in self.today:
                self.today.append(item.today_vs_handbook)
        if engine.lifecycle != "active":
            self.warnings.append(f"{engine.name} is {engine.status}.")
        method = get_quant(quant)
        return Advice(
            request=r,
            gpu_id=self.gpu.id,
            gpu_name=self.gpu.name,
            model_id=self.model.id,
            model_name=self.model.name,
            engine=engine.id,
            engine_name=engine.name,
            runner_up=runner.id,
            runner_up_name=runner.name,
            switch_when=switch_when,
            quantization=quant,
            quantization_name=method.name,
            kv_cache_dtype=kv,
            prefix_caching=True,
            chunked_prefill=engine.split == "tensor",
            kv_offload_gb=offload_gb,
            max_num_seqs=max_seqs,
            max_num_batched_tokens=batched,
            speculative=spec,
            memory=result,
            model=self.model,
            launch=launch,
            runner_up_launch=runner_launch,
            reasons=tuple(self.decisions),
            today_vs_handbook=tuple(self.today),
            warnings=tuple(self.warnings),
        )

    def _offload_decision(self, engine: ServingEngine, result: MemoryFit) -> int | None:
        """Offload KV to CPU memory for peaks only, when the GPUs hold a little less than the target (GiB, or None)."""
        peaks, off = self.book.kv_offload_peaks, self.book.kv_offload_off
        values = {**self.facts(), **_engine_values(engine), **result.model_dump(), "max_overflow": peaks.max_overflow}
        overflow = self.request.concurrency / max(1, result.max_concurrent_sequences)
        if result.meets_concurrency or not result.fits:
            why = off.not_needed
        elif engine.id not in peaks.engines:
            why = off.no_engine_support
        elif overflow > peaks.max_overflow:
            why = off.gap_too_large
        else:
            # One engine (a model copy; one GPU per rank under data-parallel attention) takes the size in full: every
            # data-parallel engine allocates its own, so the copies do not multiply it.
            from selector.launch import engine_gpus, offload_gib

            gpus = engine_gpus(result.tensor_parallel, result.pipeline_parallel, result.attention_data_parallel)
            offload = offload_gib(result.kv_shortfall_gb_per_gpu, gpus, peaks.extra_gib)
            values = {**values, "offload_gib": offload, "engine_gpus": gpus}
            self.decide("kv_offload", f"{offload} GiB", peaks, values, handbook=peaks.handbook_for(engine.id))
            return offload
        self.decide("kv_offload", "off", off, {**values, "why": render(why, values)})
        return None

    def _batching_decision(self) -> tuple[int, int]:
        """The checklist's max-num-seqs and max-num-batched-tokens for this target and priority."""
        r, batching = self.request, self.book.batching
        power_of_two = 2 ** math.ceil(math.log2(r.concurrency))
        max_seqs = min(batching.max_num_seqs_max, max(batching.max_num_seqs_min, power_of_two))
        latency = r.priority.value == "latency"
        batched = batching.batched_tokens_latency if latency else batching.batched_tokens_throughput
        values = {
            **self.facts(),
            "max_num_seqs": max_seqs,
            "batched_tokens": batched,
            "favours": batching.favours_latency if latency else batching.favours_throughput,
        }
        self.decide("batching", f"max-num-seqs {max_seqs}, max-num-batched-tokens {batched}", batching, values)
        return max_seqs, batched

    def _memory_decision(self, result: MemoryFit) -> None:
        statement = self.book.memory_fit
        values = {**self.facts(), **result.model_dump(), "limits_source": self.limits.source}
        if result.fits:
            reason = statement.reason_for(values)
            choice = (
                "fits"
                if result.meets_concurrency
                else f"fits {result.max_concurrent_sequences} of {result.target_concurrency}"
            )
        else:
            reason = render(statement.reason_no_fit, values)
            choice = "does not fit"
            self.warnings.append(
                f"{self.model.name} does not fit on {self.request.gpus}x {self.gpu.name}. "
                + " ".join(result.suggestions).strip()
            )
        if result.fits and not result.meets_concurrency:
            self.warnings.append(
                f"Only {result.max_concurrent_sequences} of the {result.target_concurrency} target "
                "sequences fit. " + " ".join(result.suggestions)
            )
        self.decide("memory", choice, statement, values, reason=reason)

    def _parallel_decisions(self, engine: ServingEngine, result: MemoryFit) -> None:
        """The layout: copies and GPUs per copy, the sizes the engines would refuse, experts and MLA attention."""
        book, model = self.book, self.model
        values: dict[str, object] = {
            **self.facts(),
            **result.model_dump(),
            "experts": model.experts,
            "experts_per_token": model.experts_per_token,
            "experts_per_gpu": model.experts // max(1, result.split),
        }
        if result.skipped_splits:
            skipped = "; ".join(result.skipped_splits)
            self.decide("parallelism", "sizes skipped", book.split_gate, {**values, "skipped": skipped})
        if result.nodes == 1 and (result.replicas > 1 or result.split > 1):
            layout = f"tensor parallel {result.tensor_parallel}"
            if result.attention_data_parallel:
                layout = f"data-parallel attention over {result.split} GPUs"
            if result.expert_parallel:
                layout += f", experts spread over {result.split} GPUs"
            self.decide(
                "parallelism",
                f"{result.split} GPU(s) per copy x {result.replicas} copies",
                book.memory_split,
                {**values, "layout": layout},
            )
        if model.is_moe and result.split > 1:
            ep = book.expert_parallel
            if result.expert_parallel:
                policy = self.policy(engine)
                if policy.expert_parallel:
                    self.decide("expert_parallel", f"on ({result.split} GPUs)", ep, values)
                else:
                    why = next((s for s in result.skipped_splits if "expert" in s), "tensor parallel")
                    reason = render(ep.reason_needed, {**values, "why": why})
                    self.decide("expert_parallel", f"on ({result.split} GPUs)", ep, values, reason=reason)
        if model.kv_kind == "mla" and result.split > 1 and engine.id in book.attention_data_parallel.engines:
            adp = book.attention_data_parallel
            if result.attention_data_parallel:
                self.decide("attention_data_parallel", f"on ({result.split} ranks)", adp, values)
            else:
                self.decide("attention_data_parallel", "off", adp, values, reason=render(adp.reason_latency, values))

    def _paging_decision(self, full_context_sequences: int) -> None:
        """PagedAttention: the fit above reserves the whole context per sequence; paged blocks hold what is used."""
        paging = self.book.paging
        block = paging.block_tokens
        used = math.ceil(self.context * paging.example_fill / block) * block
        paged = int(full_context_sequences * self.context / used)
        values = {"context": self.context, "block": block, "used": used, "paged": paged, "full": full_context_sequences}
        self.decide("kv_paging", f"paged, {block}-token blocks", paging, values)

    def _caching_decisions(self, engine: ServingEngine) -> None:
        values = {
            **self.facts(),
            **_engine_values(engine),
            "prompt_reuse_share": load_handbook().levers.prefix_caching.prompt_reuse_share,
        }
        if engine.prefix_caching_default == "on":
            default_on = self.book.prefix_caching_default_on
            self.decide(
                "prefix_caching",
                "on (engine default)",
                default_on,
                values,
                handbook=default_on.handbook_for(engine.id),
            )
        else:
            flag = self.book.prefix_caching_flag
            self.decide(
                "prefix_caching", "on (--enable-prefix-caching)", flag, values, handbook=flag.handbook_for(engine.id)
            )
        chunked = self.book.chunked_prefill
        self.decide(
            "chunked_prefill", engine.chunked_prefill, chunked, values, handbook=chunked.handbook_for(engine.id)
        )


def advise(request: AdviceRequest) -> Advice:
    """Recommend engine, quantization, KV cache, speculation, memory fit and launch command for one request.

    Raises SelectorError (or GpuLookupError) for names it cannot resolve; everything else becomes a warning
    in the result, with the nearest valid advice.
    """
    return _Advisor(request).run()
