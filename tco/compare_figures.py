"""The comparison's figure (a plain function: ranking in, figure out; the theme comes from the page)."""

import plotly.graph_objects as go

from i18n import N_, Language, Translate, identity
from tco.compare_inputs import LatencyAxis
from tco.money import format_money
from tco.options import RankedOption
from tco.ranking import Ranking, pareto_front

_MARGIN = {"l": 10, "r": 10, "t": 50, "b": 10}
_AXIS_TITLE = {LatencyAxis.TPOT: N_("TPOT p50 (ms, estimate)"), LatencyAxis.TTFT: N_("TTFT p50 (ms, estimate)")}
FRONT_NAME = N_("Pareto front (cheapest for its latency)")
MISSES_NAME = N_("misses the SLO (at concurrency 1)")


def _hover(option: RankedOption, currency: str, tr: Translate, language: Language) -> str:
    lines = [
        f"#{option.rank} {option.worded_label(tr)}",
        tr("{cost} per 1M output tokens").format(
            cost=format_money(option.cost_per_million_output_tokens, currency, language=language)
        ),
        tr("fleet {cost}/month, {gpus} GPUs").format(
            cost=format_money(option.fleet_cost_per_month, currency, compact=True, language=language),
            gpus=option.total_gpus,
        ),
        tr("TTFT p50 {ttft} ms · TPOT p50 {tpot} ms · {tps} tok/s per replica at concurrency {concurrency}").format(
            ttft=f"{option.ttft_p50_ms:,.0f}",
            tpot=f"{option.tpot_p50_ms:,.1f}",
            tps=f"{option.output_tok_s:,.0f}",
            concurrency=option.concurrency,
        ),
        tr("estimate, band {low}–{high}×, basis {basis}").format(
            low=f"{option.band_low:.2f}", high=f"{option.band_high:.2f}", basis=option.basis_kind_text(tr)
        ),
    ]
    return "<br>".join(lines)


def front_options(ranking: Ranking, axis: LatencyAxis) -> list[RankedOption]:
    """The SLO-meeting options on the cost/latency Pareto front, by latency."""
    meeting = list(ranking.meeting)
    points = [(o.latency_ms(axis), o.cost_per_million_output_tokens) for o in meeting]
    return [meeting[i] for i in pareto_front(points)]


def cost_latency_figure(
    ranking: Ranking, axis: LatencyAxis, tr: Translate = identity, language: Language = "en"
) -> go.Figure:
    """Cost per million output tokens against latency, one point per option (a colour per engine).

    The Pareto front of the SLO-meeting options is drawn as a line with open diamonds; options that miss the SLO
    are crosses. Hovering a point names the option, its costs, latencies, band and basis. Texts are worded by `tr`
    and amounts written for `language`.
    """
    currency = ranking.inputs.currency.value
    figure = go.Figure()
    engines: dict[str, list[RankedOption]] = {}
    for option in ranking.meeting:
        engines.setdefault(option.engine_name, []).append(option)
    for name, options in engines.items():
        figure.add_scatter(
            x=[o.latency_ms(axis) for o in options],
            y=[o.cost_per_million_output_tokens for o in options],
            mode="markers",
            name=name,
            marker={"size": 8, "opacity": 0.7},
            text=[_hover(o, currency, tr, language) for o in options],
            hovertemplate="%{text}<extra></extra>",
        )
    front = front_options(ranking, axis)
    if front:
        figure.add_scatter(
            x=[o.latency_ms(axis) for o in front],
            y=[o.cost_per_million_output_tokens for o in front],
            mode="lines+markers",
            name=tr(FRONT_NAME),
            line={"shape": "hv", "width": 2},
            marker={"size": 12, "symbol": "diamond-open", "line": {"width": 2}},
            text=[_hover(o, currency, tr, language) for o in front],
            hovertemplate="%{text}<extra>" + tr("Pareto front") + "</extra>",
        )
    misses = [o for o in ranking.options if not o.meets_slo]
    if misses:
        figure.add_scatter(
            x=[o.latency_ms(axis) for o in misses],
            y=[o.cost_per_million_output_tokens for o in misses],
            mode="markers",
            name=tr(MISSES_NAME),
            marker={"size": 8, "symbol": "x", "opacity": 0.6},
            text=[_hover(o, currency, tr, language) for o in misses],
            hovertemplate="%{text}<extra>" + tr("misses the SLO") + "</extra>",
        )
    figure.update_layout(
        title=tr("Cost against latency: {count} options (estimates)").format(count=len(ranking.options)),
        margin=_MARGIN,
        xaxis_title=tr(_AXIS_TITLE[axis]),
        yaxis_title=tr("{currency} per 1M output tokens").format(currency=currency),
        yaxis_type="log",
        legend={"orientation": "h", "y": -0.2},
    )
    return figure
