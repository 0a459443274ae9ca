"""The comparison's figure (a plain function: ranking in, figure out; the theme comes from the page)."""

import plotly.graph_objects as go

from tco.money import format_money
from tco.ranking import LatencyAxis, RankedOption, Ranking, pareto_front

_MARGIN = {"l": 10, "r": 10, "t": 50, "b": 10}
_AXIS_TITLE = {LatencyAxis.TPOT: "TPOT p50 (ms, estimate)", LatencyAxis.TTFT: "TTFT p50 (ms, estimate)"}
FRONT_NAME = "Pareto front (cheapest for its latency)"
MISSES_NAME = "misses the SLO (at concurrency 1)"


def _hover(option: RankedOption, currency: str) -> str:
    return (
        f"#{option.rank} {option.label}<br>"
        f"{format_money(option.cost_per_million_output_tokens, currency)} per 1M output tokens<br>"
        f"fleet {format_money(option.fleet_cost_per_month, currency, compact=True)}/month, "
        f"{option.total_gpus} GPUs<br>"
        f"TTFT p50 {option.ttft_p50_ms:,.0f} ms · TPOT p50 {option.tpot_p50_ms:,.1f} ms · "
        f"{option.output_tok_s:,.0f} tok/s per replica at concurrency {option.concurrency}<br>"
        f"estimate, band {option.band_low:.2f}–{option.band_high:.2f}×, basis {option.basis_kind}"
    )


def front_options(ranking: Ranking, axis: LatencyAxis) -> list[RankedOption]:
    """The SLO-meeting options on the cost/latency Pareto front, by latency."""
    meeting = list(ranking.meeting)
    points = [(o.latency_ms(axis), o.cost_per_million_output_tokens) for o in meeting]
    return [meeting[i] for i in pareto_front(points)]


def cost_latency_figure(ranking: Ranking, axis: LatencyAxis) -> go.Figure:
    """Cost per million output tokens against latency, one point per option (a colour per engine).

    The Pareto front of the SLO-meeting options is drawn as a line with open diamonds; options that miss the SLO
    are crosses. Hovering a point names the option, its costs, latencies, band and basis.
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
            text=[_hover(o, currency) for o in options],
            hovertemplate="%{text}<extra></extra>",
        )
    front = front_options(ranking, axis)
    if front:
        figure.add_scatter(
            x=[o.latency_ms(axis) for o in front],
            y=[o.cost_per_million_output_tokens for o in front],
            mode="lines+markers",
            name=FRONT_NAME,
            line={"shape": "hv", "width": 2},
            marker={"size": 12, "symbol": "diamond-open", "line": {"width": 2}},
            text=[_hover(o, currency) for o in front],
            hovertemplate="%{text}<extra>Pareto front</extra>",
        )
    misses = [o for o in ranking.options if not o.meets_slo]
    if misses:
        figure.add_scatter(
            x=[o.latency_ms(axis) for o in misses],
            y=[o.cost_per_million_output_tokens for o in misses],
            mode="markers",
            name=MISSES_NAME,
            marker={"size": 8, "symbol": "x", "opacity": 0.6},
            text=[_hover(o, currency) for o in misses],
            hovertemplate="%{text}<extra>misses the SLO</extra>",
        )
    figure.update_layout(
        title=f"Cost against latency: {len(ranking.options)} options (estimates)",
        margin=_MARGIN,
        xaxis_title=_AXIS_TITLE[axis],
        yaxis_title=f"{currency} per 1M output tokens",
        yaxis_type="log",
        legend={"orientation": "h", "y": -0.2},
    )
    return figure
