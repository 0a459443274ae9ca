"""`python -m tco api-prices refresh [--from FILE_OR_URL] [--json]`: update the hosted-API price snapshot."""

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TextIO

from catalog.api_prices import API_PRICES_CSV, UPSTREAM_URL
from tco.api_prices import RefreshError, RefreshReport, refresh

EXIT_OK = 0
EXIT_FAILED = 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m tco api-prices", description="Hosted-API prices per million tokens (LiteLLM's table, MIT)."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    update = commands.add_parser("refresh", help="read the current list and replace the stored snapshot")
    update.add_argument("--from", dest="source", default=UPSTREAM_URL, help="a file or URL (default: LiteLLM's)")
    update.add_argument("--to", dest="target", type=Path, default=API_PRICES_CSV, help=argparse.SUPPRESS)
    update.add_argument("--json", action="store_true", help="print the report as JSON")
    return parser


def _print_report(report: RefreshReport, out: TextIO) -> None:
    print(f"{report.rows} API prices from {report.source}, dated {report.snapshot_date}", file=out)
    for change in report.changes:
        before = "new" if change.before is None else "/".join("-" if p is None else f"{p:g}" for p in change.before)
        after = "gone" if change.after is None else "/".join("-" if p is None else f"{p:g}" for p in change.after)
        print(f"  {change.api_key}: {before} -> {after} USD per million input/cached/output tokens", file=out)
    if not report.changes:
        print("  no price changed", file=out)


def main(
    argv: Sequence[str] | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
    fetch: Callable[[str], bytes] | None = None,
) -> int:
    """Run the command; 0 on success, 2 on failure (the stored snapshot is then left as it was)."""
    out, err = out or sys.stdout, err or sys.stderr
    args = _parser().parse_args(argv)
    try:
        report = refresh(args.source, args.target, fetch=fetch)
    except RefreshError as exc:
        print(f"error: {exc}; the stored prices are unchanged", file=err)
        return EXIT_FAILED
    if args.json:
        print(json.dumps(report.model_dump(), indent=2), file=out)
    else:
        _print_report(report, out)
    return EXIT_OK
