"""The advisor's inputs in the sidebar: hardware and model, workload, pinned engine or quantization."""

import streamlit as st

from catalog import AUTO, CUSTOM_MODEL, find_gpu, load_engines, load_gpus, load_models, load_quant_methods
from i18n import N_
from selector import LABELS
from ui.lang import _
from views.selector_parts.custom import custom_form
from views.selector_parts.state import K


def _gpu_label(gpu_id: str) -> str:
    gpu = find_gpu(gpu_id)
    return f"{gpu.name} · {gpu.memory_gb:g} GB"


def _model_labels() -> dict[str, str]:
    """The model choices as the select box shows them, worded now (AppTest calls format_func outside the run)."""
    labels = {m.id: f"{m.name} · {m.params_b:g}B" for m in load_models()}
    return {**labels, CUSTOM_MODEL: _("Custom model (its config.json, or by hand)")}


def inputs_form() -> None:
    st.subheader(_("Hardware and model"))
    st.selectbox("GPU", [g.id for g in load_gpus()], key=K("gpu"), format_func=_gpu_label)
    st.number_input(_("GPUs (one node)"), key=K("gpus"), step=1, min_value=1)
    models = _model_labels()
    st.selectbox(_("Model"), list(models), key=K("model"), format_func=models.__getitem__)
    if st.session_state.get(K("model")) == CUSTOM_MODEL:
        custom_form()
    st.subheader(_("Workload"))
    for alias, label in (
        ("workload", N_("Workload")),
        ("priority", N_("Priority")),
        ("ecosystem", N_("Model ecosystem")),
        ("deploy", N_("Deployment")),
    ):
        options = {value: _(text) for value, text in LABELS[alias].items()}
        st.selectbox(_(label), list(options), key=K(alias), format_func=options.__getitem__)
    st.toggle(_("Team will build and tune engines"), key=K("build_engines"))
    left, right = st.columns(2)
    left.number_input(_("Context (tokens)"), key=K("context"), step=1024)
    right.number_input(_("Concurrency"), key=K("concurrency"), step=8)
    left, right = st.columns(2)
    left.number_input(_("Input tokens per request"), key=K("in_tokens"), step=50)
    right.number_input(_("Output tokens per request"), key=K("out_tokens"), step=10)
    st.number_input(_("Traffic (requests per day)"), key=K("traffic"), step=10_000.0, format="%.10g")
    with st.expander(_("Pin an engine or a quantization"), icon=":material/push_pin:"):
        auto = _("auto (follow the rules)")
        engines = [AUTO] + [e.id for e in load_engines()]
        names = {
            e.id: e.name if e.launchable else _("{engine} (no launch command)").format(engine=e.name)
            for e in load_engines()
        }
        st.selectbox(
            _("Engine"),
            engines,
            key=K("engine"),
            format_func=lambda e: auto if e == AUTO else names[e],
        )
        st.text_input(
            _("Engine release"),
            key=K("engine_version"),
            placeholder=_("empty: the newest release with measured data"),
            help=_(
                "The release the estimate is for, as the engine numbers it (0.19.0, 1.2.0rc6). Empty: the newest "
                "release with measured data. A release without measured data is estimated as an extrapolation, "
                "with wider bands."
            ),
        )
        quants = [AUTO] + [q.id for q in load_quant_methods()]
        qnames = {q.id: q.name for q in load_quant_methods()}
        st.selectbox(
            _("Quantization"),
            quants,
            key=K("quant"),
            format_func=lambda q: auto if q == AUTO else qnames[q],
        )
        st.toggle(_("Model trained with QLoRA (NF4)"), key=K("qlora"))
