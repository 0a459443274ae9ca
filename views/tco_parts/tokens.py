"""The cost page's cost per million tokens by kind: input, cached input, output, blended; full load and traffic."""

import streamlit as st

from tco import TcoResult
from ui.lang import _
from ui.token_table import split_basis_text, token_method, token_table


def tokens_by_kind(result: TcoResult, no_estimate: str | None = None) -> None:
    """The by-kind table, the basis of its split (named), and how it relates to the headline's figure.

    `no_estimate`: why the estimated split asked for could not be had (the assumed share is used instead).
    """
    inputs, tokens = result.inputs, result.tokens
    st.subheader(_("Per million tokens, by kind"))
    st.markdown(_("Split: **{basis}**").format(basis=split_basis_text(tokens.split)))
    if no_estimate is not None:
        st.warning(
            _("No estimated split for these inputs ({reason}): the assumed prefill share is used.").format(
                reason=no_estimate
            ),
            icon="⚠️",
        )
    token_table(tokens, inputs.currency, "tco.tokens")
    token_method(tokens, inputs.in_tokens_per_request, inputs.out_tokens_per_request)
    st.caption(
        _(
            "The split and the cached share are set under Optimization levers. The headline's per million output "
            "tokens puts all GPU time on output tokens, as the handbook does."
        )
    )
