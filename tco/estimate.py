"""The cost model's entry point: inputs in, every figure the page shows out."""

from pydantic import BaseModel, ConfigDict

from catalog import load_handbook
from i18n import Translate, identity
from perf.phases import PhaseSeconds
from tco.cost import Capacity, Fleet
from tco.inputs import TcoInputs
from tco.levers import LeverChain, lever_chain
from tco.sensitivity import CurvePoint, SensitivityBar, sensitivity, throughput_curve
from tco.tokens import TokensByKind, tokens_by_kind


class TcoResult(BaseModel):
    """The estimate for one scenario."""

    model_config = ConfigDict(frozen=True)

    inputs: TcoInputs
    capacity: Capacity
    fleet: Fleet
    levers: LeverChain
    sensitivity: list[SensitivityBar]
    curve: list[CurvePoint]
    notes: list[str]
    tokens: TokensByKind  # cost per million input, cached-input, output and blended tokens


def _notes(inputs: TcoInputs, cap: Capacity, fleet: Fleet, tr: Translate) -> list[str]:
    slo = load_handbook().slo
    notes = []
    if cap.output_tok_s_per_gpu < slo.min_output_tok_s_per_gpu:
        notes.append(
            tr(
                "{tok_s} output tok/s per GPU is below the handbook's economic floor of {floor} tok/s per card (Q3): "
                "check batching and the engine's settings."
            ).format(tok_s=f"{cap.output_tok_s_per_gpu:,.0f}", floor=f"{slo.min_output_tok_s_per_gpu:,.0f}")
        )
    if fleet.utilization_at_average is not None and fleet.utilization_at_average < 0.3:
        notes.append(
            tr(
                "At average traffic the fleet is {busy} busy: idle capacity makes each request cost more than at "
                "full load. Autoscaling or a lower peak ratio would close the gap."
            ).format(busy=f"{fleet.utilization_at_average:.0%}")
        )
    if inputs.speculative and inputs.acceptance_pct < inputs.break_even_acceptance_pct:
        notes.append(
            tr(
                "Speculative decoding at {accept}% acceptance is below the break-even of {even}%: it slows serving "
                "down (handbook 4.4)."
            ).format(accept=f"{inputs.acceptance_pct:g}", even=f"{inputs.break_even_acceptance_pct:g}")
        )
    return notes


def estimate(inputs: TcoInputs, tr: Translate = identity, phases: PhaseSeconds | None = None) -> TcoResult:
    """Price one scenario: capacity, fleet, the lever chain, the sensitivity and the throughput curve.

    `tr` words the texts (lever labels and effects, notes) in the page's language; `phases` is the estimator's split
    of a request's GPU time (tco.token_split.phases_for), without which the tokens by kind use the prefill share.
    """
    chain = lever_chain(inputs, tr)
    return TcoResult(
        inputs=inputs,
        capacity=chain.baseline,
        fleet=chain.baseline_fleet,
        levers=chain,
        sensitivity=sensitivity(inputs),
        curve=throughput_curve(inputs),
        notes=_notes(inputs, chain.baseline, chain.baseline_fleet, tr),
        tokens=tokens_by_kind(inputs, chain.baseline, chain.baseline_fleet, phases),
    )
