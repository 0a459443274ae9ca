"""Property tests: any query string gives a valid model, and every rejected value is named."""

import contextlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from probes.form import ProbeForm, RunsView
from selector import AdviceRequest, advise
from tco import TcoInputs, estimate
from tco.compare_inputs import CompareInputs
from ui.params import aliases, field_label, to_params, validate_params

TCO_PARAMS = sorted(aliases(TcoInputs).values())
PAGE_MODELS = [TcoInputs, AdviceRequest, CompareInputs, ProbeForm, RunsView]

values = st.one_of(
    st.text(max_size=12),
    st.integers(min_value=-(10**12), max_value=10**12).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["", "0", "-1", "1e309", "nan", "true", "yes", "CNY", "USD", "h100", "custom", "1,2"]),
)
queries = st.dictionaries(st.sampled_from([*TCO_PARAMS, "s", "junk"]), values, max_size=len(TCO_PARAMS))


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(queries)
def test_any_query_gives_a_model_and_names_each_rejected_parameter(query: dict[str, str]) -> None:
    model, messages, rejected = validate_params(TcoInputs, query)
    assert isinstance(model, TcoInputs)
    for alias in rejected:
        assert any(f"`{alias}`" in m for m in messages) or any("defaults" in m for m in messages)
    # Whatever survived validation is priced without an exception, and its link reproduces it.
    estimate(model)
    assert validate_params(TcoInputs, to_params(model))[0] == model


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from(TCO_PARAMS), values, max_size=6))
def test_form_values_are_accepted_or_named(form: dict[str, str]) -> None:
    model, messages, rejected = validate_params(TcoInputs, form, source="form")
    assert len(messages) >= len(rejected) and isinstance(model, TcoInputs)
    for alias, value in rejected.items():
        label = field_label(TcoInputs, alias)
        assert any(m.startswith(label) and "you entered" in m for m in messages), (alias, value, messages)


@pytest.mark.parametrize("model_cls", PAGE_MODELS, ids=lambda m: m.__name__)
def test_every_page_model_survives_any_query(model_cls: type) -> None:
    params = sorted(aliases(model_cls).values())
    query_strategy = st.dictionaries(st.sampled_from([*params, "junk"]), values, max_size=len(params))

    @settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow], deadline=None)
    @given(query_strategy)
    def check(query: dict[str, str]) -> None:
        model, messages, rejected = validate_params(model_cls, query)
        assert isinstance(model, model_cls)
        for alias in rejected:
            assert any(f"`{alias}`" in m for m in messages) or any("defaults" in m for m in messages)
        assert validate_params(model_cls, to_params(model))[0] == model

    check()


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.dictionaries(st.sampled_from(sorted(aliases(AdviceRequest).values())), values, max_size=8))
def test_advice_for_any_surviving_query_never_raises_unexpectedly(query: dict[str, str]) -> None:
    from selector import SelectorError

    model = validate_params(AdviceRequest, query)[0]
    with contextlib.suppress(SelectorError):  # the one documented refusal (KV heads that do not divide heads)
        advise(model)


def test_two_complaints_about_one_value_drop_only_that_value() -> None:
    from typing import Annotated

    from pydantic import BaseModel, ConfigDict, Field

    class Levels(BaseModel):
        model_config = ConfigDict(frozen=True)
        levels: Annotated[tuple[int, ...], Field(min_length=2)] = (1, 2)
        name: str = "x"

    model, messages, rejected = validate_params(Levels, {"levels": "abc,def", "name": "kept"})
    assert model.name == "kept" and model.levels == (1, 2)
    assert list(rejected) == ["levels"] and len(messages) == 1
