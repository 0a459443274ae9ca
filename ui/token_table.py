"""Cost per million tokens by kind as a table (input, cached input, output, blended; full load and traffic)."""

from collections.abc import Callable

import pandas as pd
import streamlit as st

from tco import format_money
from tco.inputs import SplitBasis
from tco.tokens import TokenCosts, TokensByKind, TokenSplit
from ui.lang import _, language

NONE = "—"  # no input tokens, or no traffic: nothing to divide


def _cells(costs: TokenCosts | None, currency: str) -> list[str]:
    if costs is None:
        return [NONE] * 4
    figures = (
        costs.input_per_million,
        costs.cached_input_per_million,
        costs.output_per_million,
        costs.blended_per_million,
    )
    return [NONE if f is None else format_money(f, currency, language=language()) for f in figures]


def split_basis_text(split: TokenSplit) -> str:
    """'estimated split (concurrency 24)' or 'assumed prefill share 68%': what the by-kind figures rest on."""
    if split.basis == SplitBasis.ESTIMATE:
        return _("estimated split (concurrency {concurrency})").format(concurrency=split.concurrency or 1)
    return _("assumed prefill share {share}%").format(share=f"{split.prefill_share * 100:.3g}")


def token_table(tokens: TokensByKind, currency: str, key: str) -> None:
    """The four kinds at both loads, each column saying which load it is."""
    kinds = [_("input"), _("cached input"), _("output"), _("blended (this traffic's mix)")]
    table = pd.DataFrame(
        {
            _("kind"): kinds,
            _("one replica at full load"): _cells(tokens.full_load, currency),
            _("at your traffic (effective)"): _cells(tokens.at_traffic, currency),
        }
    )
    st.dataframe(table, hide_index=True, key=key)


def _basis_words(tokens: TokensByKind, in_tokens: int, out_tokens: int) -> str:
    share = f"{tokens.prefill_share * 100:.3g}"
    if tokens.split.basis == SplitBasis.ESTIMATE:
        return _(
            "**Estimated split:** the step-time model's prefill, cached-prefix and decode times for a request of {ins} "
            "input and {outs} output tokens at concurrency {concurrency}, the operating point the throughput is for: "
            "its input tokens take {share}% of its GPU time. A cached input token costs its KV read and the attention "
            "over it."
        ).format(ins=f"{in_tokens:,}", outs=f"{out_tokens:,}", concurrency=tokens.split.concurrency or 1, share=share)
    return _(
        "**Assumed split:** the prefill share puts {share}% of a request's GPU time on its {ins} input tokens and the "
        "rest on its {outs} output tokens. A cached input token skips its prefill, so no GPU time is put on it."
    ).format(ins=f"{in_tokens:,}", outs=f"{out_tokens:,}", share=share)


def token_method(tokens: TokensByKind, in_tokens: int, out_tokens: int) -> None:
    """How the figures were split (the basis, named), and the what-if of a cached share, in one caption."""
    text = (
        _basis_words(tokens, in_tokens, out_tokens)
        + " "
        + _(
            "The KV memory a cached prefix holds is not priced. Full load: one replica busy all the time. At your "
            "traffic: the fleet your peak needs, idle headroom included, divided over the tokens it serves ({factor}× "
            "the full-load figures)."
        ).format(factor=NONE if tokens.idle_factor is None else f"{tokens.idle_factor:.2f}")
    )
    if tokens.cached_share > 0:
        text += " " + _("What-if: {pct}% of each prompt is assumed to hit the prefix cache (`cached`).").format(
            pct=f"{tokens.cached_share * 100:g}"
        )
    st.caption(text)


def split_inputs(key: Callable[[str], str], *, automatic: bool) -> None:
    """The split's basis (`split`) and the cached share of input (`cached`), as both cost pages ask them.

    `automatic`: no basis chosen is allowed (the cost page: the estimate's split when the throughput is one).
    """
    words = {SplitBasis.ESTIMATE.value: _("estimated"), SplitBasis.SHARE.value: _("assumed share")}
    st.segmented_control(
        _("Split of GPU time by kind of token"),
        list(words),
        key=key("split"),
        format_func=words.__getitem__,
        required=not automatic,
        help=(
            _(
                "Estimated: the step-time model's prefill, cached-prefix and decode times at the operating point. "
                "Assumed share: the prefill share below. None chosen: estimated when the throughput is an estimate "
                "or measured, else the assumed share."
            )
            if automatic
            else _(
                "Estimated: each option's own prefill, cached-prefix and decode times at its operating point. "
                "Assumed share: the prefill share for every option."
            )
        ),
    )
    st.number_input(
        _("Cached share of input tokens (%) · what-if"),
        key=key("cached"),
        step=10.0,
        format="%.4g",
        help=_(
            "The share of each prompt that hits the prefix cache: an assumption about your traffic, 0 unless you "
            "know its hit ratio. An estimate includes the hits; a cached token is priced at the GPU time it takes."
        ),
    )
