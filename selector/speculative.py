"""Speculative decoding: whether, which method (n-gram first), how many tokens, and when it hurts."""

from functools import partial
from typing import Literal

from pydantic import BaseModel, ConfigDict

from catalog import load_handbook
from catalog.engines import ServingEngine
from catalog.models import ModelSpec, load_models
from i18n import DEFAULT_LANGUAGE, Language, Translate, translate
from selector.rules import Facts, Rule, first_match, load_rules, render

Method = Literal["none", "ngram", "draft_model", "eagle"]


class Speculative(BaseModel):
    """The speculative-decoding advice; `warnings` say when it would hurt."""

    model_config = ConfigDict(frozen=True)

    enabled: bool
    method: Method
    num_speculative_tokens: int | None = None
    prompt_lookup_max: int | None = None
    prompt_lookup_min: int | None = None
    rule_id: str
    reason: str
    source: str
    next_step: str = ""
    warnings: tuple[str, ...] = ()


def draft_ratio(draft: ModelSpec, target: ModelSpec) -> float:
    """Draft parameters as a share of the target's."""
    return draft.params_b / target.params_b


def draft_warnings(model: ModelSpec, language: Language = DEFAULT_LANGUAGE) -> tuple[str, str]:
    """The next step after n-gram (draft model or EAGLE) and, for a tiny draft on a huge target, the warning."""
    notes = load_rules().speculation
    tr: Translate = partial(translate, language)
    joined = tr(" or ")
    drafts = {m.id: m for m in load_models()}
    draft = drafts.get(model.draft_model)
    options = []
    if draft is not None:
        options.append(render(notes.text("draft_option", language), {"repo": draft.repo}))
    if model.eagle_repo:
        options.append(render(notes.text("eagle_option", language), {"repo": model.eagle_repo}))
    anything = notes.text("any_next_option", language)
    next_step = render(notes.text("next_step", language), {"options": joined.join(options) if options else anything})
    warning = ""
    if draft is not None and draft_ratio(draft, model) < notes.tiny_draft_ratio:
        warning = render(
            notes.text("tiny_draft", language), {"draft_params_b": draft.params_b, "target_params_b": model.params_b}
        )
    return next_step, warning


def decide_speculative(
    model: ModelSpec, engine: ServingEngine, facts: Facts, language: Language = DEFAULT_LANGUAGE
) -> Speculative:
    """Apply the speculative rules, then check that the engine has the chosen method (worded in the language)."""
    book = load_rules()
    notes = book.speculation
    rule: Rule = first_match(book.speculative, facts)
    values = {**facts, "engine": engine.name}
    next_step, tiny = draft_warnings(model, language)
    warnings = [tiny] if tiny else []
    if rule.choice == "ngram" and "ngram" not in engine.spec_methods:
        no_ngram = notes.engine_no_ngram
        detail = {
            **values,
            "rule_reason": rule.reason_for(values, language),
            "rule_source": rule.source,
            "engine_speculation": engine.text("speculative_decoding", language),
            "engine_source": engine.source_for("speculative"),
        }
        return Speculative(
            enabled=False,
            method="none",
            rule_id=no_ngram.id,
            reason=no_ngram.reason_for(detail, language),
            source=no_ngram.source_for(detail),
            next_step=next_step,
            warnings=tuple(warnings),
        )
    if rule.choice == "ngram":
        warnings.insert(0, notes.text("measure_first", language))
        return Speculative(
            enabled=True,
            method="ngram",
            num_speculative_tokens=load_handbook().levers.speculative_decoding.speculative_tokens,
            prompt_lookup_max=notes.prompt_lookup_max,
            prompt_lookup_min=notes.prompt_lookup_min,
            rule_id=rule.id,
            reason=rule.reason_for(values, language),
            source=rule.source,
            next_step=next_step,
            warnings=tuple(warnings),
        )
    return Speculative(
        enabled=False,
        method="none",
        rule_id=rule.id,
        reason=rule.reason_for(values, language),
        source=rule.source,
        next_step=next_step if rule.id in {"spec.rag", "spec.chat"} else "",
        warnings=tuple(warnings) if rule.id != "spec.engine_has_none" else (),
    )
