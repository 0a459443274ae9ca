"""--workers on the pages: one row per Ray worker beside the merged figures, live and stored; a partial run said."""

from collections.abc import Sequence

import pandas as pd
import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from probes.models import RunResult
from probes.progress import WorkerProgress
from probes.wording import note_text
from ui.lang import _
from ui.text import escape_markdown


def partial_warning(result: RunResult) -> None:
    """A run that lost a worker says which, when, and that its later requests are missing."""
    if result.partial:
        reason = note_text(result.partial_reason, _) if result.partial_reason else _("a worker was lost")
        st.warning(_("Partial run: {reason}.").format(reason=escape_markdown(reason)), icon="⚠️")


def workers_table(result: RunResult, key: str) -> None:
    """One row per worker of the run (the merged figures are the levels' above)."""
    rows = [
        {
            _("Worker"): w.id,
            _("Node"): w.node,
            _("Requests"): w.requests,
            _("Failed"): w.errors,
            _("Client CPU (% of a core)"): w.cpu_percent,
            _("Clock offset (ms)"): w.clock_offset_ms,
            _("Send lag p50 (ms)"): w.schedule_lag_ms.p50,
            _("Send lag p99 (ms)"): w.schedule_lag_ms.p99,
        }
        for w in result.workers
    ]
    st.dataframe(pd.DataFrame(rows), hide_index=True, key=f"{key}.workers")
    st.caption(
        _(
            "Each worker sent its exact share of every level from one shared start; every percentile above is "
            "computed from all their requests merged. A worker above 85% of a core is client-bound: its latencies "
            "may be inflated."
        )
    )


def live_workers(box: DeltaGenerator, workers: Sequence[WorkerProgress]) -> None:
    """The running level per worker and in total: sent, finished, errors, client CPU."""
    if not workers:
        return
    rows = [
        {
            _("Worker"): str(w.id),
            _("Node"): w.node,
            _("Sent"): w.sent,
            _("Finished"): w.finished,
            _("Failed"): w.errors,
            _("Client CPU (% of a core)"): None if w.cpu_percent is None else round(w.cpu_percent, 1),
            _("State"): _("lost") if not w.alive else _("client-bound") if w.client_bound else _("ok"),
        }
        for w in workers
    ]
    rows.append(
        {
            _("Worker"): _("total"),
            _("Node"): "",
            _("Sent"): sum(w.sent for w in workers),
            _("Finished"): sum(w.finished for w in workers),
            _("Failed"): sum(w.errors for w in workers),
            _("Client CPU (% of a core)"): None,
            _("State"): "",
        }
    )
    box.dataframe(pd.DataFrame(rows), hide_index=True, key="probe.live.workers")
