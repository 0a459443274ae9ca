"""Plotly figures of an advice (plain functions: advice in, figure out; the theme comes from the page)."""

import plotly.graph_objects as go

from i18n import N_, Translate, identity
from selector.advice import Advice

SEGMENTS = (
    N_("Weights"),
    N_("KV cache (target)"),
    N_("Free for more KV"),
    N_("Reserved (runtime, headroom)"),
    N_("KV shortfall"),
)


def memory_fit_segments(advice: Advice) -> dict[str, float]:
    """GB per GPU in each segment of the bar: weights, KV for the target, free, reserved and any shortfall."""
    m = advice.memory
    budget = max(m.kv_budget_gb_per_gpu, 0.0)
    kv_used = min(m.kv_gb_per_gpu_for_target, budget)
    return {
        "Weights": round(m.weights_gb_per_gpu, 2),
        "KV cache (target)": round(kv_used, 2),
        "Free for more KV": round(max(0.0, budget - kv_used), 2),
        "Reserved (runtime, headroom)": round(m.reserved_gb_per_gpu, 2),
        "KV shortfall": round(m.kv_shortfall_gb_per_gpu, 2),
    }


def memory_fit_figure(advice: Advice, tr: Translate = identity) -> go.Figure:
    """One stacked bar per GPU: weights, KV cache for the target concurrency, free, reserved, and any shortfall.

    Trace names and titles are worded by `tr`.
    """
    m = advice.memory
    segments = memory_fit_segments(advice)
    label = tr("1 of {gpus}x {gpu}").format(gpus=m.gpus, gpu=advice.gpu_name) if m.gpus > 1 else advice.gpu_name
    colors = {
        "Weights": "#636EFA",
        "KV cache (target)": "#00CC96",
        "Free for more KV": "#B6E880",
        "Reserved (runtime, headroom)": "#AAAAAA",
        "KV shortfall": "#EF553B",
    }
    figure = go.Figure()
    for name in SEGMENTS:
        value = segments[name]
        if name == "KV shortfall" and value <= 0:
            continue
        figure.add_bar(
            y=[label],
            x=[value],
            name=tr(name),
            orientation="h",
            marker_color=colors[name],
            text=[f"{value:.1f} GB"],
            textposition="inside",
            hovertemplate=f"{tr(name)}: %{{x:.2f}} GB<extra></extra>",
        )
    figure.add_vline(
        x=m.memory_gb_per_gpu, line_dash="dot", annotation_text=f"{m.memory_gb_per_gpu:g} GB", annotation_position="top"
    )
    verdict = (
        tr("fits {sequences} sequences of {tokens} tokens").format(
            sequences=m.max_concurrent_sequences, tokens=m.context_tokens
        )
        if m.fits
        else tr("does not fit")
    )
    figure.update_layout(
        barmode="stack",
        height=260,
        margin={"l": 10, "r": 10, "t": 60, "b": 10},
        title=tr("Memory per GPU: {quant} weights, {kv} KV ({verdict})").format(
            quant=advice.quantization_name, kv=advice.kv_cache_dtype, verdict=verdict
        ),
        xaxis_title=tr("GB per GPU"),
        legend={"orientation": "h", "y": -0.35},
    )
    return figure
