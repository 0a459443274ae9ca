"""`python -m probes export RUN_ID... --format llmd-br-0.2.1|vllm|csv -o PATH`: stored runs written in another format.

It reads nothing itself: probes/__main__.py hands it a loader of stored runs. Exit codes as the probe's: 0 written,
1 the file could not be written, 2 a bad command line or a run that does not exist (nothing is written then).
"""

import argparse
import contextlib
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TextIO

from probes.export import levels_csv, samples_csv
from probes.export_br import reports_json
from probes.export_vllm import results_json
from probes.models import RunResult

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
COMMAND = "export"  # the subcommand word after `python -m probes`
STDOUT = "-"

# Reads a stored run by id (None: no such run).
LoadRun = Callable[[str], RunResult | None]


def runs_csv(results: Sequence[RunResult]) -> str:
    """One row per level of every run, the run's id first (the key row once)."""
    lines: list[str] = []
    for number, result in enumerate(results):
        rows = levels_csv(result).splitlines(keepends=True)
        head, body = rows[0], rows[1:]
        if number == 0:
            lines.append("run_id," + head)
        lines += [f"{result.run_id or ''},{row}" for row in body]
    return "".join(lines)


def requests_csv(results: Sequence[RunResult]) -> str:
    """One row per request of every run, the run's id first; '' when no run kept its requests."""
    if not any(result.samples for result in results):
        return ""
    lines: list[str] = []
    for number, result in enumerate(results):
        rows = samples_csv(result).splitlines(keepends=True)
        if number == 0:
            lines.append("run_id," + rows[0])
        lines += [f"{result.run_id or ''},{row}" for row in rows[1:]]
    return "".join(lines)


# --format value -> the file's text (the CSV's requests table is written beside it, see export_files).
FORMATS: dict[str, Callable[[list[RunResult]], str]] = {
    "llmd-br-0.2.1": reports_json,
    "vllm": results_json,
    "csv": runs_csv,
}


def export_files(results: list[RunResult], format_id: str, path: Path) -> dict[Path, str]:
    """Each file the export writes and its text: the format's file, and for CSV the requests beside it."""
    files = {path: FORMATS[format_id](results)}
    if format_id == "csv" and (requests := requests_csv(results)):
        files[path.with_name(f"{path.stem}-requests{path.suffix or '.csv'}")] = requests
    return files


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=f"python -m probes {COMMAND}",
        description="Write stored runs as llm-d Benchmark Report v0.2.1 JSON (one report per level), "
        "vLLM bench serve result JSON (one result per level; several: one per line) or CSV "
        "(one row per level; the requests in <name>-requests.csv beside it).",
    )
    parser.add_argument("run_ids", nargs="+", metavar="RUN_ID", help="the ids of stored runs (see /runs)")
    parser.add_argument("--format", required=True, choices=tuple(FORMATS), dest="format_id", help="the file format")
    parser.add_argument("-o", "--output", required=True, metavar="PATH", help="the file to write ('-': stdout)")
    return parser


def run_export(argv: Sequence[str], load_run: LoadRun, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Parse, read every run (all must exist), write the file; return the exit code."""
    out, err = out or sys.stdout, err or sys.stderr
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):  # argparse's usage and errors
            args = build_parser().parse_args(list(argv))
    except SystemExit as exc:  # argparse has printed the usage and the error
        return EXIT_OK if exc.code == 0 else EXIT_USAGE
    results: list[RunResult] = []
    missing: list[str] = []
    for run_id in dict.fromkeys(args.run_ids):
        result = load_run(run_id)
        if result is None:
            missing.append(run_id)
        else:
            results.append(result)
    if missing:
        for run_id in missing:
            print(f"error: RUN_ID '{run_id}': no stored run has this id (see /runs or the run's JSON)", file=err)
        return EXIT_USAGE
    if not any(result.levels for result in results):
        print(f"error: RUN_ID {', '.join(args.run_ids)}: no level was measured, nothing to export", file=err)
        return EXIT_USAGE
    if args.output == STDOUT:
        out.write(FORMATS[args.format_id](results))
        return EXIT_OK
    try:
        for path, text in export_files(results, args.format_id, Path(args.output)).items():
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path}", file=err)
    except OSError as exc:
        print(f"error: -o {args.output}: cannot write it ({exc.strerror or exc})", file=err)
        return EXIT_FAILED
    return EXIT_OK
