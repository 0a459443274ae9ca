"""The handbook's cost levers (Q5), cheapest first: each multiplies throughput or price, and the chain is priced."""

from pydantic import BaseModel, ConfigDict

from catalog import load_handbook
from i18n import Translate, identity
from tco.cost import Capacity, Fleet, capacity_of, fleet_of
from tco.inputs import TcoInputs
from tco.lever_basis import WHAT_IF_LEVERS, already_in


class LeverStep(BaseModel):
    """One lever applied on top of the ones before it."""

    model_config = ConfigDict(frozen=True)

    key: str
    label: str
    enabled: bool
    effect: str
    source: str
    throughput_factor: float
    price_factor: float
    output_tok_s_after: float
    price_per_gpu_hour_after: float
    cost_per_request_after: float
    saving_per_request: float
    replicas_after: int
    fleet_cost_per_year_after: float
    saving_per_year: float
    assumed: bool = False  # a what-if about the traffic or the market (prompt reuse, spot prices)
    no_gain: bool = False  # already inside the estimate or the run the throughput came from


class LeverChain(BaseModel):
    """Baseline, every lever in order (enabled or not), and the optimized end state."""

    model_config = ConfigDict(frozen=True)

    baseline: Capacity
    baseline_fleet: Fleet
    steps: list[LeverStep]
    optimized: Capacity
    optimized_fleet: Fleet

    @property
    def enabled_steps(self) -> list[LeverStep]:
        return [s for s in self.steps if s.enabled]

    @property
    def saving_per_year(self) -> float:
        return self.baseline_fleet.fleet_cost_per_year - self.optimized_fleet.fleet_cost_per_year

    @property
    def what_if(self) -> bool:
        """An enabled lever is an assumption (prompt reuse, spot prices): the optimized figures are a what-if."""
        return any(s.assumed for s in self.enabled_steps)


def expected_tokens_per_step(acceptance: float, speculative_tokens: int) -> float:
    """Tokens a verification step yields with k drafted tokens at per-token acceptance a: (1 - a^(k+1)) / (1 - a)."""
    if acceptance >= 1:
        return float(speculative_tokens + 1)
    return (1 - acceptance ** (speculative_tokens + 1)) / (1 - acceptance)


def speculative_throughput_factor(acceptance: float, speculative_tokens: int, break_even: float) -> float:
    """Throughput factor of speculative decoding, calibrated so it is 1.0 at the break-even acceptance.

    A step that verifies k drafted tokens costs what the break-even acceptance yields (handbook: below 60% it
    slows serving down), so the factor is E(a, k) / E(break_even, k): above 1 when drafts are accepted more often.
    """
    return expected_tokens_per_step(acceptance, speculative_tokens) / expected_tokens_per_step(
        break_even, speculative_tokens
    )


def prefix_caching_throughput_factor(prompt_reuse: float, prefill_time_share: float) -> float:
    """Reused prompt tokens skip prefill: GPU time per request falls by reuse x prefill share."""
    return 1 / (1 - prompt_reuse * prefill_time_share)


def _lever_specs(inputs: TcoInputs, tr: Translate = identity) -> list[tuple[str, str, bool, float, float, str, str]]:
    """(key, label, enabled, throughput factor, price factor, effect, source) in the handbook's order."""
    levers = load_handbook().levers
    accept, even = inputs.acceptance_pct / 100, inputs.break_even_acceptance_pct / 100
    spec = speculative_throughput_factor(accept, inputs.speculative_tokens, even)
    prefix = prefix_caching_throughput_factor(inputs.prompt_reuse_pct / 100, inputs.prefill_time_pct / 100)
    return [
        (
            "quant",
            tr("Quantization (AWQ / FP8)"),
            inputs.quantization,
            1 + inputs.quant_throughput_gain_pct / 100,
            1.0,
            tr("throughput +{pct}%").format(pct=f"{inputs.quant_throughput_gain_pct:g}"),
            levers.quantization.source,
        ),
        (
            "prefix",
            tr("Prefix caching"),
            inputs.prefix_caching,
            prefix,
            1.0,
            tr("{reuse}% of each prompt reused; prefill is {prefill}% of GPU time → throughput ×{factor}").format(
                reuse=f"{inputs.prompt_reuse_pct:g}", prefill=f"{inputs.prefill_time_pct:g}", factor=f"{prefix:.2f}"
            ),
            levers.prefix_caching.source,
        ),
        (
            "spec",
            tr("Speculative decoding"),
            inputs.speculative,
            spec,
            1.0,
            tr("{accept}% acceptance, {tokens} tokens, break-even {even}% → throughput ×{factor}").format(
                accept=f"{inputs.acceptance_pct:g}",
                tokens=inputs.speculative_tokens,
                even=f"{inputs.break_even_acceptance_pct:g}",
                factor=f"{spec:.2f}",
            ),
            levers.speculative_decoding.source,
        ),
        (
            "distill",
            tr("Distillation (e.g. 7B → 3B)"),
            inputs.distillation,
            1 / (1 - inputs.distill_cost_cut_pct / 100),
            1.0,
            tr("cost −{pct}% (needs training and evaluation)").format(pct=f"{inputs.distill_cost_cut_pct:g}"),
            levers.distillation.source,
        ),
        (
            "spot",
            tr("Spot GPUs"),
            inputs.spot,
            1.0,
            1 - inputs.spot_price_cut_pct / 100,
            tr("price −{pct}% (needs graceful preemption)").format(pct=f"{inputs.spot_price_cut_pct:g}"),
            levers.spot.source,
        ),
    ]


def lever_chain(inputs: TcoInputs, tr: Translate = identity) -> LeverChain:
    """Apply the enabled levers in order; every step is priced per request and per year at the entered traffic."""
    base_cap = capacity_of(inputs)
    base_fleet = fleet_of(inputs, base_cap)
    tok_s, price = inputs.output_tok_s_per_replica, inputs.price_per_gpu_hour
    cap, fl = base_cap, base_fleet
    steps: list[LeverStep] = []
    inside = already_in(inputs, tr)
    for key, label, enabled, t_factor, p_factor, effect, source in _lever_specs(inputs, tr):
        before_cap, before_fleet = cap, fl
        if key in inside:  # the throughput already has it: no gain counted twice
            t_factor, p_factor, effect = 1.0, 1.0, inside[key]
        if enabled:
            tok_s, price = tok_s * t_factor, price * p_factor
            cap = capacity_of(inputs, output_tok_s=tok_s, price_per_gpu_hour=price)
            fl = fleet_of(inputs, cap)
        steps.append(
            LeverStep(
                key=key,
                label=label,
                enabled=enabled,
                effect=effect,
                source=source,
                throughput_factor=t_factor,
                price_factor=p_factor,
                output_tok_s_after=tok_s,
                price_per_gpu_hour_after=price,
                cost_per_request_after=cap.cost_per_request,
                saving_per_request=before_cap.cost_per_request - cap.cost_per_request,
                replicas_after=fl.replicas,
                fleet_cost_per_year_after=fl.fleet_cost_per_year,
                saving_per_year=before_fleet.fleet_cost_per_year - fl.fleet_cost_per_year,
                assumed=key in WHAT_IF_LEVERS,
                no_gain=key in inside,
            )
        )
    return LeverChain(baseline=base_cap, baseline_fleet=base_fleet, steps=steps, optimized=cap, optimized_fleet=fl)
