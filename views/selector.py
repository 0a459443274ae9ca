"""Engine advisor: GPU, model and workload in; engine, quantization, KV cache, speculation and a launch command out."""

from pathlib import Path
from typing import get_args

import pandas as pd
import streamlit as st
from pydantic import ValidationError
from streamlit.delta_generator import DeltaGenerator

from catalog import (
    AUTO,
    CUSTOM_MODEL,
    NameLookupError,
    find_gpu,
    load_engines,
    load_gpus,
    load_models,
    load_quant_methods,
)
from catalog.models import NativeFormat
from i18n import N_
from selector import (
    LABELS,
    Advice,
    AdviceRequest,
    SelectorError,
    advise,
    memory_fit_figure,
    names_worded_by,
    nearest_params,
)
from selector.cli import layout_text
from selector.custom import custom_model
from selector.hfconfig import ConfigError, parse_config
from tco import TcoInputs
from tco.inputs import TpsSource
from tco.throughput import AdviceEstimate, OperatingPoint, estimate_advice
from ui.calibration import stored_calibrations
from ui.concepts import concept_note
from ui.errors import guarded, show_errors
from ui.first_paint import after_headline, stopped_at_headline
from ui.lang import _, lang_param, language
from ui.params import to_params
from ui.state import PageState

PAGE = "selector"
TABS = "_selector.tab"  # the open tab of the advice (lazy: the others do not run)
_YES_NO = {"build_engines", "qlora", "tie_embeddings"}
_NEAREST_NOTES = "_selector.nearest"  # alias -> (note, the value the link's name was read as), while it stands
_CONFIG_TEXT = "selector.config_text"
_CONFIG_FILE = "selector.config_file"
_CONFIG_RESULT = "_selector.config_result"  # (level, message, notes) of the last config.json read
MAX_CONFIG_BYTES = 2_000_000  # a config.json is a few kB; anything this large is not one

# The custom model's fields (URL parameters), as the form shows them: label and help.
_BASIC: dict[str, tuple[str, str]] = {
    "custom_name": (N_("Name"), N_("Shown in the advice.")),
    "params_b": (N_("Total parameters (billions)"), N_("Every weight, all experts included: memory follows this.")),
    "layers": (N_("Layers"), N_("num_hidden_layers in config.json.")),
    "hidden_size": (N_("Hidden size"), N_("hidden_size in config.json.")),
    "heads": (N_("Attention heads"), N_("num_attention_heads in config.json.")),
    "kv_heads": (N_("KV heads"), N_("num_key_value_heads: equal to the attention heads for MHA, fewer for GQA.")),
    "head_dim": (N_("Head size"), N_("head_dim, or hidden size / attention heads when config.json omits it.")),
    "intermediate_size": (
        N_("Dense MLP size"),
        N_("intermediate_size: the feed-forward width of layers without experts."),
    ),
    "vocab_size": (N_("Vocabulary"), N_("vocab_size in config.json.")),
    "max_context": (N_("Longest context (tokens)"), N_("max_position_embeddings in config.json.")),
}
_MOE: dict[str, tuple[str, str]] = {
    "experts": (N_("Routed experts (0 = dense model)"), N_("n_routed_experts / num_experts / num_local_experts.")),
    "experts_per_token": (N_("Experts per token"), N_("num_experts_per_tok: how many routed experts each token uses.")),
    "shared_experts": (N_("Shared experts"), N_("Experts every token passes through (n_shared_experts).")),
    "moe_intermediate_size": (N_("One expert's MLP size"), N_("moe_intermediate_size in config.json.")),
    "moe_layers": (N_("Layers with experts (0 = all)"), N_("The others are dense (first_k_dense_replace, ...).")),
    "active_params_b": (
        N_("Active parameters per token (billions)"),
        N_("What one token computes with (compute follows this); 0 counts every parameter as active."),
    ),
}
_MLA: dict[str, tuple[str, str]] = {
    "kv_lora_rank": (
        N_("Compressed KV size (0 = no MLA)"),
        N_("kv_lora_rank: MLA caches this latent instead of K and V."),
    ),
    "rope_head_dim": (
        N_("Rotary part of a head"),
        N_("qk_rope_head_dim: cached next to the latent (64 in DeepSeek-V3)."),
    ),
}
_WINDOW: dict[str, tuple[str, str]] = {
    "sliding_window": (
        N_("Window (tokens; 0 = none)"),
        N_("Layers with a window keep at most this many tokens of KV."),
    ),
    "sliding_window_layers": (N_("Layers that use the window"), N_("The other layers attend to the whole context.")),
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
_KV_HELP: dict[str, str] = {
    "MLA": N_("Multi-head latent attention: one compressed latent per token and layer instead of K and V."),
    "GQA": N_("Grouped-query attention: several query heads share each KV head."),
    "MHA": N_("Multi-head attention: one KV head per query head."),
}


def _gpu_label(gpu_id: str) -> str:
    gpu = find_gpu(gpu_id)
    return f"{gpu.name} · {gpu.memory_gb:g} GB"


def _model_labels() -> dict[str, str]:
    """The model choices as the select box shows them, worded now (AppTest calls format_func outside the run)."""
    labels = {m.id: f"{m.name} · {m.params_b:g}B" for m in load_models()}
    return {**labels, CUSTOM_MODEL: _("Custom model (its config.json, or by hand)")}


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
    unchanged = _("The model's fields are unchanged.")
    if len(data) > MAX_CONFIG_BYTES:
        too_big = _("This file is {size} bytes; a config.json is a few kB.").format(size=f"{len(data):,}")
        return "error", _("{first} {second}").format(first=too_big, second=unchanged), ()
    try:
        parsed = parse_config(data, name=name, tr=_)
        request = AdviceRequest.model_validate({**parsed.fields, "model": CUSTOM_MODEL})
        custom_model(request, tr=_)  # every field adds up (KV heads divide the heads, experts per token, ...)
    except ConfigError as exc:
        return "error", _("{first} {second}").format(first=exc, second=unchanged), ()
    except ValidationError as exc:
        problems = "; ".join(
            f"{error['loc'][0] if error.get('loc') else 'config'}: {str(error['msg']).removeprefix('Value error, ')}"
            for error in exc.errors()
        )
        cannot = _("config.json gives values the advisor cannot take ({problems}).").format(problems=problems)
        return "error", _("{first} {second}").format(first=cannot, second=unchanged), ()
    except SelectorError as exc:
        problem = _("config.json does not add up: {problem}").format(problem=exc)
        return "error", _("{first} {second}").format(first=problem, second=unchanged), ()
    for alias in (*parsed.fields, "model"):
        st.session_state[K(alias)] = _to_widget(alias, getattr(request, alias))
    what = parsed.architecture or _("an unnamed architecture")
    family = f" ({parsed.family})" if parsed.family else _(" (a family the reader does not know)")
    size = _("{params}B parameters").format(params=f"{request.params_b:,.4g}")
    if request.experts:
        size += _(", {experts} experts").format(experts=request.experts)
    return "success", _("Read {what}{family}: {size}.").format(what=what, family=family, size=size), parsed.notes


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
        st.caption(_("Note: {note}").format(note=note))


def _fields(fields: dict[str, tuple[str, str]]) -> None:
    """One number input per field, one under the other (the sidebar is too narrow for two columns of them)."""
    for alias, (label, help_text) in fields.items():
        _number(alias, _(label), _(help_text))


def _keep_custom_fields() -> None:
    """Keep the custom model's values while its form is hidden (Streamlit drops the state of unrendered widgets)."""
    for alias in CUSTOM_FIELDS:
        if K(alias) in st.session_state:
            st.session_state[K(alias)] = st.session_state[K(alias)]


def _custom_form() -> None:
    """The custom model: read from a config.json, or entered field by field."""
    st.markdown(_("**Describe the model**"))
    with st.expander(_("Read its config.json"), icon=":material/upload_file:", expanded=True):
        st.file_uploader(
            _("Upload config.json"),
            type=["json"],
            key=_CONFIG_FILE,
            on_change=_read_config,
            args=("file",),
            help=_(
                "The model's config.json, as the Hugging Face Hub publishes it. Only this app reads it; nothing "
                "is fetched from the Hub."
            ),
        )
        st.text_area(
            _("…or paste it"),
            key=_CONFIG_TEXT,
            height=120,
            on_change=_read_config,
            args=("text",),
            placeholder='{"architectures": ["Qwen3MoeForCausalLM"], "hidden_size": 2048, ...}',
            help=_(
                "Press Ctrl+Enter (or click outside the box) to read it. The fields below fill in and the "
                "link keeps them."
            ),
        )
        _config_result()
    name_label, name_help = _BASIC["custom_name"]
    st.text_input(_(name_label), key=K("custom_name"), max_chars=120, help=_(name_help))
    _fields({k: v for k, v in _BASIC.items() if k != "custom_name"})
    st.selectbox(
        _("Published weights"),
        list(get_args(NativeFormat)),
        key=K("native_format"),
        help=_("The format the official checkpoint ships in (gpt-oss: MXFP4 experts, DeepSeek-V3: FP8)."),
    )
    st.toggle(
        _("Tied embeddings"),
        key=K("tie_embeddings"),
        help=_("tie_word_embeddings: the output head reuses the input embeddings (one copy in memory)."),
    )
    state_of = st.session_state
    with st.expander(_("Mixture of experts (MoE)"), expanded=bool(state_of.get(K("experts")))):
        _fields(_MOE)
    with st.expander(_("Multi-head latent attention (MLA)"), expanded=bool(state_of.get(K("kv_lora_rank")))):
        _fields(_MLA)
    with st.expander(_("Sliding-window attention"), expanded=bool(state_of.get(K("sliding_window")))):
        _fields(_WINDOW)


def _inputs_form() -> None:
    st.subheader(_("Hardware and model"))
    st.selectbox("GPU", [g.id for g in load_gpus()], key=K("gpu"), format_func=_gpu_label)
    st.number_input(_("GPUs (one node)"), key=K("gpus"), step=1, min_value=1)
    models = _model_labels()
    st.selectbox(_("Model"), list(models), key=K("model"), format_func=models.__getitem__)
    if st.session_state.get(K("model")) == CUSTOM_MODEL:
        _custom_form()
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


def _card(advice: Advice) -> bool:
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
        st.write(advice.summary(tr=_))
        cols = st.columns(4)
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
            advice.kv_cache_dtype,
            border=True,
            help=_("{bytes} bytes per token for the whole model").format(bytes=f"{advice.memory.kv_bytes_per_token:,}"),
        )
        cols[3].metric(
            _("Max sequences"),
            f"{advice.memory.max_concurrent_sequences:,}" if advice.memory.fits else _("does not fit"),
            border=True,
            help=_("concurrent sequences of {tokens} tokens; target {target}").format(
                tokens=advice.memory.context_tokens, target=advice.request.concurrency
            ),
        )
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
        _estimates(advice, chosen, estimate_advice(advice, runner_up=True, calibrations=calibrations))
        _price_link(advice, chosen)
    return True


def _estimate_label(point: OperatingPoint) -> str:
    """How the page names the estimate: its band and what it rests on (tco's `label`, in the page's language)."""
    return point.label_text(_)


def _estimate_short_label(point: OperatingPoint) -> str:
    """The estimate's short name (tco's `short_label`), in the page's language."""
    band = point.estimate.band
    return _("estimate (band {low}–{high}×, basis {kind})").format(
        low=f"{band.low_ratio:.2f}", high=f"{band.high_ratio:.2f}", kind=point.estimate.basis.kind_text(_)
    )


def _missing(est: AdviceEstimate) -> str:
    """Why there is no estimate (tco's `missing`), in the page's language."""
    if est.missing == f"no estimate for {est.engine_name}":
        return _("no estimate for {engine}").format(engine=est.engine_name)
    prefix = f"no estimate for {est.engine_name}: "
    if est.missing.startswith(prefix):
        problem = est.missing.removeprefix(prefix)
        return _("no estimate for {engine}: {problem}").format(engine=est.engine_name, problem=problem)
    return est.missing


def _estimate_column(title: str, est: AdviceEstimate) -> None:
    st.markdown(_("**{title}: {engine}, {quant}**").format(title=title, engine=est.engine_name, quant=est.quant))
    if est.point is None:
        st.caption(_missing(est))
        return
    point, level = est.point, est.at_target
    cols = st.columns(2)
    at = _("at concurrency {concurrency}").format(concurrency=est.target_concurrency)
    if level is not None:
        cols[0].metric(_("TTFT p50 (estimate)"), f"{level.ttft_ms.p50:,.0f} ms", border=True, help=at)
        cols[1].metric(_("TPOT p50 (estimate)"), f"{level.tpot_ms.p50:,.1f} ms", border=True, help=at)
        cols = st.columns(2)
        cols[0].metric(
            _("Output tok/s (estimate)"),
            f"{level.output_tok_s:,.0f}",
            border=True,
            help=_("{at}, per replica").format(at=at),
        )
    best = point.estimate.best_concurrency_within_slo
    cols[1].metric(
        _("Max in SLO (estimate)"),
        _("none") if best is None else f"{best:,}",
        border=True,
        help=_("the highest concurrency within the SLO: {tok_s} tok/s per replica there").format(
            tok_s=f"{point.output_tok_s:,.0f}"
        )
        if best
        else _("misses the SLO even at concurrency 1"),
    )
    st.caption(_("{label}.").format(label=_estimate_label(point)))


def _estimates(advice: Advice, chosen: AdviceEstimate, runner_up: AdviceEstimate) -> None:
    """The estimates for the recommendation and the runner-up engine: latency, throughput, the SLO load."""
    st.markdown(_("**:material/query_stats: Estimated performance**"))
    slo = chosen.point.estimate.request.slo if chosen.point else None
    target = (
        _("; SLO TTFT p50 ≤ {ttft_p50} ms, p99 ≤ {ttft_p99} ms, TPOT p50 ≤ {tpot_p50} ms").format(
            ttft_p50=f"{slo.ttft_p50_ms:g}", ttft_p99=f"{slo.ttft_p99_ms:g}", tpot_p50=f"{slo.tpot_p50_ms:g}"
        )
        if slo
        else ""
    )
    st.caption(
        _(
            "Estimates, not measurements: requests of {input} input and {output} output tokens (your context) at "
            "{concurrency} concurrent sequences{target}."
        ).format(
            input=f"{chosen.input_tokens:,}",
            output=f"{chosen.output_tokens:,}",
            concurrency=advice.request.concurrency,
            target=target,
        )
    )
    left, right = st.columns(2)
    with left:
        _estimate_column(_("Recommended"), chosen)
    with right:
        _estimate_column(_("Runner-up"), runner_up)


def _price_link(advice: Advice, chosen: AdviceEstimate) -> None:
    """The cost page with the GPU, its catalog price and, when there is one, the estimated throughput."""
    gpu = find_gpu(advice.gpu_id)
    request = advice.request
    values: dict[str, object] = {
        "gpu": gpu.id,
        "gpus": request.gpus,
        "in_tokens": request.in_tokens_per_request,
        "out_tokens": request.out_tokens_per_request,
        "traffic": request.traffic_requests_per_day,
    }
    if gpu.has_price:
        values.update(price=gpu.price_low, currency=gpu.price_currency)
    point = chosen.point
    custom = advice.request.model == CUSTOM_MODEL
    if point is not None:
        values.update(
            gpus=point.estimate.layout.gpus,
            tps=point.output_tok_s,
            engine=chosen.engine,
            engine_version=advice.request.engine_version,
            quant_method=point.estimate.quant,
        )
        # the cost page estimates catalog models only: a custom model's throughput arrives as a figure to price
        values |= (
            {"tps_source": TpsSource.ENTERED}
            if custom
            else {"tps_source": TpsSource.ESTIMATE, "model": advice.model_id}
        )
    params = to_params(TcoInputs.model_validate(values))
    st.page_link(
        "views/tco.py", label=_("Price this"), icon=":material/payments:", query_params={**params, **lang_param()}
    )
    if point is not None:
        where = _("the highest within the SLO") if point.meets_slo else _("misses the SLO")
        st.caption(
            _(
                "Carries the estimated {tok_s} tok/s per replica at concurrency {concurrency} ({where}), an {label}."
            ).format(
                tok_s=f"{point.output_tok_s:,.0f}",
                concurrency=point.concurrency,
                where=where,
                label=_estimate_short_label(point),
            )
        )
        if custom:
            st.caption(_("The cost page takes it as a figure to price: it estimates the catalog's models only."))
    if not gpu.has_price:
        st.caption(_("No public hourly price on record for {gpu}; enter yours on the cost page.").format(gpu=gpu.name))


def _reasons(advice: Advice) -> None:
    for decision in advice.reasons:
        topic = _(_TOPICS.get(decision.topic, decision.topic.replace("_", " ")))
        with st.expander(_("{topic}: {choice}").format(topic=topic, choice=decision.shown or decision.choice)):
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


def _memory(advice: Advice) -> None:
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


def _launch(advice: Advice) -> None:
    st.markdown(f"**{advice.engine_name}**")
    st.code(advice.launch.shell, language="bash")
    for note in advice.launch.notes:
        st.caption(note)
    if advice.runner_up_launch is not None:
        st.markdown(_("**Runner-up: {engine}**").format(engine=advice.runner_up_name))
        st.code(advice.runner_up_launch.shell, language="bash")
        for note in advice.runner_up_launch.notes:
            st.caption(note)


def _engines_table(advice: Advice) -> None:
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


def _nearest_names() -> None:
    """Read an unknown name in the link as its clear nearest match before the page reads the link; note it."""
    fixed, notes = nearest_params(st.query_params.to_dict(), tr=_)
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
            return _("{name} cannot be used here, so the advice below is for {engine} (see why below).").format(
                name=name, engine=advice.engine_name
            )
        return _("The advice below is for {engine}.").format(engine=advice.engine_name)
    if alias == "quant":
        if advice.quantization != value:
            name = next((q.name for q in load_quant_methods() if q.id == value), value)
            return _("{name} cannot be used here, so the advice below uses {method}.").format(
                name=name, method=advice.quantization_name
            )
        return _("The advice below uses {method}.").format(method=advice.quantization_name)
    if alias == "gpu":
        return _("The advice below is for the {gpu}.").format(gpu=advice.gpu_name)
    return _("The advice below is for {model}.").format(model=advice.model_name)


def _show_nearest(slot: DeltaGenerator, request: AdviceRequest | None, advice: Advice | None) -> None:
    """One warning per name read as its nearest match, saying what is shown; dropped once the user changes it."""
    notes: dict[str, tuple[str, str]] = st.session_state.get(_NEAREST_NOTES, {})
    if request is not None:
        notes = {a: (n, v) for a, (n, v) in notes.items() if str(getattr(request, a)) == v}
        st.session_state[_NEAREST_NOTES] = notes
    for alias, (note, value) in notes.items():
        shown = _shown_for(alias, value, advice)
        slot.warning(_("{first} {second}").format(first=note, second=shown) if shown else note, icon="⚠️")


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


def body() -> None:
    """Draw the page."""
    st.title(_("What should we run?"))
    st.caption(
        _(
            "The handbook's rules (sections 1.2, 3.2, 4, 5, 6.2) checked against today's engines: GPU, model and "
            "workload in; engine, quantization, KV cache, speculative decoding, memory fit and a launch command out. "
            "The URL keeps every input."
        )
    )
    nearest_slot = st.container()
    _nearest_names()
    with names_worded_by(_):  # an unknown GPU, model, engine or quantization in the link, said in the page's language
        state.load()
    state.show_notes()
    _keep_custom_fields()
    _advice(nearest_slot)
    # The form comes after the advice (the sidebar keeps its place): a shared link's card is not held back by it.
    if not stopped_at_headline():
        with st.sidebar:
            _inputs_form()


def _advice(nearest_slot: DeltaGenerator) -> None:
    """The advice for the form's inputs, or why there is none."""
    with names_worded_by(_):
        request, errors = state.read(_from_widget)
    if request is None:
        _show_nearest(nearest_slot, None, None)
        show_errors(_("Check these inputs; the advice updates once they are valid."), errors)
        return
    try:
        advice = advise(request, language=language())
    except (SelectorError, NameLookupError) as exc:
        _show_nearest(nearest_slot, request, None)
        st.error(str(exc), icon="🚫")
        return
    _show_nearest(nearest_slot, request, advice)
    for warning in advice.warnings:
        st.warning(warning, icon="⚠️")
    if not _card(advice):
        return
    # Lazy tabs: only the open one runs, so the recommendation is not held back by charts (docs/performance.md).
    why, memory, launch, engines = st.tabs(
        [_("Why"), _("Memory fit"), _("Launch command"), _("Engines compared")], key=TABS, on_change="rerun"
    )
    with why:
        _reasons(advice)
    if memory.open:
        with memory:
            _memory(advice)
    if launch.open:
        with launch:
            _launch(advice)
    if engines.open:
        with engines:
            _engines_table(advice)


guarded(body)
