"""Speculative decoding: whether, which method (n-gram first), how many tokens, and when it hurts."""

from typing import Literal

from pydantic import BaseModel, ConfigDict

from selector.engines import Engine
from selector.models import ModelSpec, load_models
from selector.rules import Facts, Rule, first_match, load_rules

Method = Literal["none", "ngram", "draft_model", "eagle"]


class Speculative(BaseModel):
    """The speculative-decoding advice; `warnings` say when it would hurt."""

    model_config = ConfigDict(frozen=True)

    enabled: bool
    method: Method
    num_speculative_tokens: int | None = None
    prompt_lookup_max: int | None = None
    rule_id: str
    reason: str
    source: str
    next_step: str = ""
    warnings: tuple[str, ...] = ()


def draft_ratio(draft: ModelSpec, target: ModelSpec) -> float:
    """Draft parameters as a share of the target's."""
    return draft.params_b / target.params_b


def draft_warnings(model: ModelSpec) -> tuple[str, str]:
    """The next step after n-gram (draft model or EAGLE) and, for a tiny draft on a huge target, the warning."""
    limits = load_rules().limits
    drafts = {m.id: m for m in load_models()}
    draft = drafts.get(model.draft_model)
    options = []
    if draft is not None:
        options.append(f"a draft model ({draft.repo})")
    if model.eagle_repo:
        options.append(f"EAGLE ({model.eagle_repo})")
    next_step = (
        "If measured n-gram acceptance stays above 50%, consider " + " or ".join(options) + "."
        if options
        else "If measured n-gram acceptance stays above 50%, consider a draft model or EAGLE."
    )
    warning = ""
    if draft is not None and draft_ratio(draft, model) < limits.tiny_draft_ratio:
        warning = (
            f"A {draft.params_b:g}B draft for a {model.params_b:g}B target may accept under 40% and slow "
            "serving down; prefer EAGLE or n-gram."
        )
    return next_step, warning


def decide_speculative(model: ModelSpec, engine: Engine, facts: Facts) -> Speculative:
    """Apply the speculative rules, then check that the engine has the chosen method."""
    book = load_rules()
    limits = book.limits
    rule: Rule = first_match(book.speculative, facts)
    values = {**facts, "engine": engine.name}
    next_step, tiny = draft_warnings(model)
    warnings = [tiny] if tiny else []
    if rule.choice == "ngram" and "ngram" not in engine.spec_methods:
        return Speculative(
            enabled=False,
            method="none",
            rule_id="spec.engine_no_ngram",
            reason=f"{rule.reason_for(values)} But {engine.name} has no n-gram speculation "
            f"({engine.speculative_decoding}); use the runner-up engine for it or leave it off.",
            source=f"{rule.source}; {engine.source}",
            next_step=next_step,
            warnings=tuple(warnings),
        )
    if rule.choice == "ngram":
        warnings.insert(
            0,
            "Measure acceptance first: below 50-60% a miss wastes both the draft and the verification "
            "pass, and serving gets slower.",
        )
        return Speculative(
            enabled=True,
            method="ngram",
            num_speculative_tokens=limits.ngram_speculative_tokens,
            prompt_lookup_max=limits.ngram_prompt_lookup_max,
            rule_id=rule.id,
            reason=rule.reason_for(values),
            source=rule.source,
            next_step=next_step,
            warnings=tuple(warnings),
        )
    return Speculative(
        enabled=False,
        method="none",
        rule_id=rule.id,
        reason=rule.reason_for(values),
        source=rule.source,
        next_step=next_step if rule.id in {"spec.rag", "spec.chat"} else "",
        warnings=tuple(warnings) if rule.id != "spec.engine_has_none" else (),
    )
