"""The power a run's GPUs drew, on the run's time axis (seconds from its start), its levels shaded."""

import plotly.graph_objects as go

from i18n import Translate, identity
from probes.figures import PALETTE
from probes.models import RunResult

_MARGIN = {"l": 10, "r": 10, "t": 60, "b": 10}
_LEVEL_SHADES = ("rgba(37, 99, 235, 0.07)", "rgba(37, 99, 235, 0.16)")


def power_figure(result: RunResult, tr: Translate = identity) -> go.Figure:
    """Each GPU's power (W) at each read of the DCGM exporter, and the total when there are several GPUs."""
    figure = go.Figure()
    readings = [s for s in result.power if s.ok and s.power_w is not None]
    gpus = sorted({s.gpu for s in readings}, key=lambda gpu: (len(gpu), gpu))
    start = result.started_at
    for index, gpu in enumerate(gpus):
        points = [s for s in readings if s.gpu == gpu]
        figure.add_scatter(
            x=[(s.at - start).total_seconds() for s in points],
            y=[s.power_w for s in points],
            mode="lines+markers",
            name=tr("GPU {gpu}").format(gpu=gpu),
            line={"color": PALETTE[index % len(PALETTE)]},
            marker={"size": 4},
            hovertemplate=tr("{time} s: {power} W").format(time="%{x:.1f}", power="%{y:,.0f}") + "<extra></extra>",
        )
    if len(gpus) > 1:
        totals: dict[float, float] = {}
        for s in readings:
            t_s = (s.at - start).total_seconds()
            totals[t_s] = totals.get(t_s, 0.0) + (s.power_w or 0.0)
        figure.add_scatter(
            x=list(totals),
            y=list(totals.values()),
            mode="lines",
            name=tr("all GPUs"),
            line={"color": "#64748b", "dash": "dot"},
            hovertemplate=tr("{time} s: {power} W").format(time="%{x:.1f}", power="%{y:,.0f}") + "<extra></extra>",
        )
    for shade, level in enumerate(lv for lv in result.levels if lv.index >= 0):
        load = (
            tr("concurrency {level}").format(level=level.concurrency)
            if level.request_rate_rps is None
            else tr("{rate} req/s").format(rate=f"{level.request_rate_rps:g}")
        )
        figure.add_vrect(
            x0=(level.started_at - start).total_seconds(),
            x1=(level.finished_at - start).total_seconds(),
            fillcolor=_LEVEL_SHADES[shade % 2],  # neighbouring levels told apart
            line_width=0,
            annotation_text=load,
            annotation_position="top left",
        )
    figure.update_xaxes(title_text=tr("time (s from the run's start)"), rangemode="tozero")
    figure.update_yaxes(title_text="W", rangemode="tozero")
    figure.update_layout(
        title=tr("GPU power during the run (DCGM exporter)"), margin=_MARGIN, legend={"orientation": "h", "y": -0.2}
    )
    return figure
