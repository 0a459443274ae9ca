"""Plotly figures and tables of probe runs (plain functions: runs in, figure out; the theme comes from the page)."""

import html
from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from i18n import Translate, identity
from probes.models import LevelResult, RunResult
from probes.wording import note_text

_MARGIN = {"l": 10, "r": 10, "t": 60, "b": 10}
PALETTE = ("#2563eb", "#f97316", "#16a34a", "#dc2626", "#9333ea", "#0891b2", "#ca8a04", "#db2777")
SLO_COLOR = "#dc2626"
_PERCENTILE_DASH = {"p50": "solid", "p90": "dot", "p99": "dash"}


def plot_text(text: str) -> str:
    """User text made inert for plotly, whose labels read a little HTML (<b>, <a href>, <br>)."""
    return html.escape(text, quote=False)


def run_label(result: RunResult) -> str:
    """A short name for a run: its label (or model), start time and id."""
    name = result.settings.label or result.model
    when = f"{result.started_at:%Y-%m-%d %H:%M}"
    short = (result.run_id or "")[:8]
    return " · ".join(part for part in (name, when, short) if part)


def by_rate(runs: Sequence[RunResult]) -> bool:
    """True when every level shown is a request-rate level: the x axis is then the rate, not the concurrency."""
    levels = [lv for run in runs for lv in run.levels]
    return bool(levels) and all(lv.request_rate_rps is not None for lv in levels)


def _x(level: LevelResult, rate: bool) -> float:
    return level.request_rate_rps or 0.0 if rate else level.concurrency


def _at(rate: bool, tr: Translate) -> str:
    """Where a point sits, for hover texts (plotly fills in %{x})."""
    return tr("{rate} req/s").format(rate="%{x}") if rate else tr("concurrency {level}").format(level="%{x}")


def _levels(result: RunResult, rate: bool = False) -> list[LevelResult]:
    return sorted((lv for lv in result.levels if lv.completed), key=lambda lv: _x(lv, rate))


def _load_axis(figure: go.Figure, runs: Sequence[RunResult], tr: Translate = identity, **where: int) -> None:
    rate = by_rate(runs)
    ticks = sorted({_x(lv, rate) for run in runs for lv in run.levels})
    log = bool(ticks) and ticks[0] > 0 and ticks[-1] / ticks[0] >= 8 and (rate or ticks[0] >= 1)
    title = tr("request rate (req/s)") if rate else tr("concurrency")
    figure.update_xaxes(title_text=title, type="log" if log else "linear", tickvals=ticks or None, **where)


def latency_figure(runs: Sequence[RunResult], tr: Translate = identity) -> go.Figure:
    """TTFT and TPOT percentiles against concurrency, with the SLO targets as dashed lines.

    One run: p50, p90 and p99. Several runs (compared): p50 solid and p99 dashed, one colour per run.
    """
    single = len(runs) == 1
    percentiles = ("p50", "p90", "p99") if single else ("p50", "p99")
    titles = (tr("Time to first token (TTFT)"), tr("Time per output token (TPOT)"))
    figure = make_subplots(rows=1, cols=2, subplot_titles=titles, horizontal_spacing=0.08)
    rate = by_rate(runs)
    at = _at(rate, tr)
    for number, run in enumerate(runs):
        levels = _levels(run, rate)
        x = [_x(lv, rate) for lv in levels]
        name = plot_text(run_label(run))
        for col, metric in ((1, "ttft_ms"), (2, "tpot_ms")):
            for pct in percentiles:
                color = PALETTE[(percentiles.index(pct) if single else number) % len(PALETTE)]
                figure.add_scatter(
                    x=x,
                    y=[getattr(getattr(lv, metric), pct) for lv in levels],
                    row=1,
                    col=col,
                    mode="lines+markers",
                    line={"color": color, "dash": _PERCENTILE_DASH[pct]},
                    name=pct if single else f"{name} {pct}",
                    legendgroup=pct if single else f"run{number}",
                    showlegend=col == 1,
                    meta=metric,
                    hovertemplate=tr("{metric} {percentile}: {value} ms at {load}").format(
                        metric=metric.removesuffix("_ms").upper(), percentile=pct, value="%{y:.1f}", load=at
                    )
                    + "<extra></extra>",
                )
    if runs:
        slo = runs[0].settings.slo
        for col, value, text in (
            (1, slo.ttft_p50_ms, "SLO TTFT p50"),
            (1, slo.ttft_p99_ms, "SLO TTFT p99"),
            (2, slo.tpot_p50_ms, "SLO TPOT p50"),
        ):
            figure.add_hline(
                y=value,
                row=1,
                col=col,
                line={"color": SLO_COLOR, "dash": "dash", "width": 1},
                annotation_text=tr("{target} {value} ms").format(target=text, value=f"{value:g}"),
                annotation_position="top left",
                annotation_font_color=SLO_COLOR,
            )
    _load_axis(figure, runs, tr)
    figure.update_yaxes(title_text="ms", rangemode="tozero")
    figure.update_layout(
        title=tr("Latency against request rate") if rate else tr("Latency against concurrency"),
        margin=_MARGIN,
        legend={"orientation": "h", "y": -0.2},
    )
    return figure


def throughput_figure(runs: Sequence[RunResult], tr: Translate = identity) -> go.Figure:
    """Output tokens/s against concurrency; filled markers met the SLO, a star marks the highest within SLO."""
    figure = go.Figure()
    rate = by_rate(runs)
    at = _at(rate, tr)
    for number, run in enumerate(runs):
        levels = _levels(run, rate)
        color = PALETTE[number % len(PALETTE)]
        name = tr("output tok/s") if len(runs) == 1 else plot_text(run_label(run))
        figure.add_scatter(
            x=[_x(lv, rate) for lv in levels],
            y=[lv.output_tok_s for lv in levels],
            mode="lines+markers",
            name=name,
            line={"color": color},
            legendgroup=f"run{number}",
            marker={"size": 10, "symbol": ["circle" if lv.slo.met else "circle-open" for lv in levels]},
            customdata=[[lv.req_s or 0.0, tr("met") if lv.slo.met else tr("missed")] for lv in levels],
            hovertemplate=tr("{tok_s} output tok/s at {load}<br>{req_s} req/s served, SLO {met}").format(
                tok_s="%{y:,.1f}", load=at, req_s="%{customdata[0]:.2f}", met="%{customdata[1]}"
            )
            + "<extra></extra>",
        )
        if rate:
            best = next((lv for lv in levels if lv.request_rate_rps == run.best_request_rate_within_slo_rps), None)
        else:
            best = next((lv for lv in levels if lv.concurrency == run.best_concurrency_within_slo), None)
        if best is not None and best.output_tok_s is not None:
            figure.add_scatter(
                x=[_x(best, rate)],
                y=[best.output_tok_s],
                mode="markers",
                legendgroup=f"run{number}",
                marker={"symbol": "star", "size": 18, "color": color, "line": {"width": 1, "color": "white"}},
                name=tr("highest within SLO") if len(runs) == 1 else tr("{run}: highest within SLO").format(run=name),
                hovertemplate=(
                    tr("highest rate within SLO: {x}") if rate else tr("highest concurrency within SLO: {x}")
                ).format(x="%{x}")
                + "<extra></extra>",
            )
    _load_axis(figure, runs, tr)
    figure.update_yaxes(title_text=tr("output tokens/s"), rangemode="tozero")
    figure.update_layout(
        title=tr("Throughput against request rate") if rate else tr("Throughput against concurrency"),
        margin=_MARGIN,
        legend={"orientation": "h", "y": -0.2},
    )
    return figure


def timeline_figure(result: RunResult, tr: Translate = identity) -> go.Figure:
    """A trace replay over time: each request at its send time (s from the level's start), its TTFT and E2E (ms).

    Failed requests are marked on the x axis.
    """
    figure = go.Figure()
    done = sorted((s for s in result.samples if s.ok and s.e2e_ms is not None), key=lambda s: s.start_s)
    failed = [s for s in result.samples if not s.ok]
    for name, values, color in (
        ("E2E", [s.e2e_ms for s in done], PALETTE[1]),
        ("TTFT", [s.ttft_ms for s in done], PALETTE[0]),
    ):
        figure.add_scatter(
            x=[s.start_s for s in done],
            y=values,
            mode="markers",
            name=name,
            marker={"size": 5, "color": color},
            customdata=[[s.trace_line if s.trace_line is not None else "—"] for s in done],
            hovertemplate=tr("sent at {time} s (trace line {line})<br>{metric} {value} ms").format(
                time="%{x:.3f}", line="%{customdata[0]}", metric=name, value="%{y:,.0f}"
            )
            + "<extra></extra>",
        )
    if failed:
        figure.add_scatter(
            x=[s.start_s for s in failed],
            y=[0.0] * len(failed),
            mode="markers",
            name=tr("failed"),
            marker={"symbol": "x", "size": 8, "color": SLO_COLOR},
            customdata=[[s.error_kind or "", s.trace_line if s.trace_line is not None else "—"] for s in failed],
            hovertemplate=tr("sent at {time} s (trace line {line}): {error}").format(
                time="%{x:.3f}", line="%{customdata[1]}", error="%{customdata[0]}"
            )
            + "<extra></extra>",
        )
    figure.update_xaxes(title_text=tr("arrival (s from the replay's start)"), rangemode="tozero")
    figure.update_yaxes(title_text="ms", rangemode="tozero")
    figure.update_layout(
        title=tr("Trace replay: TTFT and E2E of each request over time"),
        margin=_MARGIN,
        legend={"orientation": "h", "y": -0.2},
    )
    return figure


def turns_figure(result: RunResult, tr: Translate = identity) -> go.Figure:
    """Sessions: TTFT p50 and p99 per turn index (bars), and the mean prompt each turn sent (line, right axis)."""
    figure = go.Figure()
    turns = [t for level in result.levels for t in level.turns or []]
    x = [t.turn for t in turns]
    for name, values, color in (
        ("TTFT p50", [t.ttft_ms_p50 for t in turns], PALETTE[0]),
        ("TTFT p99", [t.ttft_ms_p99 for t in turns], PALETTE[1]),
    ):
        figure.add_bar(
            x=x,
            y=values,
            name=name,
            marker_color=color,
            hovertemplate=tr("turn {turn}: {metric} {value} ms").format(turn="%{x}", metric=name, value="%{y:,.0f}")
            + "<extra></extra>",
        )
    figure.add_scatter(
        x=x,
        y=[t.input_tokens_mean for t in turns],
        name=tr("prompt tokens (mean)"),
        yaxis="y2",
        mode="lines+markers",
        line={"color": PALETTE[2]},
        hovertemplate=tr("turn {turn}: {value} prompt tokens").format(turn="%{x}", value="%{y:,.0f}")
        + "<extra></extra>",
    )
    figure.update_layout(
        title=tr("Sessions: time to first token by turn, as the history grows"),
        barmode="group",
        xaxis={"title": tr("turn"), "dtick": 1},
        yaxis={"title": tr("TTFT ms"), "rangemode": "tozero"},
        yaxis2={"title": tr("prompt tokens"), "overlaying": "y", "side": "right", "rangemode": "tozero"},
        margin=_MARGIN,
        legend={"orientation": "h", "y": -0.2},
    )
    return figure


def turn_rows(result: RunResult, tr: Translate = identity) -> list[dict[str, Any]]:
    """Sessions: one row per turn index, ready for a table (headers worded by tr)."""
    return [
        {
            tr("turn"): t.turn,
            tr("ok"): t.count,
            tr("failed"): t.failed,
            tr("TTFT p50 ms"): _num(t.ttft_ms_p50),
            tr("TTFT p99 ms"): _num(t.ttft_ms_p99),
            tr("TPOT p50 ms"): _num(t.tpot_ms_p50, 2),
            tr("E2E p50 ms"): _num(t.e2e_ms_p50),
            tr("prompt tokens (mean)"): _num(t.input_tokens_mean, 0),
        }
        for level in result.levels
        for t in level.turns or []
    ]


def _num(value: float | None, digits: int = 1) -> float | None:
    return None if value is None else round(value, digits)


def level_rows(result: RunResult, tr: Translate = identity) -> list[dict[str, Any]]:
    """One row per level, ready for a table: counts, throughput, latency percentiles, SLO (headers worded by tr)."""
    rows = []
    for lv in sorted(result.levels, key=lambda lv: lv.index):
        rows.append(
            {
                tr("concurrency"): lv.concurrency,
                tr("request rate req/s"): lv.request_rate_rps,
                tr("requests"): lv.requests,
                tr("ok"): lv.completed,
                tr("failed"): lv.failed,
                tr("output tok/s"): _num(lv.output_tok_s),
                tr("req/s"): _num(lv.req_s, 2),
                tr("TTFT p50 ms"): _num(lv.ttft_ms.p50),
                tr("TTFT p99 ms"): _num(lv.ttft_ms.p99),
                tr("TPOT p50 ms"): _num(lv.tpot_ms.p50, 2),
                tr("TPOT p99 ms"): _num(lv.tpot_ms.p99, 2),
                tr("E2E p50 ms"): _num(lv.e2e_ms.p50),
                tr("out tokens/req"): _num(lv.output_tokens_per_request),
                tr("SLO met"): lv.slo.met,
                tr("why not"): ", ".join(note_text(violation, tr) for violation in lv.slo.violations),
                tr("errors"): ", ".join(f"{kind} × {count}" for kind, count in sorted(lv.errors.items())),
            }
        )
    return rows


def compare_rows(runs: Sequence[RunResult], tr: Translate = identity) -> list[dict[str, Any]]:
    """Runs side by side: one row per run and level (headers worded by tr)."""
    rows = []
    for run in runs:
        for row in level_rows(run, tr):
            rows.append({tr("run"): run_label(run), **row})
    return rows


def error_rows(result: RunResult, tr: Translate = identity) -> list[dict[str, Any]]:
    """Failed requests by level and kind, with the first message of each kind (headers worded by tr)."""
    found: dict[tuple[int, str], dict[str, Any]] = {}
    for sample in result.samples:
        if sample.error_kind is None or sample.level_index < 0:
            continue
        key = (sample.concurrency, str(sample.error_kind))
        row = found.setdefault(
            key,
            {
                tr("concurrency"): sample.concurrency,
                tr("error kind"): str(sample.error_kind),
                tr("requests"): 0,
                tr("example"): sample.error or "",
            },
        )
        row[tr("requests")] += 1
    return [found[k] for k in sorted(found)]
