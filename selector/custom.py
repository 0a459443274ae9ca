"""A model the user describes (by hand or from its config.json) as a ModelSpec, each field checked by name."""

from catalog.models import CUSTOM_MODEL, ModelSpec
from i18n import Translate, identity
from selector.errors import SelectorError
from selector.inputs import AdviceRequest


def _problems(r: AdviceRequest, tr: Translate = identity) -> list[str]:
    out: list[str] = []
    if not r.kv_lora_rank and (r.kv_heads > r.heads or r.heads % r.kv_heads):
        out.append(
            "kv_heads: "
            + tr(
                "{heads} attention heads cannot be shared by {kv_heads} KV heads (KV heads must divide the attention "
                "heads)"
            ).format(heads=r.heads, kv_heads=r.kv_heads)
        )
    if r.experts:
        if not 1 <= r.experts_per_token <= r.experts:
            out.append(
                "experts_per_token: "
                + tr("must be 1-{experts} for a model with {experts} experts").format(experts=r.experts)
            )
        if r.moe_layers > r.layers:
            out.append("moe_layers: " + tr("at most the {layers} layers").format(layers=r.layers))
        if not r.moe_intermediate_size:
            out.append("moe_intermediate_size: " + tr("one expert's MLP size is needed when experts > 0"))
    elif r.experts_per_token or r.active_params_b:
        out.append("experts: " + tr("set the routed experts (experts_per_token and active_params_b describe experts)"))
    if r.active_params_b > r.params_b:
        out.append(
            "active_params_b: "
            + tr("{active}B cannot exceed the {total}B total").format(
                active=f"{r.active_params_b:g}", total=f"{r.params_b:g}"
            )
        )
    if r.kv_lora_rank and not r.rope_head_dim:
        out.append("rope_head_dim: " + tr("MLA needs its rotary head size (qk_rope_head_dim, 64 for DeepSeek-V3)"))
    if r.sliding_window_layers > r.layers:
        out.append("sliding_window_layers: " + tr("at most the {layers} layers").format(layers=r.layers))
    if r.sliding_window and not r.sliding_window_layers:
        out.append("sliding_window_layers: " + tr("say how many layers use the window"))
    return out


def custom_model(request: AdviceRequest, tr: Translate = identity) -> ModelSpec:
    """The ModelSpec a request's custom fields describe; SelectorError names every field that does not add up.

    `tr` words the error (field names stay as the URL spells them); English by default.
    """
    problems = _problems(request, tr)
    if problems:
        raise SelectorError(tr("Custom model: {problems}.").format(problems="; ".join(problems)))
    r = request
    return ModelSpec(
        id=CUSTOM_MODEL,
        name=r.custom_name or f"Custom {r.params_b:g}B",
        architecture="custom",
        params_b=r.params_b,
        active_params_b=r.active_params_b if r.experts else 0.0,
        layers=r.layers,
        hidden_size=r.hidden_size,
        attention_heads=r.heads,
        kv_heads=r.heads if r.kv_lora_rank else r.kv_heads,
        head_dim=r.head_dim,
        intermediate_size=r.intermediate_size,
        moe_intermediate_size=r.moe_intermediate_size if r.experts else 0,
        experts=r.experts,
        shared_experts=r.shared_experts if r.experts else 0,
        experts_per_token=r.experts_per_token if r.experts else 0,
        moe_layers=(r.moe_layers or r.layers) if r.experts else 0,
        kv_lora_rank=r.kv_lora_rank,
        qk_rope_head_dim=r.rope_head_dim if r.kv_lora_rank else 0,
        sliding_window=r.sliding_window,
        sliding_window_layers=r.sliding_window_layers if r.sliding_window else 0,
        vocab_size=r.vocab_size,
        tie_word_embeddings=r.tie_embeddings.value == "yes",
        max_context=r.max_context,
        native_format=r.native_format,
        source="entered by the user" if not r.custom_name else f"{r.custom_name}: entered or read from its config.json",
    )
