"""The cost page's cost per million tokens by kind: input, cached input, output, blended; full load and traffic."""

import streamlit as st

from tco import TcoResult
from ui.lang import _
from ui.token_table import token_method, token_table


def tokens_by_kind(result: TcoResult) -> None:
    """The by-kind table, how it was split, and how it relates to the headline's figure."""
    inputs = result.inputs
    st.subheader(_("Per million tokens, by kind"))
    token_table(result.tokens, inputs.currency, "tco.tokens")
    token_method(result.tokens, inputs.in_tokens_per_request, inputs.out_tokens_per_request)
    st.caption(
        _(
            "The prefill share is set under Optimization levers. The headline's per million output tokens puts all "
            "GPU time on output tokens, as the handbook does."
        )
    )
