"""The advisor's custom model: read from a config.json, or entered field by field."""

from pathlib import Path
from typing import get_args

import streamlit as st
from pydantic import ValidationError

from catalog import CUSTOM_MODEL
from catalog.models import NativeFormat
from i18n import N_
from selector import AdviceRequest, SelectorError
from selector.custom import custom_model
from selector.hfconfig import ConfigError, parse_config
from ui.lang import _
from views.selector_parts.state import K, to_widget

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
        st.session_state[K(alias)] = to_widget(alias, getattr(request, alias))
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


def keep_custom_fields() -> None:
    """Keep the custom model's values while its form is hidden (Streamlit drops the state of unrendered widgets)."""
    for alias in CUSTOM_FIELDS:
        if K(alias) in st.session_state:
            st.session_state[K(alias)] = st.session_state[K(alias)]


def custom_form() -> None:
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
