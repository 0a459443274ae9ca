"""Plotly figures of a cost estimate (plain functions: result in, figure out; the theme comes from the page)."""

import plotly.graph_objects as go

from i18n import Language, Translate, identity
from tco.estimate import TcoResult
from tco.money import format_money

_MARGIN = {"l": 10, "r": 10, "t": 50, "b": 10}


def lever_waterfall(result: TcoResult, tr: Translate = identity, language: Language = "en") -> go.Figure:
    """Cost per request from the baseline through each enabled lever to the optimized figure."""
    currency = result.inputs.currency
    chain = result.levers
    steps = chain.enabled_steps
    labels = [tr("Baseline"), *[s.label for s in steps], tr("Optimized")]
    values = [
        chain.baseline.cost_per_request,
        *[-s.saving_per_request for s in steps],
        chain.optimized.cost_per_request,
    ]
    texts = [
        format_money(chain.baseline.cost_per_request, currency, language=language),
        *[
            f"−{format_money(s.saving_per_request, currency, language=language)}"
            if s.saving_per_request >= 0
            else f"+{format_money(-s.saving_per_request, currency, language=language)}"
            for s in steps
        ],
        format_money(chain.optimized.cost_per_request, currency, language=language),
    ]
    figure = go.Figure(
        go.Waterfall(
            x=labels,
            y=values,
            measure=["absolute", *["relative"] * len(steps), "total"],
            text=texts,
            textposition="outside",
            connector={"line": {"dash": "dot"}},
        )
    )
    figure.update_layout(
        title=tr("Cost per request, lever by lever ({currency})").format(currency=currency),
        margin=_MARGIN,
        yaxis_title=tr("{currency} per request").format(currency=currency),
        showlegend=False,
    )
    return figure


def sensitivity_tornado(result: TcoResult, tr: Translate = identity, language: Language = "en") -> go.Figure:
    """Each input at −20% and +20%: how far the effective cost per request moves."""
    currency = result.inputs.currency
    bars = list(reversed(result.sensitivity))
    base = bars[0].base_cost if bars else 0.0
    labels = [tr(b.label) for b in bars]
    figure = go.Figure()
    figure.add_bar(
        y=labels,
        x=[b.cost_low - base for b in bars],
        base=base,
        orientation="h",
        name=tr("input −20%"),
        customdata=[format_money(b.cost_low, currency, language=language) for b in bars],
        hovertemplate="%{y} −20%%: %{customdata}<extra></extra>",
    )
    figure.add_bar(
        y=labels,
        x=[b.cost_high - base for b in bars],
        base=base,
        orientation="h",
        name=tr("input +20%"),
        customdata=[format_money(b.cost_high, currency, language=language) for b in bars],
        hovertemplate="%{y} +20%%: %{customdata}<extra></extra>",
    )
    figure.add_vline(x=base, line_dash="dot")
    figure.update_layout(
        title=tr("What moves the effective cost per request (each input ±20%)"),
        barmode="overlay",
        margin=_MARGIN,
        xaxis_title=tr("{currency} per request").format(currency=currency),
        legend={"orientation": "h", "y": -0.2},
    )
    return figure


def cost_vs_throughput(result: TcoResult, floor_tok_s_per_gpu: float, tr: Translate = identity) -> go.Figure:
    """Cost per request against throughput, with the entered point and the handbook's economic floor."""
    currency = result.inputs.currency
    points = result.curve
    figure = go.Figure()
    figure.add_scatter(
        x=[p.output_tok_s for p in points],
        y=[p.cost_per_request for p in points],
        mode="lines+markers",
        name=tr("at full load"),
    )
    if any(p.effective_cost_per_request is not None for p in points):
        figure.add_scatter(
            x=[p.output_tok_s for p in points],
            y=[p.effective_cost_per_request for p in points],
            mode="lines",
            line={"dash": "dash"},
            name=tr("at your traffic (idle paid for)"),
        )
    figure.add_scatter(
        x=[result.inputs.output_tok_s_per_replica],
        y=[result.capacity.cost_per_request],
        mode="markers",
        marker={"size": 14, "symbol": "diamond"},
        name=tr("your scenario"),
    )
    figure.add_vline(
        x=floor_tok_s_per_gpu * result.inputs.gpus_per_replica,
        line_dash="dot",
        annotation_text=tr("economic floor: {floor} tok/s per GPU (handbook Q3)").format(
            floor=f"{floor_tok_s_per_gpu:g}"
        ),
    )
    figure.update_layout(
        title=tr("Cost per request against throughput"),
        margin=_MARGIN,
        xaxis_title=tr("output tok/s per replica"),
        yaxis_title=tr("{currency} per request").format(currency=currency),
        legend={"orientation": "h", "y": -0.2},
    )
    return figure
