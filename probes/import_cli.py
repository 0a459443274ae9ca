"""`python -m probes import FILE_OR_DIR...`: other tools' result files stored as runs, with a JSON report for scripts.

Exit codes: 0 every file was imported or recognized as imported before, 2 a file was refused or the command line was
bad. It stores nothing itself: probes/__main__.py hands it the database's store (one transaction per file).
"""

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from pydantic import ValidationError

from catalog.matching import forgiven_matches, forgiven_notes
from probes.cli import DEPLOYMENT_FLAGS
from probes.deployment import Deployment, deployment_fields
from probes.importers.base import ImportedRun, ImportFormatError
from probes.importers.common import with_given
from probes.importers.registry import AUTO, format_choices, read_runs

EXIT_OK, EXIT_REFUSED = 0, 2
ALREADY_IMPORTED = "already imported"

# Stores one file's runs in one transaction: their ids, or None when the same file was imported before.
StoreFile = Callable[[list[ImportedRun]], list[str] | None]


def _flag(option: str) -> str:
    return "--" + option.replace("_", "-")


def build_import_parser() -> argparse.ArgumentParser:
    """The import command's flags; the deployment's come from probes/deployment.py, the formats from the registry."""
    parser = argparse.ArgumentParser(
        prog="python -m probes import",
        description="Store other benchmark tools' result files as runs (vLLM bench serve, SGLang bench_serving, "
        "AIPerf, guidellm, ...), each mapped by its tool's own metric definitions.",
    )
    parser.add_argument("paths", nargs="+", metavar="FILE_OR_DIR", help="result files, or folders of one benchmark")
    parser.add_argument(
        "--format", dest="format_id", choices=format_choices(), default=AUTO, help="the files' format (default: auto)"
    )
    for name, option in deployment_fields().items():
        info = Deployment.model_fields[name]
        parser.add_argument(
            _flag(option),
            dest=name,
            type=int if name == "gpu_count" else str,
            default=None,
            help=f"{info.description} Where the file states it, the file fills what is not given.",
        )
    parser.add_argument("--label", default="", help="a label for every run imported (default: the file's, if any)")
    parser.add_argument("--json", dest="as_json", action="store_true", help="print the report as JSON on stdout")
    return parser


@dataclass
class ImportReport:
    """What one call stored and what it skipped, with why (the --json contract)."""

    runs: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)
    refused: bool = False

    def as_json(self) -> dict[str, Any]:
        """{"runs": [...], "skipped": [...]}: only the runs this call stored."""
        return {"runs": self.runs, "skipped": self.skipped}


def _given_deployment(args: argparse.Namespace) -> Deployment:
    values = {name: getattr(args, name) for name in deployment_fields() if getattr(args, name) is not None}
    return Deployment(**values)


def deployment_messages(exc: ValidationError) -> list[str]:
    """One message per refused deployment flag, naming it."""
    options = deployment_fields()
    messages = []
    for error in exc.errors():
        name = str((error.get("loc") or ("",))[0])
        reason = str(error.get("msg", "invalid value")).removeprefix("Value error, ")
        messages.append(f"{_flag(options.get(name, name))}: {reason}")
    return messages


def import_paths(
    paths: Sequence[Path],
    store: StoreFile,
    *,
    format_id: str = AUTO,
    deployment: Deployment | None = None,
    label: str = "",
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> ImportReport:
    """Read and store each file (or folder) on its own; a refused file is reported and the others go on."""
    report = ImportReport()
    for path in paths:
        try:
            runs = [with_given(run, deployment or Deployment(), label) for run in read_runs(path, now(), format_id)]
            ids = store(runs)
        except ImportFormatError as exc:
            report.skipped.append({"file": str(path), "reason": str(exc)})
            report.refused = True
            continue
        except Exception as exc:  # the database refused the file: nothing of it was stored
            report.skipped.append({"file": str(path), "reason": f"not stored: {exc}"})
            report.refused = True
            continue
        if ids is None:
            report.skipped.append({"file": str(path), "reason": ALREADY_IMPORTED})
            continue
        report.runs.extend(
            {
                "id": run_id,
                "source_format": run.provenance.format,
                "tool_version": run.provenance.tool_version,
                "levels": len(run.result.levels),
                "samples": len(run.result.samples),
            }
            for run_id, run in zip(ids, runs, strict=True)
        )
    return report


def _report_text(report: ImportReport) -> list[str]:
    lines = [
        f"stored run {run['id']} ({run['source_format']}"
        + (f" {run['tool_version']}" if run["tool_version"] else "")
        + f"): {run['levels']} level(s), {run['samples']} request sample(s)"
        + (" (aggregate only)" if not run["samples"] else "")
        for run in report.runs
    ]
    lines += [f"skipped {item['file']}: {item['reason']}" for item in report.skipped]
    return lines


def run_import(argv: Sequence[str], out: TextIO | None = None, err: TextIO | None = None, *, store: StoreFile) -> int:
    """Parse, import every file, report; the exit code (2 when any file was refused)."""
    out, err = out or sys.stdout, err or sys.stderr
    args = build_import_parser().parse_args(list(argv))
    try:
        with forgiven_matches() as forgiven:
            deployment = _given_deployment(args)
        for note in forgiven_notes(forgiven, DEPLOYMENT_FLAGS):
            print(note, file=err)
    except ValidationError as exc:
        for message in deployment_messages(exc):
            print(f"error: {message}", file=err)
        return EXIT_REFUSED
    report = import_paths(
        [Path(p) for p in args.paths], store, format_id=args.format_id, deployment=deployment, label=args.label
    )
    if args.as_json:
        print(json.dumps(report.as_json(), indent=2), file=out)
    else:
        for line in _report_text(report):
            print(line, file=err if line.startswith("skipped") else out)
    return EXIT_REFUSED if report.refused else EXIT_OK
