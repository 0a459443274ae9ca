"""Engine advisor: GPU, model and workload in; engine, quantization, KV cache, speculation and a launch command out."""

import pandas as pd
import streamlit as st

from catalog import find_gpu, load_gpus
from selector import (
    AUTO,
    CUSTOM_MODEL,
    LABELS,
    Advice,
    AdviceRequest,
    NameLookupError,
    SelectorError,
    advise,
    load_engines,
    load_models,
    load_quant_methods,
    memory_fit_figure,
    nearest_params,
)
from ui.errors import guarded, show_errors
from ui.state import PageState

PAGE = "selector"
_YES_NO = {"build_engines", "qlora"}
_NEAREST_NOTES = "_selector.nearest"


def _to_widget(alias: str, value: object) -> object:
    if alias in _YES_NO:
        return getattr(value, "value", value) == "yes"
    return getattr(value, "value", value)


def _from_widget(alias: str, value: object) -> object:
    if alias in _YES_NO and isinstance(value, bool):
        return "yes" if value else "no"
    return value


state = PageState(PAGE, AdviceRequest, to_widget=_to_widget)
K = state.key


def _gpu_label(gpu_id: str) -> str:
    gpu = find_gpu(gpu_id)
    return f"{gpu.name} · {gpu.memory_gb:g} GB"


def _model_label(model_id: str) -> str:
    if model_id == CUSTOM_MODEL:
        return "Custom model (enter its configuration)"
    model = next(m for m in load_models() if m.id == model_id)
    return f"{model.name} · {model.params_b:g}B"


def _inputs_form() -> None:
    st.subheader("Hardware and model")
    st.selectbox("GPU", [g.id for g in load_gpus()], key=K("gpu"), format_func=_gpu_label)
    st.number_input("GPUs (one node)", key=K("gpus"), step=1, min_value=1)
    st.selectbox("Model", [m.id for m in load_models()] + [CUSTOM_MODEL], key=K("model"), format_func=_model_label)
    if st.session_state.get(K("model")) == CUSTOM_MODEL:
        with st.container(border=True):
            left, right = st.columns(2)
            left.number_input("Parameters (billions)", key=K("params_b"), step=1.0, format="%.4g")
            right.number_input("Layers", key=K("layers"), step=1)
            left.number_input("Attention heads", key=K("heads"), step=1)
            right.number_input("KV heads", key=K("kv_heads"), step=1)
            left.number_input("Head size", key=K("head_dim"), step=8)
            right.number_input("Max context", key=K("max_context"), step=1024)
    st.subheader("Workload")
    for alias, label in (
        ("workload", "Workload"),
        ("priority", "Priority"),
        ("ecosystem", "Model ecosystem"),
        ("deploy", "Deployment"),
    ):
        options = list(LABELS[alias])
        st.selectbox(label, options, key=K(alias), format_func=LABELS[alias].__getitem__)
    st.toggle("Team will build and tune engines", key=K("build_engines"))
    left, right = st.columns(2)
    left.number_input("Context (tokens)", key=K("context"), step=1024)
    right.number_input("Concurrency", key=K("concurrency"), step=8)
    with st.expander("Pin an engine or a quantization", icon=":material/push_pin:"):
        engines = [AUTO] + [e.id for e in load_engines() if e.launchable]
        names = {e.id: e.name for e in load_engines()}
        st.selectbox(
            "Engine",
            engines,
            key=K("engine"),
            format_func=lambda e: "auto (follow the rules)" if e == AUTO else names[e],
        )
        quants = [AUTO] + [q.id for q in load_quant_methods()]
        qnames = {q.id: q.name for q in load_quant_methods()}
        st.selectbox(
            "Quantization",
            quants,
            key=K("quant"),
            format_func=lambda q: "auto (follow the rules)" if q == AUTO else qnames[q],
        )
        st.toggle("Model trained with QLoRA (NF4)", key=K("qlora"))


def _card(advice: Advice) -> None:
    with st.container(border=True):
        st.subheader(f":material/recommend: Run {advice.engine_name}")
        st.write(advice.summary())
        cols = st.columns(4)
        cols[0].metric("Engine", advice.engine_name, border=True, help=f"Runner-up: {advice.runner_up_name}")
        cols[1].metric(
            "Quantization", advice.quantization_name.split(" (")[0], border=True, help=advice.quantization_name
        )
        cols[2].metric(
            "KV cache",
            advice.kv_cache_dtype,
            border=True,
            help=f"{advice.memory.kv_bytes_per_token:,} bytes per token for the whole model",
        )
        cols[3].metric(
            "Max sequences",
            f"{advice.memory.max_concurrent_sequences:,}" if advice.memory.fits else "does not fit",
            border=True,
            help=f"concurrent sequences of {advice.memory.context_tokens} tokens; target {advice.request.concurrency}",
        )
        spec = advice.speculative
        speculation = f"n-gram, {spec.num_speculative_tokens} tokens" if spec.enabled else "off"
        st.markdown(
            f"**Runner-up:** {advice.runner_up_name}. {advice.switch_when}  \n"
            f"**Speculative decoding:** {speculation} — {spec.reason}"
        )
        _price_link(advice)


def _price_link(advice: Advice) -> None:
    gpu = find_gpu(advice.gpu_id)
    params = {"gpu": gpu.id, "gpus": str(advice.request.gpus)}
    if gpu.has_price:
        params["price"] = f"{gpu.price_low:g}"
        params["currency"] = str(gpu.price_currency)
    st.page_link("views/tco.py", label="Price this", icon=":material/payments:", query_params=params)
    if not gpu.has_price:
        st.caption(f"No public hourly price on record for {gpu.name}; enter yours on the cost page.")


def _reasons(advice: Advice) -> None:
    for decision in advice.reasons:
        title = f"{decision.topic.replace('_', ' ')}: {decision.choice}"
        with st.expander(title):
            st.write(decision.reason)
            if decision.handbook_choice:
                st.caption(f"The handbook says: {decision.handbook_choice}")
            st.caption(f"Rule `{decision.rule_id}` · Source: {decision.source}")
    if advice.today_vs_handbook:
        st.markdown("**Where today's engines differ from the handbook**")
        for text in advice.today_vs_handbook:
            st.info(text, icon="🕒")


def _memory(advice: Advice) -> None:
    m = advice.memory
    cols = st.columns(4)
    cols[0].metric("Weights", f"{m.weights_gb:.1f} GB", border=True, help=f"{m.weights_gb_per_gpu:.1f} GB per GPU")
    cols[1].metric(
        "KV bytes per token",
        f"{m.kv_bytes_per_token:,}",
        border=True,
        help=f"{m.kv_bytes_per_token_per_gpu:,} per GPU with tensor parallel {m.split}",
    )
    cols[2].metric("KV budget per GPU", f"{m.kv_budget_gb_per_gpu:.1f} GB", border=True)
    cols[3].metric("Layout", f"TP {m.split} × {m.replicas}", border=True, help="tensor parallel size × replicas")
    st.plotly_chart(memory_fit_figure(advice), key="selector.fig.memory")
    for suggestion in m.suggestions:
        st.markdown(f"- {suggestion}")


def _launch(advice: Advice) -> None:
    st.markdown(f"**{advice.engine_name}**")
    st.code(advice.launch.shell, language="bash")
    for note in advice.launch.notes:
        st.caption(note)
    if advice.runner_up_launch is not None:
        st.markdown(f"**Runner-up: {advice.runner_up_name}**")
        st.code(advice.runner_up_launch.shell, language="bash")
        for note in advice.runner_up_launch.notes:
            st.caption(note)


def _engines_table(advice: Advice) -> None:
    rows = [
        {
            "engine": e.name,
            "status": e.status,
            "hardware": e.hardware,
            "quantization": e.quant_formats,
            "prefix caching": e.prefix_caching,
            "speculative decoding": e.speculative_decoding,
            "OpenAI server": e.openai_server,
            "recommended": "✓" if e.id == advice.engine else ("runner-up" if e.id == advice.runner_up else ""),
            "as of": e.source_snapshot,
            "source": e.source,
        }
        for e in load_engines()
    ]
    st.dataframe(pd.DataFrame(rows), hide_index=True, key="selector.engines")


def _nearest_names() -> None:
    """Swap an unknown name in the link for its nearest match before the page reads the link."""
    fixed, notes = nearest_params(st.query_params.to_dict())
    if notes:
        st.query_params.from_dict(fixed)
        st.session_state[_NEAREST_NOTES] = notes
    for note in st.session_state.pop(_NEAREST_NOTES, []):
        st.warning(note, icon="⚠️")


def body() -> None:
    """Draw the page."""
    st.title("What should we run?")
    st.caption(
        "The handbook's rules (sections 1.2, 3.2, 4, 5, 6.2) checked against today's engines: GPU, model and "
        "workload in; engine, quantization, KV cache, speculative decoding, memory fit and a launch command out. "
        "The URL keeps every input."
    )
    _nearest_names()
    state.load()
    state.show_notes()
    with st.sidebar:
        _inputs_form()
    request, errors = state.read(_from_widget)
    if request is None:
        show_errors("Check these inputs; the advice updates once they are valid.", errors)
        return
    try:
        advice = advise(request)
    except (SelectorError, NameLookupError) as exc:
        st.error(str(exc), icon="🚫")
        return
    for warning in advice.warnings:
        st.warning(warning, icon="⚠️")
    _card(advice)
    why, memory, launch, engines = st.tabs(["Why", "Memory fit", "Launch command", "Engines compared"])
    with why:
        _reasons(advice)
    with memory:
        _memory(advice)
    with launch:
        _launch(advice)
    with engines:
        _engines_table(advice)


guarded(body)
