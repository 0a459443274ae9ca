"""Tokens/s per GPU against tokens/s per user, one pool and two (a plain function: points in, figure out)."""

from collections.abc import Sequence

import plotly.graph_objects as go

from i18n import N_, Translate, identity
from perf.disagg_frontier import FrontierPoint

TOPOLOGY_NAMES = {"agg": N_("one pool (estimate)"), "disagg": N_("prefill and decode pools (estimate, extrapolated)")}


def frontier_figure(points: Sequence[FrontierPoint], tr: Translate = identity) -> go.Figure:
    """One line per topology, ordered by tokens/s per user; hover names the TPOT limit."""
    fig = go.Figure()
    for topology, name in TOPOLOGY_NAMES.items():
        mine = sorted((p for p in points if p.topology == topology), key=lambda p: p.tok_s_per_user)
        if not mine:
            continue
        fig.add_trace(
            go.Scatter(
                x=[p.tok_s_per_user for p in mine],
                y=[p.output_tok_s_per_gpu for p in mine],
                mode="lines+markers",
                name=tr(name),
                hovertext=[tr("TPOT limit {ms} ms").format(ms=f"{p.tpot_limit_ms:g}") for p in mine],
            )
        )
    fig.update_layout(
        xaxis_title=tr("tokens/s per user"),
        yaxis_title=tr("output tokens/s per GPU"),
        margin={"l": 10, "r": 10, "t": 30, "b": 10},
    )
    return fig
