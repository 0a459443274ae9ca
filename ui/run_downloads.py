"""A run's download buttons: the JSON file, CSV tables and the other tools' formats, each built on click."""

from collections.abc import Callable
from functools import partial

import streamlit as st

from probes.export import levels_csv, power_csv, result_json, samples_csv, turns_csv
from probes.export_br import reports_json
from probes.export_vllm import results_json
from probes.models import RunResult
from ui.lang import _
from ui.probe_views import full_run


def downloads(result: RunResult, key: str, *, formats: bool = False) -> None:
    """Export buttons: the JSON file (the CLI's schema), levels CSV and requests CSV; built on click.

    formats: also the other tools' formats `python -m probes export` writes (llm-d Benchmark Report v0.2.1, vLLM
    bench serve's result JSON). The labels follow the session's language; the files stay English (machine contracts).
    """
    stem = f"probe-{(result.run_id or 'run')[:12]}"
    labels = _ if st.session_state.get(f"{key}.export.labels") else None  # a second header row, if asked for
    exports: list[tuple[str, Callable[[RunResult], str], str, str, str]] = [
        (_("Download JSON"), result_json, ".json", "application/json", "json"),
        (_("Download levels CSV"), partial(levels_csv, labels=labels), "-levels.csv", "text/csv", "levels"),
        (_("Download requests CSV"), partial(samples_csv, labels=labels), "-requests.csv", "text/csv", "requests"),
    ]
    if formats:
        several = len(result.levels) > 1  # vLLM: one result per line, as --append-result writes them
        exports += [
            (
                _("Download llm-d Benchmark Report"),
                _one_run(reports_json),
                "-llmd-br-0.2.1.json",
                "application/json",
                "br",
            ),
            (
                _("Download vLLM result JSON"),
                _one_run(results_json),
                "-vllm.jsonl" if several else "-vllm.json",
                "application/json",
                "vllm",
            ),
        ]
    if any(level.turns for level in result.levels):
        exports.append((_("Download turns CSV"), partial(turns_csv, labels=labels), "-turns.csv", "text/csv", "turns"))
    if result.settings.dcgm_url:
        exports.append((_("Download power CSV"), partial(power_csv, labels=labels), "-power.csv", "text/csv", "power"))
    for col, (label, build, suffix, mime, name) in zip(st.columns(len(exports)), exports, strict=True):
        col.download_button(
            label,
            partial(_built, build, result),
            file_name=f"{stem}{suffix}",
            mime=mime,
            key=f"{key}.export.{name}",
            on_click="ignore",
            icon=":material/download:",
        )
    st.toggle(
        _("CSV: add a row of column labels in this language"),
        key=f"{key}.export.labels",
        help=_("The first row keeps the English column keys that scripts read; the labels come in a second row."),
    )


def _one_run(build: Callable[[list[RunResult]], str]) -> Callable[[RunResult], str]:
    """An export of several runs applied to one."""
    return lambda result: build([result])


def _built(build: Callable[[RunResult], str], result: RunResult) -> str:
    """An export of the whole run, samples loaded only now (the button was clicked)."""
    return build(full_run(result))
