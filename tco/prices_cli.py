"""`python -m tco prices refresh|show`: refresh the stored GPU prices through gpuhunt, or list a GPU's price tiers."""

import argparse
import json
import sys
from collections.abc import Sequence
from typing import TextIO

from catalog import GpuLookupError, find_gpu
from catalog.matching import forgiven_matches, forgiven_notes
from db import init_db, make_engine
from settings import get_settings
from tco.price_refresh import RefreshReport, current_book, refresh_prices

SHOW_KEYS = ("provider", "region", "kind", "price_per_gpu_hour", "currency", "source", "fetched_at")
EXIT_OK = 0
EXIT_FAILED = 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m tco prices", description=__doc__)
    actions = parser.add_subparsers(dest="action", required=True)
    refresh = actions.add_parser("refresh", help="read gpuhunt's catalogs and store their on-demand and spot prices")
    refresh.add_argument(
        "--from",
        dest="source",
        metavar="DIR_OR_URL",
        help="a directory of gpuhunt catalog CSVs (<provider>.csv), a .zip of them, or a URL "
        "(default: PRICES_SOURCE, else gpuhunt's published catalogs)",
    )
    refresh.add_argument("--json", action="store_true", help="print the report as JSON")
    show = actions.add_parser("show", help="list every price tier of a GPU")
    show.add_argument("--gpu", required=True, help="a catalog GPU (id, name or alias, e.g. H100, A800)")
    show.add_argument("--json", action="store_true", help="print the tiers as a JSON list")
    return parser


def _print_report(report: RefreshReport, out: TextIO) -> None:
    if not report.ok:
        print(f"refresh failed; the previous prices stay in use ({report.source})", file=out)
        for where, why in report.failed.items():
            print(f"  failed: {where}: {why}", file=out)
        return
    print(f"refreshed {report.tiers} price tiers from {report.source} at {report.fetched_at}", file=out)
    for provider, count in report.providers.items():
        print(f"  {provider}: {count} tiers", file=out)
    print(f"  {report.added} added, {report.removed} removed, {len(report.changed)} lowest prices changed", file=out)
    for change in report.changed:
        before = "none" if change.before is None else f"{change.before:g}"
        after = "none" if change.after is None else f"{change.after:g}"
        print(f"  {change.gpu} {change.kind}: {before} -> {after} {change.currency} {change.provider_after}", file=out)
    if report.unmatched_gpus:
        print(f"  not in the GPU catalog: {', '.join(report.unmatched_gpus)}", file=out)


def main(argv: Sequence[str] | None = None, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    """Run the command line; returns the exit code (0 done, 2 failed: bad input or a failed refresh)."""
    args = _parser().parse_args(argv)
    engine = make_engine(get_settings().database_url)
    init_db(engine)
    if args.action == "refresh":
        report = refresh_prices(engine, args.source or get_settings().prices_source or None)
        if args.json:
            print(report.model_dump_json(indent=2), file=out)
        else:
            _print_report(report, out if report.ok else err)
        return EXIT_OK if report.ok else EXIT_FAILED
    try:
        with forgiven_matches() as forgiven:
            gpu = find_gpu(args.gpu)
    except GpuLookupError as exc:
        print(f"--gpu: {exc}", file=err)
        return EXIT_FAILED
    for note in forgiven_notes(forgiven):
        print(note, file=err)
    tiers = [{key: getattr(t, key) for key in SHOW_KEYS} for t in current_book(engine).for_gpu(gpu.id)]
    if args.json:
        print(json.dumps(tiers, ensure_ascii=False, indent=2), file=out)
    elif not tiers:
        print(f"{gpu.name}: no price on record", file=out)
    else:
        for t in tiers:
            print(
                f"{gpu.name}  {t['kind']:<11} {t['price_per_gpu_hour']:>10g} {t['currency']}  {t['provider']} "
                f"({t['region']}, {t['fetched_at']})",
                file=out,
            )
    return EXIT_OK
