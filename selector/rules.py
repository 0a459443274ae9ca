"""The advisor's rules, read from rules.toml: ordered rows of (facts -> choice, reason, source), plus the limits."""

import tomllib
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict

RULES_TOML = Path(__file__).parent / "data" / "rules.toml"

Facts = Mapping[str, str]


class Rule(BaseModel):
    """One row: when every fact in `when` matches (a list means any of), the rule chooses `choice`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    when: dict[str, str | list[str]]
    choice: str
    reason: str
    source: str
    runner_up: str = ""
    switch_when: str = ""
    handbook: str = ""

    def matches(self, facts: Facts) -> bool:
        """Whether every condition holds for these facts."""
        for key, wanted in self.when.items():
            if key not in facts:
                raise KeyError(f"rule {self.id} needs the fact '{key}'")
            allowed = wanted if isinstance(wanted, list) else [wanted]
            if facts[key] not in allowed:
                return False
        return True

    def reason_for(self, values: Mapping[str, object]) -> str:
        """The reason with its {placeholders} filled in."""
        return self.reason.format_map(_Lenient(values))


class _Lenient(dict[str, object]):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


class Defaults(BaseModel):
    """The inputs a page or the CLI starts from."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str
    workload: str
    priority: str
    ecosystem: str
    deploy: str
    build_engines: str
    context: int
    concurrency: int
    source: str


class Limits(BaseModel):
    """Thresholds and engine defaults the rules and the memory fit use."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_gpus: int
    gpu_memory_utilization: float
    apple_gpu_memory_share: float
    runtime_overhead_gb_per_gpu: float
    high_concurrency: int
    offload_max_overflow: float
    tiny_draft_ratio: float
    max_num_seqs_min: int
    max_num_seqs_max: int
    batched_tokens_latency: int
    batched_tokens_throughput: int
    ngram_speculative_tokens: int
    ngram_prompt_lookup_max: int
    source: str


class Paging(BaseModel):
    """PagedAttention's block size and the sentence that explains it (handbook 5.1)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    block_tokens: int
    example_fill: float
    reason: str
    source: str


class RuleBook(BaseModel):
    """Everything in rules.toml, typed."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    defaults: Defaults
    limits: Limits
    paging: Paging
    engine: tuple[Rule, ...]
    quantization: tuple[Rule, ...]
    speculative: tuple[Rule, ...]
    kv_cache: tuple[Rule, ...]

    def all_rules(self) -> tuple[Rule, ...]:
        """Every rule of every table."""
        return (*self.engine, *self.quantization, *self.speculative, *self.kv_cache)


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
