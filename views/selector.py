"""Engine advisor: GPU, model and workload in; engine, quantization, KV cache, speculation and a launch command out."""

from pathlib import Path
from typing import get_args

import pandas as pd
import streamlit as st
from pydantic import ValidationError
from streamlit.delta_generator import DeltaGenerator

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
from selector.cli import layout_text
from selector.custom import custom_model
from selector.hfconfig import ConfigError, parse_config
from selector.models import NativeFormat
from tco import TcoInputs
from tco.inputs import TpsSource
from tco.throughput import AdviceEstimate, estimate_advice
from ui.calibration import stored_calibrations
from ui.errors import guarded, show_errors
from ui.params import to_params
from ui.state import PageState

PAGE = "selector"
_YES_NO = {"build_engines", "qlora", "tie_embeddings"}
_NEAREST_NOTES = "_selector.nearest"  # alias -> (note, the value the link's name was read as), while it stands
_CONFIG_TEXT = "selector.config_text"
_CONFIG_FILE = "selector.config_file"
_CONFIG_RESULT = "_selector.config_result"  # (level, message, notes) of the last config.json read
MAX_CONFIG_BYTES = 2_000_000  # a config.json is a few kB; anything this large is not one

# The custom model's fields (URL parameters), as the form shows them: label and help.
_BASIC: dict[str, tuple[str, str]] = {
    "custom_name": ("Name", "Shown in the advice."),
    "params_b": ("Total parameters (billions)", "Every weight, all experts included: memory follows this."),
    "layers": ("Layers", "num_hidden_layers in config.json."),
    "hidden_size": ("Hidden size", "hidden_size in config.json."),
    "heads": ("Attention heads", "num_attention_heads in config.json."),
    "kv_heads": ("KV heads", "num_key_value_heads: equal to the attention heads for MHA, fewer for GQA."),
    "head_dim": ("Head size", "head_dim, or hidden size / attention heads when config.json omits it."),
    "intermediate_size": ("Dense MLP size", "intermediate_size: the feed-forward width of layers without experts."),
    "vocab_size": ("Vocabulary", "vocab_size in config.json."),
    "max_context": ("Longest context (tokens)", "max_position_embeddings in config.json."),
}
_MOE: dict[str, tuple[str, str]] = {
    "experts": ("Routed experts (0 = dense model)", "n_routed_experts / num_experts / num_local_experts."),
    "experts_per_token": ("Experts per token", "num_experts_per_tok: how many routed experts each token uses."),
    "shared_experts": ("Shared experts", "Experts every token passes through (n_shared_experts)."),
    "moe_intermediate_size": ("One expert's MLP size", "moe_intermediate_size in config.json."),
    "moe_layers": ("Layers with experts (0 = all)", "The others are dense (first_k_dense_replace, ...)."),
    "active_params_b": (
        "Active parameters per token (billions)",
        "What one token computes with (compute follows this); 0 counts every parameter as active.",
    ),
}
_MLA: dict[str, tuple[str, str]] = {
    "kv_lora_rank": ("Compressed KV size (0 = no MLA)", "kv_lora_rank: MLA caches this latent instead of K and V."),
    "rope_head_dim": ("Rotary part of a head", "qk_rope_head_dim: cached next to the latent (64 in DeepSeek-V3)."),
}
_WINDOW: dict[str, tuple[str, str]] = {
    "sliding_window": ("Window (tokens; 0 = none)", "Layers with a window keep at most this many tokens of KV."),
    "sliding_window_layers": ("Layers that use the window", "The other layers attend to the whole context."),
}
CUSTOM_FIELDS = (*_BASIC, "native_format", "tie_embeddings", *_MOE, *_MLA, *_WINDOW)


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
        return "Custom model (its config.json, or by hand)"
    model = next(m for m in load_models() if m.id == model_id)
    return f"{model.name} · {model.params_b:g}B"


def _number(alias: str, label: str, help_text: str) -> None:
    """A number input for a custom-model field: whole numbers step by 1, billions by 1 with 4 digits shown."""
    if alias.endswith("_b"):
        st.number_input(label, key=K(alias), step=1.0, format="%.4g", min_value=0.0, help=help_text)
    else:
        st.number_input(label, key=K(alias), step=1, min_value=0, help=help_text)


def _read_config(source: str) -> None:
    """Callback: fill the custom model's fields from an uploaded or pasted config.json; a bad one changes nothing."""
    if source == "file":
        upload = st.session_state.get(_CONFIG_FILE)
        if upload is None:
            return
        data: str | bytes = upload.getvalue()
        name = "" if Path(upload.name).stem == "config" else Path(upload.name).stem
    else:
        data, name = st.session_state.get(_CONFIG_TEXT) or "", ""
        if not data.strip():
            st.session_state.pop(_CONFIG_RESULT, None)
            return
    st.session_state[_CONFIG_RESULT] = _apply_config(data, name)


def _apply_config(data: str | bytes, name: str) -> tuple[str, str, tuple[str, ...]]:
    """Read a config.json into the form; returns (level, message, notes). Nothing changes unless it all reads."""
    unchanged = "The model's fields are unchanged."
    if len(data) > MAX_CONFIG_BYTES:
        return "error", f"This file is {len(data):,} bytes; a config.json is a few kB. {unchanged}", ()
    try:
        parsed = parse_config(data, name=name)
        request = AdviceRequest.model_validate({**parsed.fields, "model": CUSTOM_MODEL})
        custom_model(request)  # every field adds up (KV heads divide the heads, experts per token, ...)
    except ConfigError as exc:
        return "error", f"{exc} {unchanged}", ()
    except ValidationError as exc:
        problems = "; ".join(
            f"{error['loc'][0] if error.get('loc') else 'config'}: {str(error['msg']).removeprefix('Value error, ')}"
            for error in exc.errors()
        )
        return "error", f"config.json gives values the advisor cannot take ({problems}). {unchanged}", ()
    except SelectorError as exc:
        return "error", f"config.json does not add up: {exc} {unchanged}", ()
    for alias in (*parsed.fields, "model"):
        st.session_state[K(alias)] = _to_widget(alias, getattr(request, alias))
    what = parsed.architecture or "an unnamed architecture"
    family = f" ({parsed.family})" if parsed.family else " (a family the reader does not know)"
    size = f"{request.params_b:,.4g}B parameters" + (f", {request.experts} experts" if request.experts else "")
    return "success", f"Read {what}{family}: {size}.", parsed.notes


def _config_result() -> None:
    result = st.session_state.get(_CONFIG_RESULT)
    if result is None:
        return
    level, message, notes = result
    if level == "error":
        st.error(message, icon="🚫")
        return
    st.success(message, icon="✅")
    for note in notes:
        st.caption(f"Note: {note}")


def _fields(fields: dict[str, tuple[str, str]]) -> None:
    """One number input per field, one under the other (the sidebar is too narrow for two columns of them)."""
    for alias, (label, help_text) in fields.items():
        _number(alias, label, help_text)


def _keep_custom_fields() -> None:
    """Keep the custom model's values while its form is hidden (Streamlit drops the state of unrendered widgets)."""
    for alias in CUSTOM_FIELDS:
        if K(alias) in st.session_state:
            st.session_state[K(alias)] = st.session_state[K(alias)]


def _custom_form() -> None:
    """The custom model: read from a config.json, or entered field by field."""
    st.markdown("**Describe the model**")
    with st.expander("Read its config.json", icon=":material/upload_file:", expanded=True):
        st.file_uploader(
            "Upload config.json",
            type=["json"],
            key=_CONFIG_FILE,
            on_change=_read_config,
            args=("file",),
            help="The model's config.json, as the Hugging Face Hub publishes it. Only this app reads it; nothing "
            "is fetched from the Hub.",
        )
        st.text_area(
            "…or paste it",
            key=_CONFIG_TEXT,
            height=120,
            on_change=_read_config,
            args=("text",),
            placeholder='{"architectures": ["Qwen3MoeForCausalLM"], "hidden_size": 2048, ...}',
            help="Press Ctrl+Enter (or click outside the box) to read it. The fields below fill in and the "
            "link keeps them.",
        )
        _config_result()
    st.text_input(_BASIC["custom_name"][0], key=K("custom_name"), max_chars=120, help=_BASIC["custom_name"][1])
    _fields({k: v for k, v in _BASIC.items() if k != "custom_name"})
    st.selectbox(
        "Published weights",
        list(get_args(NativeFormat)),
        key=K("native_format"),
        help="The format the official checkpoint ships in (gpt-oss: MXFP4 experts, DeepSeek-V3: FP8).",
    )
    st.toggle(
        "Tied embeddings",
        key=K("tie_embeddings"),
        help="tie_word_embeddings: the output head reuses the input embeddings (one copy in memory).",
    )
    state_of = st.session_state
    with st.expander("Mixture of experts (MoE)", expanded=bool(state_of.get(K("experts")))):
        _fields(_MOE)
    with st.expander("Multi-head latent attention (MLA)", expanded=bool(state_of.get(K("kv_lora_rank")))):
        _fields(_MLA)
    with st.expander("Sliding-window attention", expanded=bool(state_of.get(K("sliding_window")))):
        _fields(_WINDOW)


def _inputs_form() -> None:
    _keep_custom_fields()
    st.subheader("Hardware and model")
    st.selectbox("GPU", [g.id for g in load_gpus()], key=K("gpu"), format_func=_gpu_label)
    st.number_input("GPUs (one node)", key=K("gpus"), step=1, min_value=1)
    st.selectbox("Model", [m.id for m in load_models()] + [CUSTOM_MODEL], key=K("model"), format_func=_model_label)
    if st.session_state.get(K("model")) == CUSTOM_MODEL:
        _custom_form()
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
        engines = [AUTO] + [e.id for e in load_engines()]
        names = {e.id: e.name if e.launchable else f"{e.name} (no launch command)" for e in load_engines()}
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
        _pinned_caption(advice)
        _model_facts(advice)
        calibrations = stored_calibrations()
        chosen = estimate_advice(advice, calibrations=calibrations)
        _estimates(advice, chosen, estimate_advice(advice, runner_up=True, calibrations=calibrations))
        _price_link(advice, chosen)


def _estimate_column(title: str, est: AdviceEstimate) -> None:
    st.markdown(f"**{title}: {est.engine_name}, {est.quant}**")
    if est.point is None:
        st.caption(est.missing)
        return
    point, level = est.point, est.at_target
    cols = st.columns(2)
    at = f"at concurrency {est.target_concurrency}"
    if level is not None:
        cols[0].metric("TTFT p50 (estimate)", f"{level.ttft_ms.p50:,.0f} ms", border=True, help=at)
        cols[1].metric("TPOT p50 (estimate)", f"{level.tpot_ms.p50:,.1f} ms", border=True, help=at)
        cols = st.columns(2)
        cols[0].metric("Output tok/s (estimate)", f"{level.output_tok_s:,.0f}", border=True, help=at + ", per replica")
    best = point.estimate.best_concurrency_within_slo
    cols[1].metric(
        "Max in SLO (estimate)",
        "none" if best is None else f"{best:,}",
        border=True,
        help=f"the highest concurrency within the SLO: {point.output_tok_s:,.0f} tok/s per replica there"
        if best
        else "misses the SLO even at concurrency 1",
    )
    st.caption(f"{point.label}.")


def _estimates(advice: Advice, chosen: AdviceEstimate, runner_up: AdviceEstimate) -> None:
    """The estimates for the recommendation and the runner-up engine: latency, throughput, the SLO load."""
    st.markdown("**:material/query_stats: Estimated performance**")
    slo = chosen.point.estimate.request.slo if chosen.point else None
    target = (
        f"; SLO TTFT p50 ≤ {slo.ttft_p50_ms:g} ms, p99 ≤ {slo.ttft_p99_ms:g} ms, TPOT p50 ≤ {slo.tpot_p50_ms:g} ms"
        if slo
        else ""
    )
    st.caption(
        f"Estimates, not measurements: requests of {chosen.input_tokens:,} input and {chosen.output_tokens:,} "
        f"output tokens (your context) at {advice.request.concurrency} concurrent sequences{target}."
    )
    left, right = st.columns(2)
    with left:
        _estimate_column("Recommended", chosen)
    with right:
        _estimate_column("Runner-up", runner_up)


def _price_link(advice: Advice, chosen: AdviceEstimate) -> None:
    """The cost page with the GPU, its catalog price and, when there is one, the estimated throughput."""
    gpu = find_gpu(advice.gpu_id)
    values: dict[str, object] = {"gpu": gpu.id, "gpus": advice.request.gpus}
    if gpu.has_price:
        values.update(price=gpu.price_low, currency=gpu.price_currency)
    point = chosen.point
    if point is not None:
        values.update(
            gpus=point.estimate.layout.gpus,
            tps=point.output_tok_s,
            tps_source=TpsSource.ESTIMATE,
            model=advice.model_id,
            engine=chosen.engine,
            quant_method=point.estimate.quant,
            in_tokens=chosen.input_tokens,
            out_tokens=chosen.output_tokens,
        )
    params = to_params(TcoInputs.model_validate(values))
    st.page_link("views/tco.py", label="Price this", icon=":material/payments:", query_params=params)
    if point is not None:
        st.caption(
            f"Carries the estimated {point.output_tok_s:,.0f} tok/s per replica at concurrency {point.concurrency} "
            f"({'the highest within the SLO' if point.meets_slo else 'misses the SLO'}), an {point.short_label}."
        )
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
    cols[3].metric(
        "Layout",
        layout_text(m),
        border=True,
        help="TP tensor parallel, PP pipeline stages, EP expert parallel, DP attention: data-parallel attention",
    )
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
    """Read an unknown name in the link as its clear nearest match before the page reads the link; note it."""
    fixed, notes = nearest_params(st.query_params.to_dict())
    if notes:
        st.query_params.from_dict(fixed)
        st.session_state[_NEAREST_NOTES] = {alias: (note, fixed[alias]) for alias, note in notes.items()}


def _shown_for(alias: str, value: str, advice: Advice | None) -> str:
    """What the advice below actually uses for a parameter read as `value` (it may not use a pinned engine)."""
    if advice is None:
        return ""
    if alias == "engine":
        if advice.engine != value:
            name = next((e.name for e in load_engines() if e.id == value), value)
            return f" {name} cannot be used here, so the advice below is for {advice.engine_name} (see why below)."
        return f" The advice below is for {advice.engine_name}."
    if alias == "quant":
        if advice.quantization != value:
            name = next((q.name for q in load_quant_methods() if q.id == value), value)
            return f" {name} cannot be used here, so the advice below uses {advice.quantization_name}."
        return f" The advice below uses {advice.quantization_name}."
    if alias == "gpu":
        return f" The advice below is for the {advice.gpu_name}."
    return f" The advice below is for {advice.model_name}."


def _show_nearest(slot: DeltaGenerator, request: AdviceRequest | None, advice: Advice | None) -> None:
    """One warning per name read as its nearest match, saying what is shown; dropped once the user changes it."""
    notes: dict[str, tuple[str, str]] = st.session_state.get(_NEAREST_NOTES, {})
    if request is not None:
        notes = {a: (n, v) for a, (n, v) in notes.items() if str(getattr(request, a)) == v}
        st.session_state[_NEAREST_NOTES] = notes
    for alias, (note, value) in notes.items():
        slot.warning(note + _shown_for(alias, value, advice), icon="⚠️")


def _pinned_caption(advice: Advice) -> None:
    """Say plainly when a pinned engine or quantization is not what the advice uses."""
    request = advice.request
    if request.engine != AUTO and advice.engine != request.engine:
        pinned = next((e.name for e in load_engines() if e.id == request.engine), request.engine)
        st.caption(
            f":material/push_pin: Pinned engine {pinned} is not used here; this is the advice for {advice.engine_name}."
        )
    if request.quant != AUTO and advice.quantization != request.quant:
        pinned = next((q.name for q in load_quant_methods() if q.id == request.quant), request.quant)
        st.caption(
            f":material/push_pin: Pinned quantization {pinned} is not used here; the advice uses "
            f"{advice.quantization_name}."
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
    kv_help = {
        "MLA": "Multi-head latent attention: one compressed latent per token and layer instead of K and V.",
        "GQA": "Grouped-query attention: several query heads share each KV head.",
        "MHA": "Multi-head attention: one KV head per query head.",
    }
    st.markdown(f"**{advice.model_name}** · {facts.get('layers')} layers")
    cols = st.columns(3)
    cols[0].metric("Total parameters", _billions(facts.get("total_params_b")), border=True, help="memory follows these")
    active = _billions(facts.get("active_params_b")) if experts else "all"
    cols[1].metric("Active per token", active, border=True, help="compute per token follows these")
    cols[2].metric("KV kind", kv_kind or "?", border=True, help=kv_help.get(kv_kind))
    wide, narrow = st.columns([2, 1])
    expert_text = f"{experts} experts, {per_token} per token" if experts else "dense"
    wide.metric(
        "Experts",
        expert_text,
        border=True,
        help=f"plus {shared} shared expert{'s' if shared != 1 else ''}" if shared else "no shared experts",
    )
    window_text = f"{window:,} tokens" if window else "none"
    narrow.metric(
        "Sliding window",
        window_text,
        border=True,
        help=f"on {window_layers} of {facts.get('layers')} layers" if window else "every layer sees the whole context",
    )
    m = advice.memory
    nodes = f"{m.nodes} nodes × {m.gpus_per_node} GPUs" if m.nodes > 1 else f"{m.gpus} GPU{'s' if m.gpus != 1 else ''}"
    st.markdown(f"**Parallel layout:** {layout_text(m)} ({nodes})")


def body() -> None:
    """Draw the page."""
    st.title("What should we run?")
    st.caption(
        "The handbook's rules (sections 1.2, 3.2, 4, 5, 6.2) checked against today's engines: GPU, model and "
        "workload in; engine, quantization, KV cache, speculative decoding, memory fit and a launch command out. "
        "The URL keeps every input."
    )
    nearest_slot = st.container()
    _nearest_names()
    state.load()
    state.show_notes()
    with st.sidebar:
        _inputs_form()
    request, errors = state.read(_from_widget)
    if request is None:
        _show_nearest(nearest_slot, None, None)
        show_errors("Check these inputs; the advice updates once they are valid.", errors)
        return
    try:
        advice = advise(request)
    except (SelectorError, NameLookupError) as exc:
        _show_nearest(nearest_slot, request, None)
        st.error(str(exc), icon="🚫")
        return
    _show_nearest(nearest_slot, request, advice)
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
