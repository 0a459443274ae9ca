"""Plotly figures of an advice (plain functions: advice in, figure out; the theme comes from the page)."""

import plotly.graph_objects as go

from selector.advisor import Advice

SEGMENTS = ("Weights", "KV cache (target)", "Free for more KV", "Reserved (runtime, headroom)", "KV shortfall")


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


def memory_fit_figure(advice: Advice) -> go.Figure:
    """One stacked bar per GPU: weights, KV cache for the target concurrency, free, reserved, and any shortfall."""
    m = advice.memory
    segments = memory_fit_segments(advice)
    label = f"1 of {m.gpus}x {advice.gpu_name}" if m.gpus > 1 else advice.gpu_name
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
            name=name,
            orientation="h",
            marker_color=colors[name],
            text=[f"{value:.1f} GB"],
            textposition="inside",
            hovertemplate=f"{name}: %{{x:.2f}} GB<extra></extra>",
        )
    figure.add_vline(
        x=m.memory_gb_per_gpu, line_dash="dot", annotation_text=f"{m.memory_gb_per_gpu:g} GB", annotation_position="top"
    )
    verdict = f"fits {m.max_concurrent_sequences} sequences of {m.context_tokens} tokens" if m.fits else "does not fit"
    figure.update_layout(
        barmode="stack",
        height=260,
        margin={"l": 10, "r": 10, "t": 60, "b": 10},
        title=f"Memory per GPU: {advice.quantization_name} weights, {advice.kv_cache_dtype} KV ({verdict})",
        xaxis_title="GB per GPU",
        legend={"orientation": "h", "y": -0.35},
    )
    return figure
