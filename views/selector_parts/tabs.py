"""The advisor's tabs below the card: why, memory fit, launch command, engines compared."""

import pandas as pd
import streamlit as st

from catalog import load_engines
from i18n import N_
from selector import Advice, memory_fit_figure
from selector.cli import layout_text
from ui.concepts import concept_note
from ui.lang import _, language
from ui.names import choice_text

# The advice's decision topics (JSON keys) as the page titles them.
_TOPICS: dict[str, str] = {
    "hardware gate": N_("hardware gate"),
    "engine": N_("engine"),
    "runner_up": N_("runner up"),
    "architecture gate": N_("architecture gate"),
    "engine gate": N_("engine gate"),
    "quantization": N_("quantization"),
    "kv_cache_dtype": N_("kv cache dtype"),
    "kv_offload": N_("kv offload"),
    "kv_paging": N_("kv paging"),
    "memory": N_("memory"),
    "parallelism": N_("parallelism"),
    "expert_parallel": N_("expert parallel"),
    "attention_data_parallel": N_("attention data parallel"),
    "prefix_caching": N_("prefix caching"),
    "chunked_prefill": N_("chunked prefill"),
    "speculative": N_("speculative"),
    "batching": N_("batching"),
}


def reasons_tab(advice: Advice) -> None:
    for decision in advice.reasons:
        topic = _(_TOPICS.get(decision.topic, decision.topic.replace("_", " ")))
        choice = decision.shown or choice_text(decision.topic, decision.choice, _)
        with st.expander(_("{topic}: {choice}").format(topic=topic, choice=choice)):
            st.write(decision.reason)
            if decision.handbook_choice:
                st.caption(_("The handbook says: {choice}").format(choice=decision.handbook_choice))
            st.caption(
                _("Rule `{rule_id}` · Source: {source}").format(rule_id=decision.rule_id, source=decision.source)
            )
    if advice.today_vs_handbook:
        st.markdown(_("**Where today's engines differ from the handbook**"))
        for text in advice.today_vs_handbook:
            st.info(text, icon="🕒")
    for key in ("prefix_caching", "chunked_prefill", "speculative_decoding"):
        concept_note(key)


def memory_tab(advice: Advice) -> None:
    m = advice.memory
    cols = st.columns(4)
    cols[0].metric(
        _("Weights"),
        f"{m.weights_gb:.1f} GB",
        border=True,
        help=_("{gb} GB per GPU").format(gb=f"{m.weights_gb_per_gpu:.1f}"),
    )
    cols[1].metric(
        _("KV bytes per token"),
        f"{m.kv_bytes_per_token:,}",
        border=True,
        help=_("{bytes} per GPU with tensor parallel {split}").format(
            bytes=f"{m.kv_bytes_per_token_per_gpu:,}", split=m.split
        ),
    )
    cols[2].metric(_("KV budget per GPU"), f"{m.kv_budget_gb_per_gpu:.1f} GB", border=True)
    cols[3].metric(
        _("Layout"),
        layout_text(m, tr=_),
        border=True,
        help=_("TP tensor parallel, PP pipeline stages, EP expert parallel, DP attention: data-parallel attention"),
    )
    st.plotly_chart(memory_fit_figure(advice, tr=_), key="selector.fig.memory")
    for suggestion in m.suggestions:
        st.markdown(f"- {suggestion}")
    concept_note("kv_bytes")
    concept_note("paged_attention")


def launch_tab(advice: Advice) -> None:
    st.markdown(f"**{advice.engine_name}**")
    st.code(advice.launch.shell, language="bash")
    for note in advice.launch.notes:
        st.caption(note)
    if advice.runner_up_launch is not None:
        st.markdown(_("**Runner-up: {engine}**").format(engine=advice.runner_up_name))
        st.code(advice.runner_up_launch.shell, language="bash")
        for note in advice.runner_up_launch.notes:
            st.caption(note)


def engines_tab(advice: Advice) -> None:
    lang = language()
    rows = [
        {
            _("engine"): e.name,
            _("status"): e.text("status", lang),
            _("hardware"): e.text("hardware", lang),
            _("quantization"): e.text("quant_formats", lang),
            _("prefix caching"): e.text("prefix_caching", lang),
            _("speculative decoding"): e.text("speculative_decoding", lang),
            _("OpenAI server"): e.text("openai_server", lang),
            _("recommended"): "✓" if e.id == advice.engine else (_("runner-up") if e.id == advice.runner_up else ""),
            _("as of"): e.source_snapshot,
            _("source"): e.source,
        }
        for e in load_engines()
    ]
    st.dataframe(pd.DataFrame(rows), hide_index=True, key="selector.engines")
