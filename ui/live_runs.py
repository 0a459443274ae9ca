"""Probe runs alive in this app process, by run id, so any session (a reloaded tab, /runs) can follow or cancel them."""

import threading

import streamlit as st

from probes import ProcessProbeRun


class LiveRuns:
    """A thread-safe map of run id -> ProcessProbeRun; finished runs drop out when next looked at."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._runs: dict[str, ProcessProbeRun] = {}

    def add(self, run_id: str, run: ProcessProbeRun) -> None:
        """Remember a started run."""
        with self._lock:
            self._runs = {k: v for k, v in self._runs.items() if not v.done()}
            self._runs[run_id] = run

    def get(self, run_id: str) -> ProcessProbeRun | None:
        """The run if it is still going in this process."""
        with self._lock:
            run = self._runs.get(run_id)
            if run is not None and run.done():
                del self._runs[run_id]
                return None
            return run


@st.cache_resource(show_spinner=False)
def live_runs() -> LiveRuns:
    """The process-wide registry."""
    return LiveRuns()
