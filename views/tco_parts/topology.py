"""/tco's note for a unit of separate prefill and decode pools (a /compare link with topology=disagg)."""

import streamlit as st

from tco.inputs import TcoInputs
from ui.lang import _


def topology_note(inputs: TcoInputs) -> bool:
    """Say the throughput is a two-pool unit's extrapolated estimate; True when it did (nothing to re-estimate)."""
    if inputs.topology != "disagg":
        return False
    st.info(
        _(
            "Throughput {tok_s} tok/s per unit of {gpus} GPUs is an estimate of separate prefill and decode pools "
            "({pools}), extrapolated from the one-pool model: see docs/disaggregated.md for its error."
        ).format(tok_s=f"{inputs.output_tok_s_per_replica:,.6g}", gpus=inputs.gpus_per_replica, pools=inputs.pools),
        icon=":material/query_stats:",
    )
    return True
