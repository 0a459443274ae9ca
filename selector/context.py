"""What every step of one advice run shares: the request resolved (GPU, model, context), its rules and its journal."""

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from catalog import Gpu, find_gpu
from catalog.engines import ServingEngine, SourceTopic, gpu_platform
from catalog.models import CUSTOM_MODEL, ModelSpec, find_model
from i18n import DEFAULT_LANGUAGE, Language, Translate, identity, translate
from selector.advice import Decision
from selector.custom import custom_model
from selector.inputs import AdviceRequest
from selector.memory import MemoryFit, Policy, fit, memory_policy, min_gpus
from selector.rules import Explained, RuleBook, load_rules


def resolve_model(request: AdviceRequest, tr: Translate = identity) -> ModelSpec:
    """The preset, or the custom model the request describes (`tr` words its errors)."""
    if request.model != CUSTOM_MODEL:
        return find_model(request.model)
    return custom_model(request, tr)


def gpu_class(gpu: Gpu) -> str:
    """apple, consumer, fp8_datacenter (H-series, B200, MI300X) or datacenter."""
    if gpu.kind in {"apple", "consumer"}:
        return gpu.kind
    if gpu.native_fp8 and (gpu_platform(gpu) == "amd" or (gpu.sm or 0) >= load_rules().facts.fp8_datacenter_min_sm):
        return "fp8_datacenter"
    return "datacenter"


def yn(flag: bool) -> str:
    """A flag as the rules' facts spell it."""
    return "yes" if flag else "no"


def engine_values(
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


@dataclass
class Journal:
    """What a run has said so far: its decisions, its warnings and the engines' notes against the handbook."""

    decisions: list[Decision] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    today: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class AdviceContext:
    """One advice run's inputs, resolved once: every step reads them and writes only to the journal."""

    request: AdviceRequest
    language: Language
    book: RuleBook
    gpu: Gpu
    model: ModelSpec
    context_tokens: int  # the request's context, capped at the model's maximum
    platform: str  # the deployment advised for: datacenter, edge, apple (the GPU decides over the request)
    journal: Journal

    @classmethod
    def start(cls, request: AdviceRequest, language: Language = DEFAULT_LANGUAGE) -> "AdviceContext":
        """Resolve the request's names; warn when the context or the deployment cannot be taken as asked."""
        journal = Journal()
        tr: Translate = functools.partial(translate, language)
        gpu, model = find_gpu(request.gpu), resolve_model(request, tr)
        context = request.context
        if context > model.max_context:
            journal.warnings.append(
                tr(
                    "Context {context} is longer than {model}'s maximum of {maximum} tokens; advising for {maximum}."
                ).format(context=request.context, model=model.name, maximum=model.max_context)
            )
            context = model.max_context
        platform = _platform(gpu, request.deploy.value, tr, journal.warnings)
        return cls(request, language, load_rules(), gpu, model, context, platform, journal)

    # -- words ----------------------------------------------------------------------------------------------------
    def tr(self, message: str) -> str:
        """A message in the run's language."""
        return translate(self.language, message)

    def then(self, first: str, second: str) -> str:
        """Two sentences one after the other ('A. B.' in English, no space between them in Chinese)."""
        return self.tr("{first} {second}").format(first=first, second=second)

    def sentences(self, parts: Sequence[str]) -> str:
        """Sentences one after the other ('' when there are none)."""
        return functools.reduce(self.then, parts) if parts else ""

    def warn(self, message: str) -> None:
        """Add a warning to the advice."""
        self.journal.warnings.append(message)

    # -- facts the rules match ----------------------------------------------------------------------------------
    def facts(self, **extra: str) -> dict[str, str]:
        """The facts the rules' `when` tables match, with `extra` ones of the step asking."""
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
            "fp8_native": yn(gpu.native_fp8),
            "marlin": yn(gpu.marlin_kernels),
            "gpu": gpu.name,
            "gpus": str(r.gpus),
            "model": self.model.name,
            "concurrency": str(r.concurrency),
            "context": str(self.context_tokens),
            "concurrency_band": "high" if r.concurrency >= self.book.facts.high_concurrency else "low",
            "native_format": self.model.native_format,
            "kv_kind": self.model.kv_kind,
            "moe": yn(self.model.is_moe),
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
        self.journal.decisions.append(
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

    # -- memory ---------------------------------------------------------------------------------------------------
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
            online_fp8_block=engine.online_fp8_block,
            **memory_policy(engine),
        )

    def fit(self, engine: ServingEngine, quant: str, kv: str, gpus: int | None = None) -> MemoryFit:
        """The memory fit of the request's GPUs (or `gpus`) with this engine, format and KV type."""
        return fit(
            self.model,
            self.gpu,
            gpus=gpus or self.request.gpus,
            split_kind=engine.split,
            quant=quant,
            kv_dtype=kv,
            context=self.context_tokens,
            concurrency=self.request.concurrency,
            prefer_wide=self.request.priority.value == "latency",
            policy=self.policy(engine),
        )

    def min_gpus(
        self, engine: ServingEngine, quant: str, kv: str, *, target: bool, gpu: Gpu | None = None, policy: bool = False
    ) -> int | None:
        """The fewest GPUs of one node that hold the model: with the target concurrency (`target`), else one sequence.

        `gpu` asks about another catalog GPU; `policy` applies the engine's expert and attention parallelism (its
        FP8 at load and its share of memory apply either way).
        """
        return min_gpus(
            self.model,
            gpu or self.gpu,
            split_kind=engine.split,
            quant=quant,
            kv_dtype=kv,
            context=self.context_tokens,
            concurrency=self.request.concurrency if target else 1,
            meet_concurrency=target,
            policy=self.policy(engine)
            if policy
            else Policy(online_fp8_block=engine.online_fp8_block, **memory_policy(engine)),
        )


def _platform(gpu: Gpu, deploy: str, tr: Translate, warnings: list[str]) -> str:
    """The deployment advised for: the GPU's own when it is Apple Silicon or a CPU host, else the one asked."""
    if gpu.kind == "apple":
        if deploy != "apple":
            warnings.append(
                tr(
                    "{gpu} is Apple Silicon, so the advice is for an Apple deployment (you chose deploy={deploy})."
                ).format(gpu=gpu.name, deploy=deploy)
            )
        return "apple"
    if gpu.kind == "cpu":
        if deploy != "edge":
            warnings.append(
                tr(
                    "{gpu} is a CPU-only host, so the advice is for CPU serving (the handbook's edge / CPU "
                    "row: llama.cpp with GGUF), although you chose deploy={deploy}."
                ).format(gpu=gpu.name, deploy=deploy)
            )
        return "edge"
    if deploy == "apple":
        warnings.append(
            tr(
                "deploy=apple, but {gpu} is not Apple Silicon; advising for the {gpu} "
                "instead. Pick an Apple GPU (M2 Ultra, M3 Ultra, M4 Max) for Mac advice."
            ).format(gpu=gpu.name)
        )
        return "datacenter"
    return deploy
