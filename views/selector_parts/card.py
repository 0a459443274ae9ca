"""The advisor's recommendation card: engine, quantization, KV cache, the model's facts and layout."""

import streamlit as st

from catalog import AUTO, load_engines, load_quant_methods
from i18n import N_
from selector import Advice
from selector.cli import layout_text
from tco.throughput import estimate_advice
from ui.calibration import stored_calibrations
from ui.first_paint import after_headline
from ui.lang import _
from ui.names import kv_dtype_text
from views.selector_parts.estimates import estimates, price_link
from views.selector_parts.state import PAGE

_KV_HELP: dict[str, str] = {
    "MLA": N_("Multi-head latent attention: one compressed latent per token and layer instead of K and V."),
    "GQA": N_("Grouped-query attention: several query heads share each KV head."),
    "MHA": N_("Multi-head attention: one KV head per query head."),
}


def card(advice: Advice) -> bool:
    """The recommendation. False when the run ended below its figures (ui/first_paint.py): the rest comes next run."""
    calibrations = stored_calibrations()
    chosen = estimate_advice(advice, calibrations=calibrations)
    with st.container(border=True):
        at_target = chosen.at_target
        if at_target is not None and not at_target.meets_slo:
            st.subheader(
                _(":material/recommend: Run {engine}, estimated to miss the SLO at concurrency {concurrency}").format(
                    engine=advice.engine_name, concurrency=chosen.target_concurrency
                )
            )
        else:
            st.subheader(_(":material/recommend: Run {engine}").format(engine=advice.engine_name))
        st.write(advice.summary(tr=_, kv_text=kv_dtype_text(advice.kv_cache_dtype, _)))
        _figures(advice)
        if not after_headline(PAGE):
            return False  # the first run ends with the figures; the rest follows once the browser has drawn them
        spec = advice.speculative
        speculation = (
            _("n-gram, {tokens} tokens").format(tokens=spec.num_speculative_tokens) if spec.enabled else _("off")
        )
        st.markdown(
            _("**Runner-up:** {engine}. {switch_when}").format(
                engine=advice.runner_up_name, switch_when=advice.switch_when
            )
            + "  \n"
            + _("**Speculative decoding:** {speculation} — {reason}").format(
                speculation=speculation, reason=spec.reason
            )
        )
        _pinned_caption(advice)
        _model_facts(advice)
        estimates(advice, chosen, estimate_advice(advice, runner_up=True, calibrations=calibrations))
        price_link(advice, chosen)
    return True


def _figures(advice: Advice) -> None:
    """The four cards under the headline: engine, quantization, KV cache and how many sequences fit.

    Two to a row: a name ('llama.cpp (llama-server)', 'SmoothQuant W8A8') needs half the card to be read whole.
    """
    cols = st.columns(2) + st.columns(2)
    cols[0].metric(
        _("Engine"),
        advice.engine_name,
        border=True,
        help=_("Runner-up: {engine}").format(engine=advice.runner_up_name),
    )
    cols[1].metric(
        _("Quantization"), advice.quantization_name.split(" (")[0], border=True, help=advice.quantization_name
    )
    cols[2].metric(
        _("KV cache"),
        kv_dtype_text(advice.kv_cache_dtype, _, short=True),
        border=True,
        help=kv_dtype_text(advice.kv_cache_dtype, _)
        + "; "
        + _("{bytes} bytes per token for the whole model").format(bytes=f"{advice.memory.kv_bytes_per_token:,}"),
    )
    cols[3].metric(
        _("Max sequences"),
        f"{advice.memory.max_concurrent_sequences:,}" if advice.memory.fits else _("does not fit"),
        border=True,
        help=_("concurrent sequences of {tokens} tokens; target {target}").format(
            tokens=advice.memory.context_tokens, target=advice.request.concurrency
        ),
    )


def _pinned_caption(advice: Advice) -> None:
    """Say plainly when a pinned engine or quantization is not what the advice uses."""
    request = advice.request
    if request.engine != AUTO and advice.engine != request.engine:
        pinned = next((e.name for e in load_engines() if e.id == request.engine), request.engine)
        st.caption(
            _(":material/push_pin: Pinned engine {pinned} is not used here; this is the advice for {engine}.").format(
                pinned=pinned, engine=advice.engine_name
            )
        )
    if request.quant != AUTO and advice.quantization != request.quant:
        pinned = next((q.name for q in load_quant_methods() if q.id == request.quant), request.quant)
        st.caption(
            _(":material/push_pin: Pinned quantization {pinned} is not used here; the advice uses {method}.").format(
                pinned=pinned, method=advice.quantization_name
            )
        )


def _billions(value: object) -> str:
    number = float(value) if isinstance(value, int | float) else 0.0
    return f"{number:,.4g}B" if number < 1000 else f"{number:,.0f}B"


def _model_facts(advice: Advice) -> None:
    """What the model is (parameters, KV kind, experts, sliding window) and how it is laid out on the GPUs."""
    facts = advice.to_json_dict().get("model_facts")
    if not isinstance(facts, dict):
        return
    experts = int(facts.get("experts") or 0)
    per_token = int(facts.get("experts_per_token") or 0)
    shared = int(facts.get("shared_experts") or 0)
    window = int(facts.get("sliding_window") or 0)
    window_layers = facts.get("sliding_window_layers") or facts.get("layers")
    kv_kind = str(facts.get("kv_kind") or "").upper()
    st.markdown(_("**{model}** · {layers} layers").format(model=advice.model_name, layers=facts.get("layers")))
    cols = st.columns(3)
    cols[0].metric(
        _("Total parameters"),
        _billions(facts.get("total_params_b")),
        border=True,
        help=_("memory follows these"),
    )
    active = _billions(facts.get("active_params_b")) if experts else _("all")
    cols[1].metric(_("Active per token"), active, border=True, help=_("compute per token follows these"))
    kv_help = _KV_HELP.get(kv_kind)
    cols[2].metric(_("KV kind"), kv_kind or "?", border=True, help=_(kv_help) if kv_help else None)
    wide, narrow = st.columns([2, 1])
    expert_text = (
        _("{experts} experts, {per_token} per token").format(experts=experts, per_token=per_token)
        if experts
        else _("dense")
    )
    if not shared:
        shared_text = _("no shared experts")
    elif shared == 1:
        shared_text = _("plus {count} shared expert").format(count=shared)
    else:
        shared_text = _("plus {count} shared experts").format(count=shared)
    wide.metric(_("Experts"), expert_text, border=True, help=shared_text)
    window_text = _("{tokens} tokens").format(tokens=f"{window:,}") if window else _("none")
    narrow.metric(
        _("Sliding window"),
        window_text,
        border=True,
        help=_("on {window_layers} of {layers} layers").format(window_layers=window_layers, layers=facts.get("layers"))
        if window
        else _("every layer sees the whole context"),
    )
    m = advice.memory
    if m.nodes > 1:
        nodes = _("{nodes} nodes × {gpus} GPUs").format(nodes=m.nodes, gpus=m.gpus_per_node)
    elif m.gpus == 1:
        nodes = _("1 GPU")
    else:
        nodes = _("{gpus} GPUs").format(gpus=m.gpus)
    st.markdown(_("**Parallel layout:** {layout} ({nodes})").format(layout=layout_text(m, tr=_), nodes=nodes))
