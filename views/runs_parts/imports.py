"""The /runs page's import section (other tools' result files as runs) and an imported run's provenance line."""

import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import streamlit as st

from db.imports import StoredImport, import_of, store_imported
from probes.deployment import Deployment, deployment_fields, display_names
from probes.import_cli import ALREADY_IMPORTED, ImportReport, import_paths
from probes.importers.aiperf import AGGREGATE_FILE, RECORDS_FILE
from probes.importers.registry import format_choices, format_ids
from probes.models import RunResult
from ui.lang import _
from ui.resources import get_engine
from ui.text import escape_markdown

IMPORT_COMMAND = "python -m probes import FILE..."

KEY = "runs.import"
REPORT = "_runs.import_report"
MAX_FILE_MB = 200


def provenance_text(where: StoredImport) -> str:
    """An imported run in one line: the tool and release, the file, when, and aggregate-only when it is."""
    text = _("Imported: written by {tool}, file {file}, imported {when} UTC.").format(
        tool=escape_markdown(where.tool_text),
        file=escape_markdown(where.file_name) + (f" #{where.part + 1}" if where.part else ""),
        when=f"{where.imported_at:%Y-%m-%d %H:%M}",
    )
    if where.aggregate_only:
        text += " " + _(
            "Aggregate only: the file has no per-request data; its percentiles are shown as it gives them, "
            "never recomputed (figures it does not give stay empty)."
        )
    return text


def provenance_caption(result: RunResult) -> None:
    """Under an opened run: where it came from, when it was imported."""
    where = import_of(get_engine(), result.run_id or "")
    if where is not None:
        st.info(provenance_text(where), icon=":material/upload_file:")


def source_words(where: StoredImport | None) -> str:
    """The list's source column: probe, or the tool that wrote the imported file."""
    if where is None:
        return _("probe")
    kind = _("imported, aggregate only") if where.aggregate_only else _("imported")
    return f"{kind}: {where.tool_text}"


def _deployment_widgets() -> dict[str, Any]:
    """The deployment fields as probes/deployment.py defines them (blank: not given; the file may state them)."""
    names = display_names()
    values: dict[str, Any] = {}
    columns = st.columns(len(deployment_fields()))
    for column, name in zip(columns, deployment_fields(), strict=True):
        field = Deployment.model_fields[name]
        label = _(field.title) if field.title else name
        info = _(field.description) if field.description else None
        if name == "gpu_count":
            values[name] = column.number_input(label, min_value=1, value=None, step=1, key=f"{KEY}.{name}", help=info)
            continue
        shown = {value: _(text) for value, text in names[name].items()}
        values[name] = column.selectbox(
            label,
            list(shown),
            index=None,
            key=f"{KEY}.{name}",
            format_func=shown.__getitem__,
            placeholder=_("from the file, if it says"),
            help=info,
        )
    return {k: v for k, v in values.items() if v is not None}


def _saved(files: list[Any], folder: Path) -> list[Path]:
    """The uploads written to a folder; AIPerf's aggregate and per-request exports together as one folder (one run)."""
    names = {f.name for f in files}
    pair = {AGGREGATE_FILE, RECORDS_FILE} <= names
    paths: list[Path] = []
    for upload in files:
        name = Path(upload.name).name or "upload"
        target = folder / ("aiperf" if pair and name in (AGGREGATE_FILE, RECORDS_FILE) else f"{len(paths)}") / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(upload.getvalue())
        if not (pair and name in (AGGREGATE_FILE, RECORDS_FILE)):
            paths.append(target)
    if pair:
        paths.append(folder / "aiperf")
    return paths


def _import(files: list[Any], format_id: str, deployment: Mapping[str, Any], label: str) -> ImportReport:
    with tempfile.TemporaryDirectory(prefix="import-") as tmp:
        paths = _saved(files, Path(tmp))
        report = import_paths(
            paths,
            lambda runs: store_imported(get_engine(), runs),
            format_id=format_id,
            deployment=Deployment(**deployment),
            label=label,
        )
    for item in report.skipped:  # the uploaded name, not the temporary path
        item["file"] = Path(item["file"]).name
    return report


def _show(report: ImportReport) -> None:
    for run in report.runs:
        samples = _("{count} request samples").format(count=run["samples"]) if run["samples"] else _("aggregate only")
        st.success(
            _("Stored run `{run_id}` ({format} {version}): {levels} level(s), {samples}.").format(
                run_id=run["id"][:8],
                format=run["source_format"],
                version=run["tool_version"] or "",
                levels=run["levels"],
                samples=samples,
            ),
            icon="✅",
        )
    for item in report.skipped:
        reason = _("already imported") if item["reason"] == ALREADY_IMPORTED else item["reason"]
        message = _("Skipped {file}: {reason}").format(file=escape_markdown(item["file"]), reason=reason)
        if item["reason"] == ALREADY_IMPORTED:
            st.info(message, icon="ℹ️")
        else:
            st.error(escape_markdown(message).replace("\n", "  \n"), icon="🚫")


def import_section() -> None:
    """Upload other tools' result files; each is stored whole or not at all, and the outcome is listed."""
    with st.expander(_("Import result files of other tools"), expanded=REPORT in st.session_state):
        st.caption(
            _(
                "Result files of other benchmark tools become runs here, each mapped by its tool's own definitions "
                "(formats: {formats}). Give what the files do not say about the deployment. The command line does the "
                "same: `{command}`."
            ).format(formats=", ".join(f"`{f}`" for f in format_ids()), command=IMPORT_COMMAND)
        )
        with st.form(KEY, clear_on_submit=False, border=False):
            files = st.file_uploader(
                _("Result files"),
                accept_multiple_files=True,
                key=f"{KEY}.files",
                help=_("AIPerf: upload its two exports together to get one run with samples."),
            )
            format_id = st.selectbox(
                _("Format"),
                format_choices(),
                key=f"{KEY}.format",
                help=_("auto: detected from each file's content; or name the tool that wrote the files."),
            )
            deployment = _deployment_widgets()
            label = st.text_input(_("Label"), key=f"{KEY}.label", max_chars=200)
            submitted = st.form_submit_button(_("Import"), icon=":material/upload_file:")
        if submitted:
            if not files:
                st.warning(_("Choose one or more files first."), icon="⚠️")
            else:
                st.session_state[REPORT] = _import(list(files), format_id, deployment, label)
        report = st.session_state.get(REPORT)
        if isinstance(report, ImportReport):
            _show(report)
