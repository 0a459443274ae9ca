"""The advisor's entry point: advise(request) -> Advice, every decision with its rule, reason and source."""

import functools
import math
from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field

from catalog import Gpu, find_gpu, load_gpus, load_handbook
from catalog.engines import ServingEngine, SourceTopic, get_engine, gpu_platform
from catalog.kvcache import eight_bit_kv
from catalog.models import CUSTOM_MODEL, ModelSpec, find_model
from catalog.quantization import AUTO, get_quant, sm_name, weights_gb
from i18n import DEFAULT_LANGUAGE, Language, Translate, identity, translate
from selector.custom import custom_model
from selector.errors import SelectorError
from selector.gates import Gate, gate
from selector.inputs import MIN_CONTEXT_TOKENS, AdviceRequest
from selector.launch import LaunchCommand, Plan, launch_command
from selector.memory import MemoryFit, Policy, fit, memory_pressure, min_gpus, min_nodes
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
    shown: str = Field(default="", exclude=True)  # `choice` as the page words it in its language ('' = as is)


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

    def summary(self, tr: Translate = identity) -> str:
        """One readable sentence."""
        spec = tr("n-gram speculation") if self.speculative.enabled else tr("no speculation")
        fit_text = (
            tr("up to {sequences} sequences of {tokens} tokens").format(
                sequences=self.memory.max_concurrent_sequences, tokens=self.memory.context_tokens
            )
            if self.memory.fits
            else tr("does NOT fit")
        )
        return tr("{engine} with {quant} weights, {kv} KV cache and {spec} on {gpus}x {gpu}: {fit}.").format(
            engine=self.engine_name,
            quant=self.quantization_name,
            kv=self.kv_cache_dtype,
            spec=spec,
            gpus=self.request.gpus,
            gpu=self.gpu_name,
            fit=fit_text,
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


def resolve_model(request: AdviceRequest, tr: Translate = identity) -> ModelSpec:
    """The preset, or the custom model the request describes (`tr` words its errors)."""
    if request.model != CUSTOM_MODEL:
        return find_model(request.model)
    return custom_model(request, tr)


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


def _engine_values(
    engine: ServingEngine, topic: SourceTopic, language: Language = DEFAULT_LANGUAGE
) -> dict[str, object]:
    """What a statement about an engine may name: {engine}, {engine_source} (its sources on `topic`), its wording.

    The wording is in the language (engines.csv's `_zh` twins for Chinese); the source stays as cited.
    """
    return {
        "engine": engine.name,
        "engine_source": engine.source_for(topic),
        "hardware": engine.text("hardware", language),
        "formats": engine.text("quant_formats", language),
        "engine_prefix_caching": engine.text("prefix_caching", language),
        "engine_chunked_prefill": engine.text("chunked_prefill", language),
    }


class _Advisor:
    """One advice run: collects decisions and warnings as it goes."""

    def __init__(self, request: AdviceRequest, language: Language = DEFAULT_LANGUAGE) -> None:
        self.request = request
        self.language = language
        self.tr: Translate = lambda message: translate(language, message)
        self.book = load_rules()
        self.limits = self.book.limits
        self.gpu = find_gpu(request.gpu)
        self.model = resolve_model(request, self.tr)
        self.decisions: list[Decision] = []
        self.quant_pinned = False  # the user's pinned format is the one advised (not refused by a gate)
        self.warnings: list[str] = []
        self.today: list[str] = []
        self.context = request.context
        if self.context > self.model.max_context:
            self.warnings.append(
                self.tr(
                    "Context {context} is longer than {model}'s maximum of {maximum} tokens; advising for {maximum}."
                ).format(context=request.context, model=self.model.name, maximum=self.model.max_context)
            )
            self.context = self.model.max_context
        self.platform = self._platform()

    def _platform(self) -> str:
        gpu, deploy, tr = self.gpu, self.request.deploy.value, self.tr
        if gpu.kind == "apple":
            if deploy != "apple":
                self.warnings.append(
                    tr(
                        "{gpu} is Apple Silicon, so the advice is for an Apple deployment (you chose deploy={deploy})."
                    ).format(gpu=gpu.name, deploy=deploy)
                )
            return "apple"
        if gpu.kind == "cpu":
            if deploy != "edge":
                self.warnings.append(
                    tr(
                        "{gpu} is a CPU-only host, so the advice is for CPU serving (the handbook's edge / CPU "
                        "row: llama.cpp with GGUF), although you chose deploy={deploy}."
                    ).format(gpu=gpu.name, deploy=deploy)
                )
            return "edge"
        if deploy == "apple":
            self.warnings.append(
                tr(
                    "deploy=apple, but {gpu} is not Apple Silicon; advising for the {gpu} "
                    "instead. Pick an Apple GPU (M2 Ultra, M3 Ultra, M4 Max) for Mac advice."
                ).format(gpu=gpu.name)
            )
            return "datacenter"
        return deploy

    def then(self, first: str, second: str) -> str:
        """Two sentences one after the other ('A. B.' in English, no space between them in Chinese)."""
        return self.tr("{first} {second}").format(first=first, second=second)

    def sentences(self, parts: Sequence[str]) -> str:
        """Sentences one after the other ('' when there are none)."""
        return functools.reduce(self.then, parts) if parts else ""

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
        shown: str = "",
    ) -> None:
        """Record a decision under its rule: the rule's reason and source filled with `values`, unless given.

        `shown` is the choice in the advice's language when it is words rather than an id or a flag.
        """
        filled = values or {}
        self.decisions.append(
            Decision(
                topic=topic,
                choice=choice,
                shown=shown if self.language != DEFAULT_LANGUAGE else "",
                rule_id=rule.id,
                reason=rule.reason_for(filled, self.language) if reason is None else reason,
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
                self.tr(
                    "TensorRT-LLM needs NVIDIA GPUs; {gpu} is not, so the team's willingness "
                    "to build engines does not apply here."
                ).format(gpu=self.gpu.name)
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
                {**facts, **_engine_values(engine, "hardware", self.language), "row": rule.id},
                shown=self.tr("not {name}").format(name=engine.name),
            )
        if tree_rule is None:  # every catalog GPU runs vLLM or llama.cpp, so the catch-all rows always apply
            raise SelectorError(f"No engine in the catalog runs on {self.gpu.name}.")
        engine = get_engine(tree_rule.choice)
        if r.engine != AUTO:
            pinned = get_engine(r.engine)
            if not pinned.runs_on_gpu(self.gpu):
                self.warnings.append(
                    self.tr(
                        "{pinned} does not run on {gpu} ({hardware}); showing the advice for {engine} instead."
                    ).format(
                        pinned=pinned.name,
                        gpu=self.gpu.name,
                        hardware=pinned.text("hardware", self.language),
                        engine=engine.name,
                    )
                )
            elif not pinned.launchable:
                self.warnings.append(
                    self.tr(
                        "{pinned} is {status}; the advisor gives no launch command for it, "
                        "so it shows the advice for {engine} instead."
                    ).format(pinned=pinned.name, status=pinned.text("status", self.language), engine=engine.name)
                )
            else:
                runner = engine if engine.id != pinned.id else get_engine(tree_rule.runner_up)
                values = {
                    **facts,
                    **_engine_values(pinned, "hardware", self.language),
                    "rule_engine": engine.name,
                    "rule_reason": tree_rule.reason_for(facts, self.language),
                }
                self.decide("engine", pinned.id, self.book.engine_pinned, values)
                picked = self.tr("{engine} is what the rules pick here.").format(engine=runner.name)
                return pinned, self._runner_up(runner, pinned, rules), picked
        self.decide(
            "engine",
            engine.id,
            tree_rule,
            facts,
            handbook=tree_rule.text("handbook", self.language) if tree_rule.handbook != engine.name else "",
        )
        runner = self._runner_up(get_engine(tree_rule.runner_up), engine, rules)
        switch_when = tree_rule.text("switch_when", self.language)
        self.decide("runner_up", runner.id, tree_rule, reason=switch_when)
        return engine, runner, switch_when

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
        checked = gate(method_id, gpu, self.language)
        method = get_quant(method_id)
        values = {
            "gpu": gpu.name,
            "sm": sm_name(gpu),
            "engine": engine.name,
            "engine_source": engine.source_for("quantization"),
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
            reason=refused.reason_for(values, self.language),
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
                self.warnings.append(
                    self.tr("{reason} Showing the advice with the rules' choice instead.").format(reason=checked.reason)
                )
                self.decide(
                    "architecture gate",
                    f"not {pinned.name}",
                    self.book.get(checked.rule_id),
                    reason=checked.reason,
                    source=checked.source,
                    shown=self.tr("not {name}").format(name=pinned.name),
                )
            elif r.quant not in engine.quant_methods:
                self.warnings.append(
                    self.tr("{engine} does not serve {method}; showing the rules' choice instead.").format(
                        engine=engine.name, method=pinned.name
                    )
                )
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
                    shown=self.tr("not {name}").format(name=method.name),
                )
                continue
            if choice not in engine.quant_methods:
                values = {
                    **facts,
                    **_engine_values(engine, "quantization", self.language),
                    "row": rule.id,
                    "method": method.name,
                }
                self.decide(
                    "engine gate",
                    f"not {method.name}",
                    self.book.quantization_engine_gate,
                    values,
                    shown=self.tr("not {name}").format(name=method.name),
                )
                continue
            reason = rule.reason_for(facts_values, self.language)
            if checked.degraded:
                reason = self.then(reason, checked.reason)
            self.decide(
                "quantization",
                choice,
                rule,
                reason=reason,
                source=rule.source_for(facts_values),
                handbook=rule.text("handbook", self.language),
            )
            return choice
        fallback = engine.quant_methods[0]
        values = {**facts, **_engine_values(engine, "quantization", self.language), "method": get_quant(fallback).name}
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
                reason=render(statement.text("reason_none", self.language), values),
                shown=self.tr("does not fit on any layout"),
            )
            return result
        values.update(nodes.model_dump())
        self.decide(
            "parallelism",
            f"{nodes.nodes} nodes x {nodes.gpus_per_node} GPUs",
            statement,
            values,
            shown=self.tr("{nodes} nodes x {gpus} GPUs").format(nodes=nodes.nodes, gpus=nodes.gpus_per_node),
        )
        self.warnings.append(
            self.tr(
                "{model} does not fit in one node of {max_gpus}x {gpu}: the advice is for {nodes} nodes ({gpus} "
                "GPUs); the command is the first node's; its notes give the rest."
            ).format(
                model=self.model.name,
                max_gpus=self.limits.max_gpus,
                gpu=self.gpu.name,
                nodes=nodes.nodes,
                gpus=nodes.gpus,
            )
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
                    self.tr(
                        "Quantize to {method}: weights {weights_gb:.1f} GB, room for {sequences} sequences."
                    ).format(
                        method=get_quant(option).name, weights_gb=alt.weights_gb, sequences=alt.max_concurrent_sequences
                    )
                )
                break
        eight = eight_bit_kv(engine)
        if kv == "auto" and eight and result.fits:
            alt = self._fit(engine, quant, eight)
            out.append(
                self.tr("8-bit KV cache ({dtype}): room for {sequences} sequences instead of {now}.").format(
                    dtype=eight, sequences=alt.max_concurrent_sequences, now=result.max_concurrent_sequences
                )
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
            out.append(
                self.tr("More GPUs: {count}x {gpu} hold {concurrency} sequences of {context} tokens.").format(
                    count=need, gpu=self.gpu.name, concurrency=r.concurrency, context=self.context
                )
            )
        if result.fits and result.max_concurrent_sequences:
            per_seq = result.kv_budget_gb_per_gpu / max(1, result.max_concurrent_sequences // result.replicas)
            shorter = int(
                result.kv_budget_gb_per_gpu / per_seq * self.context / math.ceil(r.concurrency / result.replicas)
            )
            if shorter >= MIN_CONTEXT_TOKENS:
                out.append(
                    self.tr(
                        "Shorter context: about {tokens} tokens per sequence lets {concurrency} sequences fit."
                    ).format(tokens=shorter, concurrency=r.concurrency)
                )
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
                        best = (
                            memory,
                            self.tr("{count}x {gpu} with {method}").format(
                                count=count, gpu=gpu.name, method=get_quant(option).name
                            ),
                        )
                    break
        limit = self.limits.max_gpus
        head = self.tr(
            "{model} does not fit on any count (1-{limit}) of {gpu} with {method} weights, even with one sequence of "
            "{context} tokens."
        ).format(
            model=self.model.name, limit=limit, gpu=self.gpu.name, method=get_quant(quant).name, context=self.context
        )
        if best is None:
            return self.then(head, self.tr("No GPU in the catalog holds it on one node; pick a smaller model."))
        return self.then(head, self.tr("Nearest valid setup: {setup}; or pick a smaller model.").format(setup=best[1]))

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
        spec = decide_speculative(self.model, engine, facts, self.language)
        self.decide(
            "speculative",
            spec.method,
            self.book.get(spec.rule_id),
            reason=spec.reason,
            source=spec.source,
            shown=self.tr("none") if spec.method == "none" else "",
        )
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
            "language": self.language,
        }
        launch = launch_command(
            Plan(engine=engine, quant=quant, kv_dtype=kv, speculative=spec, offload_gb=offload_gb, **plan_kwargs)
        )
        runner_launch = None
        if runner.id != engine.id:
            runner_quant = quant if quant in runner.quant_methods else runner.quant_methods[0]
            runner_kv = kv if kv == "auto" or kv == eight_bit_kv(runner) else (eight_bit_kv(runner) or "auto")
            runner_spec = decide_speculative(
                self.model, runner, self.facts(engine_has_spec=_yn(bool(runner.spec_methods))), self.language
            )
            runner_launch = launch_command(
                Plan(engine=runner, quant=runner_quant, kv_dtype=runner_kv, speculative=runner_spec, **plan_kwargs)
            )
        for warning in launch.warnings:
            if warning not in self.warnings:
                self.warnings.append(warning)
        if runner_launch is not None:
            for warning in runner_launch.warnings:
                self.warnings.append(
                    self.tr("Runner-up ({engine}): {warning}").format(engine=runner.name, warning=warning)
                )
        for item in (engine, runner):
            today = item.text("today_vs_handbook", self.language)
            if today and today not in self.today:
                self.today.append(today)
        if engine.lifecycle != "active":
            status = engine.text("status", self.language)
            self.warnings.append(self.tr("{engine} is {status}.").format(engine=engine.name, status=status))
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
        values = {
            **self.facts(),
            **_engine_values(engine, "kv_offload", self.language),
            **result.model_dump(),
            "max_overflow": peaks.max_overflow,
        }
        overflow = self.request.concurrency / max(1, result.max_concurrent_sequences)
        if result.meets_concurrency or not result.fits:
            why = "not_needed"
        elif engine.id not in peaks.engines:
            why = "no_engine_support"
        elif overflow > peaks.max_overflow:
            why = "gap_too_large"
        else:
            # One engine (a model copy; one GPU per rank under data-parallel attention) takes the size in full: every
            # data-parallel engine allocates its own, so the copies do not multiply it.
            from selector.launch import engine_gpus, offload_gib

            gpus = engine_gpus(result.tensor_parallel, result.pipeline_parallel, result.attention_data_parallel)
            offload = offload_gib(result.kv_shortfall_gb_per_gpu, gpus, peaks.extra_gib)
            values = {**values, "offload_gib": offload, "engine_gpus": gpus}
            self.decide("kv_offload", f"{offload} GiB", peaks, values, handbook=peaks.handbook_for(engine.id))
            return offload
        values = {**values, "why": render(off.text(why, self.language), values)}
        self.decide("kv_offload", "off", off, values, shown=self.tr("off"))
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
            "favours": batching.text("favours_latency" if latency else "favours_throughput", self.language),
        }
        self.decide("batching", f"max-num-seqs {max_seqs}, max-num-batched-tokens {batched}", batching, values)
        return max_seqs, batched

    def _memory_decision(self, result: MemoryFit) -> None:
        statement = self.book.memory_fit
        values = {**self.facts(), **result.model_dump(), "limits_source": self.limits.source}
        if result.fits:
            reason = statement.reason_for(values, self.language)
            choice = (
                "fits"
                if result.meets_concurrency
                else f"fits {result.max_concurrent_sequences} of {result.target_concurrency}"
            )
            shown = (
                self.tr("fits")
                if result.meets_concurrency
                else self.tr("fits {fit} of {target}").format(
                    fit=result.max_concurrent_sequences, target=result.target_concurrency
                )
            )
        else:
            reason = render(statement.text("reason_no_fit", self.language), values)
            choice = "does not fit"
            shown = self.tr("does not fit")
            self.warnings.append(
                self.then(
                    self.tr("{model} does not fit on {gpus}x {gpu}.").format(
                        model=self.model.name, gpus=self.request.gpus, gpu=self.gpu.name
                    ),
                    self.sentences(result.suggestions).strip(),
                )
            )
        if result.fits and not result.meets_concurrency:
            self.warnings.append(
                self.then(
                    self.tr("Only {fit} of the {target} target sequences fit.").format(
                        fit=result.max_concurrent_sequences, target=result.target_concurrency
                    ),
                    self.sentences(result.suggestions),
                )
            )
        self.decide("memory", choice, statement, values, reason=reason, shown=shown)

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
        if result.skipped_layouts:
            skipped = functools.reduce(
                lambda first, second: self.tr("{first}; {second}").format(first=first, second=second),
                (s.worded(self.tr) for s in result.skipped_layouts),
            )
            self.decide(
                "parallelism",
                "sizes skipped",
                book.split_gate,
                {**values, "skipped": skipped},
                shown=self.tr("sizes skipped"),
            )
        if result.nodes == 1 and (result.replicas > 1 or result.split > 1):
            tr, split = self.tr, result.split
            layout = tr("tensor parallel {size}").format(size=result.tensor_parallel)
            if result.attention_data_parallel:
                layout = tr("data-parallel attention over {gpus} GPUs").format(gpus=split)
            if result.expert_parallel:
                layout += tr(", experts spread over {gpus} GPUs").format(gpus=split)
            self.decide(
                "parallelism",
                f"{split} GPU(s) per copy x {result.replicas} copies",
                book.memory_split,
                {**values, "layout": layout},
                shown=tr("{gpus} GPU(s) per copy x {replicas} copies").format(gpus=split, replicas=result.replicas),
            )
        if model.is_moe and result.split > 1:
            ep = book.expert_parallel
            if result.expert_parallel:
                policy = self.policy(engine)
                if policy.expert_parallel:
                    self.decide(
                        "expert_parallel",
                        f"on ({result.split} GPUs)",
                        ep,
                        values,
                        shown=self.tr("on ({gpus} GPUs)").format(gpus=result.split),
                    )
                else:
                    why = next(
                        (s.worded(self.tr) for s in result.skipped_layouts if "expert" in s.worded()),
                        self.tr("tensor parallel"),
                    )
                    reason = render(ep.text("reason_needed", self.language), {**values, "why": why})
                    self.decide(
                        "expert_parallel",
                        f"on ({result.split} GPUs)",
                        ep,
                        values,
                        reason=reason,
                        shown=self.tr("on ({gpus} GPUs)").format(gpus=result.split),
                    )
        if model.kv_kind == "mla" and result.split > 1 and engine.id in book.attention_data_parallel.engines:
            adp = book.attention_data_parallel
            if result.attention_data_parallel:
                self.decide(
                    "attention_data_parallel",
                    f"on ({result.split} ranks)",
                    adp,
                    values,
                    shown=self.tr("on ({ranks} ranks)").format(ranks=result.split),
                )
            else:
                self.decide(
                    "attention_data_parallel",
                    "off",
                    adp,
                    values,
                    reason=render(adp.text("reason_latency", self.language), values),
                    shown=self.tr("off"),
                )

    def _paging_decision(self, full_context_sequences: int) -> None:
        """PagedAttention: the fit above reserves the whole context per sequence; paged blocks hold what is used."""
        paging = self.book.paging
        block = paging.block_tokens
        used = math.ceil(self.context * paging.example_fill / block) * block
        paged = int(full_context_sequences * self.context / used)
        values = {"context": self.context, "block": block, "used": used, "paged": paged, "full": full_context_sequences}
        shown = self.tr("paged, {block}-token blocks").format(block=block)
        self.decide("kv_paging", f"paged, {block}-token blocks", paging, values, shown=shown)

    def _caching_decisions(self, engine: ServingEngine) -> None:
        values = {
            **self.facts(),
            **_engine_values(engine, "prefix_caching", self.language),
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
                shown=self.tr("on (engine default)"),
            )
        else:
            flag = self.book.prefix_caching_flag
            self.decide(
                "prefix_caching",
                "on (--enable-prefix-caching)",
                flag,
                values,
                handbook=flag.handbook_for(engine.id),
                shown=self.tr("on (--enable-prefix-caching)"),
            )
        chunked = self.book.chunked_prefill
        self.decide(
            "chunked_prefill",
            engine.chunked_prefill,
            chunked,
            {**values, **_engine_values(engine, "chunked_prefill", self.language)},
            handbook=chunked.handbook_for(engine.id),
            shown=engine.text("chunked_prefill", self.language),
        )


def advise(request: AdviceRequest, language: Language = DEFAULT_LANGUAGE) -> Advice:
    """Recommend engine, quantization, KV cache, speculation, memory fit and launch command for one request.

    `language` words the reasons, warnings and suggestions (rules.toml's `_zh` twins and the selector catalog); the
    CLI and its JSON use the default, English.

    Raises SelectorError (or GpuLookupError) for names it cannot resolve; everything else becomes a warning
    in the result, with the nearest valid advice.
    """
    return _Advisor(request, language).run()
