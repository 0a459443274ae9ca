"""The advisor's rules, read from rules.toml: ordered rows, computed decisions and gates, with reasons and sources."""

import tomllib
from collections.abc import Iterable, Iterator, Mapping
from functools import cache, cached_property
from pathlib import Path
from typing import ClassVar, Self

from pydantic import BaseModel, ConfigDict, model_validator

from i18n import DEFAULT_LANGUAGE, Language

RULES_TOML = Path(__file__).parent / "data" / "rules.toml"

Facts = Mapping[str, str]


class _Lenient(dict[str, object]):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def render(template: str, values: Mapping[str, object]) -> str:
    """Fill a template's {placeholders}; an unknown one is left as written (the rule-id tests look for those)."""
    return template.format_map(_Lenient(values))


class Bilingual(BaseModel):
    """Texts in two languages: every worded field `x` has its Simplified Chinese twin `x_zh` beside it in rules.toml.

    A field in `NAMES` is mostly a name (the handbook's choice: 'TensorRT-LLM'): its twin is written only where the
    wording differs ('vLLM (the default)').
    """

    NAMES: ClassVar[frozenset[str]] = frozenset({"handbook"})

    def text(self, name: str, language: Language = DEFAULT_LANGUAGE) -> str:
        """The field `name` in the language (the English text when its twin is missing)."""
        english = str(getattr(self, name))
        if language == DEFAULT_LANGUAGE:
            return english
        return str(getattr(self, f"{name}_{language}", "") or english)

    def missing_twins(self) -> list[str]:
        """The worded fields with an English text but no Chinese twin."""
        return [
            name
            for name in type(self).model_fields
            if name not in self.NAMES
            and f"{name}_zh" in type(self).model_fields
            and getattr(self, name)
            and not getattr(self, f"{name}_zh")
        ]


class Explained(Bilingual):
    """Anything the advisor can cite: a rule id, one readable sentence of reason and its source (both templates).

    `reason_zh` is the reason in Simplified Chinese (same placeholders); the source is a citation and stays English.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    reason: str
    source: str
    reason_zh: str = ""

    def reason_for(self, values: Mapping[str, object], language: Language = DEFAULT_LANGUAGE) -> str:
        """The reason with its {placeholders} filled in, in the language."""
        return render(self.text("reason", language), values)

    def source_for(self, values: Mapping[str, object]) -> str:
        """The source with its {placeholders} filled in."""
        return render(self.source, values)


class Rule(Explained):
    """One row: when every fact in `when` matches (a list means any of), the rule chooses `choice`."""

    when: dict[str, str | list[str]]
    choice: str
    runner_up: str = ""
    switch_when: str = ""
    switch_when_zh: str = ""
    handbook: str = ""
    handbook_zh: str = ""

    def matches(self, facts: Facts) -> bool:
        """Whether every condition holds for these facts."""
        for key, wanted in self.when.items():
            if key not in facts:
                raise KeyError(f"rule {self.id} needs the fact '{key}'")
            allowed = wanted if isinstance(wanted, list) else [wanted]
            if facts[key] not in allowed:
                return False
        return True


class Statement(Explained):
    """A decision the advisor computes in code rather than picks from a table.

    `handbook` is what the handbook wrote for it; when it is a flag of one engine (`handbook_engine`, the handbook
    was written against vLLM 0.6.5), it is shown only beside that engine.
    """

    handbook: str = ""
    handbook_engine: str = ""

    def handbook_for(self, engine_id: str) -> str:
        """The handbook's choice, if it applies to this engine."""
        return self.handbook if self.handbook_engine in {"", engine_id} else ""


class Defaults(BaseModel):
    """The inputs a page or the CLI starts from (the GPU and the concurrency are the handbook's, in handbook.toml)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str
    workload: str
    priority: str
    ecosystem: str
    deploy: str
    build_engines: str
    context: int
    source: str


class Limits(BaseModel):
    """What the memory fit may use of a node."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_gpus: int
    max_nodes: int
    memory_share_engine: str  # the engine whose share of GPU memory a fit without an engine reads (engines.csv)
    apple_gpu_memory_share: float
    runtime_overhead_gb_per_gpu: float
    source: str


class FactThresholds(BaseModel):
    """Where the facts the rules match on change value."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    high_concurrency: int
    fp8_datacenter_min_sm: float
    source: str


class QuantizationFit(Statement):
    """Step to a lighter format when the chosen one does not fit: the formats to try, in order."""

    fallbacks: tuple[str, ...]


class Gates(BaseModel):
    """The architecture gates of a quantization method on a GPU: one statement per outcome."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    marlin_min_sm: float
    source: str
    no_kernels: Statement
    fp4_native: Statement
    fp4_missing: Statement
    fp8_native: Statement
    fp8_weight_only: Statement
    fp8_missing: Statement
    below_min_sm: Statement
    marlin_missing: Statement
    marlin: Statement
    runs: Statement
    mxfp4_weight_only: Statement
    fp8_engine_no_fallback: Statement
    experts_only: Statement


class ExpertParallel(Statement):
    """Expert parallelism for mixture-of-experts models: from how many experts, on which engines."""

    min_experts: int
    engines: tuple[str, ...]
    reason_needed: str
    reason_needed_zh: str = ""


class AttentionDataParallel(Statement):
    """Data-parallel attention for MLA models, on the engines that have it."""

    engines: tuple[str, ...]
    reason_latency: str
    reason_latency_zh: str = ""


class MultiNode(Statement):
    """The smallest multi-node layout when one node is not enough."""

    engines_by_kind: dict[str, tuple[str, ...]]
    reason_none: str
    reason_none_zh: str = ""

    def applies(self, engine_id: str, gpu_kind: str) -> bool:
        """Whether a multi-node layout is proposed for this engine on this kind of GPU."""
        return engine_id in self.engines_by_kind.get(gpu_kind, ())


class KvOffloadPeaks(Statement):
    """Offload KV to CPU memory when peaks exceed what the GPUs hold by a little, on engines that can."""

    engines: tuple[str, ...]
    max_overflow: float
    extra_gib: int


class KvOffloadOff(Statement):
    """No offload, and the clause that says why (`{why}` in the reason)."""

    not_needed: str
    no_engine_support: str
    gap_too_large: str
    not_needed_zh: str = ""
    no_engine_support_zh: str = ""
    gap_too_large_zh: str = ""


class MemoryFitStatement(Statement):
    """The memory fit's sentence; `reason` when it fits, `reason_no_fit` when not even one sequence does."""

    reason_no_fit: str
    reason_no_fit_zh: str = ""


class Paging(Statement):
    """PagedAttention's block size and the sentence that explains it (handbook 5.1)."""

    block_tokens: int
    example_fill: float
    engines_without_paging: tuple[str, ...]


class Disaggregation(BaseModel):
    """When separate prefill and decode pools pay, and when not: thresholds and one statement per reason."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    long_prompt_tokens: int
    tight_tpot_ms: float
    short_prompt_tokens: int
    interference_ratio: float
    min_gpus: int
    moe_pool_max_nodes: int  # a whole-node mixture of experts' two-pool twin on /compare: pool replicas up to these
    long_prompts_tight_tpot: Statement
    short_prompts: Statement
    interference: Statement
    moe_multi_node: Statement
    too_few_gpus: Statement


class Batching(Statement):
    """The checklist's batching knobs (handbook 6.2)."""

    max_num_seqs_min: int
    max_num_seqs_max: int
    batched_tokens_latency: int
    batched_tokens_throughput: int
    favours_latency: str
    favours_throughput: str
    favours_latency_zh: str = ""
    favours_throughput_zh: str = ""


class Speculation(Bilingual):
    """The n-gram settings and the advice that goes with every speculative decision (handbook 4.3, 4.4, Q4).

    The number of speculative tokens is the handbook's, read from catalog/data/handbook.toml.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    prompt_lookup_max: int
    prompt_lookup_min: int
    tiny_draft_ratio: float
    measure_first: str
    next_step: str
    any_next_option: str
    draft_option: str
    eagle_option: str
    tiny_draft: str
    measure_first_zh: str = ""
    next_step_zh: str = ""
    any_next_option_zh: str = ""
    draft_option_zh: str = ""
    eagle_option_zh: str = ""
    tiny_draft_zh: str = ""
    source: str
    engine_no_ngram: Statement


class RuleBook(BaseModel):
    """Everything in rules.toml, typed."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    defaults: Defaults
    limits: Limits
    facts: FactThresholds
    engine: tuple[Rule, ...]
    engine_hardware_gate: Statement
    engine_pinned: Statement
    quantization: tuple[Rule, ...]
    quantization_pinned: Statement
    quantization_engine_gate: Statement
    quantization_engine_only: Statement
    quantization_fit: QuantizationFit
    gates: Gates
    speculative: tuple[Rule, ...]
    speculation: Speculation
    memory_fit: MemoryFitStatement
    memory_split: Statement
    split_gate: Statement
    expert_parallel: ExpertParallel
    attention_data_parallel: AttentionDataParallel
    multi_node: MultiNode
    paging: Paging
    kv_cache: tuple[Rule, ...]
    kv_offload_peaks: KvOffloadPeaks
    kv_offload_off: KvOffloadOff
    prefix_caching_default_on: Statement
    prefix_caching_flag: Statement
    chunked_prefill: Statement
    batching: Batching
    disaggregation: Disaggregation

    @model_validator(mode="after")
    def _unique_ids(self) -> Self:
        ids = [item.id for item in self.all_explained()]
        twice = sorted({rule_id for rule_id in ids if ids.count(rule_id) > 1})
        if twice:
            raise ValueError(f"rule ids appear more than once in {RULES_TOML.name}: {twice}")
        return self

    def all_rules(self) -> tuple[Rule, ...]:
        """Every row of every ordered table."""
        return (*self.engine, *self.quantization, *self.speculative, *self.kv_cache)

    def all_bilingual(self) -> tuple[Bilingual, ...]:
        """Every part of the book with worded texts (rules, statements and the speculation notes)."""
        return (*self.all_explained(), self.speculation)

    def all_explained(self) -> tuple[Explained, ...]:
        """Every rule and statement in the book, wherever it sits."""
        return tuple(_explained(self))

    def get(self, rule_id: str) -> Explained:
        """A rule or statement by its id."""
        try:
            return self._by_id[rule_id]
        except KeyError:
            raise KeyError(f"no rule '{rule_id}' in {RULES_TOML.name}") from None

    @cached_property
    def _by_id(self) -> dict[str, Explained]:
        return {item.id: item for item in self.all_explained()}


def _explained(model: BaseModel) -> Iterator[Explained]:
    for name in type(model).model_fields:
        value = getattr(model, name)
        items = value if isinstance(value, tuple) else (value,)
        for item in items:
            if isinstance(item, Explained):
                yield item
            if isinstance(item, BaseModel):
                yield from _explained(item)


@cache
def load_rules() -> RuleBook:
    """The rule book, parsed once."""
    with RULES_TOML.open("rb") as handle:
        return RuleBook.model_validate(tomllib.load(handle))


def first_match(rules: Iterable[Rule], facts: Facts) -> Rule:
    """The first rule whose conditions hold (every table ends with a catch-all)."""
    for rule in rules:
        if rule.matches(facts):
            return rule
    raise LookupError("no rule matched; every rule table must end with a catch-all row")


def matching(rules: Iterable[Rule], facts: Facts) -> list[Rule]:
    """Every rule whose conditions hold, in order."""
    return [rule for rule in rules if rule.matches(facts)]
