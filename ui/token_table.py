"""Cost per million tokens by kind as a table (input, cached input, output, blended; full load and traffic)."""

import pandas as pd
import streamlit as st

from tco import format_money
from tco.tokens import TokenCosts, TokensByKind
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


def token_method(tokens: TokensByKind, in_tokens: int, out_tokens: int) -> None:
    """How the figures were split, in one caption."""
    st.caption(
        _(
            "A request's GPU time is split between prefill (its {ins} input tokens: {share}% of the time, the "
            "prefill share) and decode (its {outs} output tokens). A cached input token skips its prefill, so no "
            "GPU time is put on it (the KV memory it holds is not priced). Full load: one replica busy all the "
            "time. At your traffic: the fleet your peak needs, idle headroom included, divided over the tokens it "
            "serves ({factor}× the full-load figures)."
        ).format(
            ins=f"{in_tokens:,}",
            outs=f"{out_tokens:,}",
            share=f"{tokens.prefill_share * 100:g}",
            factor=NONE if tokens.idle_factor is None else f"{tokens.idle_factor:.2f}",
        )
    )
