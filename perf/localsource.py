"""Read a results table the project may not ship (a saved page or its URL) into a local CSV the fit can use.

`python -m perf.localsource --saved page.html ...` (offline) or `--url https://...` (online) finds the page's
HTML tables, recognises their columns by header (perf/data/local_sources.toml), names each row's model and GPU as
the catalog does, and writes rows in perf/data/published_points.csv's columns. Rows it cannot place are listed
with why. The fit reads such files only when PERF_LOCAL_POINTS names them (perf/fitset.py), so the shipped
coefficients never depend on them.
"""

import argparse
import csv
import sys
import tomllib
import urllib.request
from collections.abc import Sequence
from datetime import UTC, datetime
from functools import cache
from html.parser import HTMLParser
from pathlib import Path

from catalog import find_gpu
from catalog.models import find_model
from commands import run_command

DATA = Path(__file__).parent / "data"
SPEC_TOML = DATA / "local_sources.toml"
COLUMNS_FROM = DATA / "published_points.csv"
NUMERIC = ("output_tok_s", "ttft_ms", "tpot_ms", "input_tokens", "output_tokens", "concurrency", "gpus")
FETCH_TIMEOUT_S = 30.0


class _Tables(HTMLParser):
    """Every <table> of a page as rows of cell texts (th and td alike)."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[list[list[str]]] = []
        self._row: list[str] | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self.tables.append([])
        elif tag == "tr" and self.tables:
            self._row = []
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._row is not None and self._cell is not None:
            self._row.append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "tr" and self._row is not None:
            if self._row:
                self.tables[-1].append(self._row)
            self._row = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


@cache
def header_phrases() -> dict[str, list[str]]:
    """perf/data/local_sources.toml [headers]: field -> the phrases that name its column."""
    with SPEC_TOML.open("rb") as handle:
        headers = tomllib.load(handle)["headers"]
    return {k: list(v) for k, v in headers.items() if isinstance(v, list)}


def columns() -> list[str]:
    """The columns of perf/data/published_points.csv, which the local CSV shares."""
    with COLUMNS_FROM.open(encoding="utf-8") as handle:
        return next(csv.reader(handle))


def _fields(header: Sequence[str]) -> dict[int, str]:
    """Column index -> field, each field to the first column whose header names it."""
    out: dict[int, str] = {}
    for field, phrases in header_phrases().items():
        for i, text in enumerate(header):
            if i not in out and any(p in text.lower() for p in phrases):
                out[i] = field
                break
    return out


def _number(text: str) -> str:
    """'1,234.5' -> '1234.5'; 'max' stays; anything else not a number raises ValueError."""
    clean = text.replace(",", "").replace("\u202f", "").strip()
    if clean.lower() == "max":
        return "max"
    return f"{float(clean):g}"


def read_tables(html: str, given: dict[str, str]) -> tuple[list[dict[str, str]], list[str]]:
    """The page's table rows as local CSV rows (`given` fills fields the table lacks), and the rows left out, why."""
    parser = _Tables()
    parser.feed(html)
    rows: list[dict[str, str]] = []
    skipped: list[str] = []
    for table in parser.tables:
        if len(table) < 2:
            continue
        fields = _fields(table[0])
        for cells in table[1:]:
            row = dict(given)
            row.update({fields[i]: cell for i, cell in enumerate(cells) if i in fields and cell})
            try:
                rows.append(_placed(row))
            except ValueError as exc:  # a catalog lookup error is one too
                skipped.append(f"{' | '.join(cells)}: {exc}")
    return rows, skipped


def _placed(row: dict[str, str]) -> dict[str, str]:
    """One row in catalog terms; ValueError (or a lookup error) names the field that cannot be placed."""
    for field in ("model", "gpu", "engine", "input_tokens", "output_tokens", "concurrency"):
        if not row.get(field):
            raise ValueError(f"no {field} (give it with --{field.replace('_', '-')} or in a column)")
    if not any(row.get(f) for f in ("output_tok_s", "ttft_ms", "tpot_ms")):
        raise ValueError("no measurement (output tok/s, TTFT or TPOT)")
    out = dict(row)
    for field in NUMERIC:
        if out.get(field):
            try:
                out[field] = _number(out[field])
            except ValueError:
                raise ValueError(f"{field} {out[field]!r} is not a number") from None
    out["model"] = find_model(row["model"]).id
    out["gpu"] = find_gpu(row["gpu"]).id
    out["gpus"] = out.get("gpus") or "1"
    out["quant"] = (out.get("quant") or "bf16").lower()
    return out


def fetch(url: str) -> str:
    """The page at `url` (online use)."""
    request = urllib.request.Request(url, headers={"User-Agent": "llm-serving-advisor perf.localsource"})
    with urllib.request.urlopen(request, timeout=FETCH_TIMEOUT_S) as response:
        body: bytes = response.read()
        return body.decode(response.headers.get_content_charset() or "utf-8", errors="replace")


def write_csv(rows: Sequence[dict[str, str]], path: Path, id_prefix: str) -> None:
    """The rows in published_points.csv's columns, numbered `id_prefix`-1, -2, ... (the file is replaced)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    names = columns()
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=names, extrasaction="ignore")
        writer.writeheader()
        for i, row in enumerate(rows, 1):
            writer.writerow({**{n: "" for n in names}, **row, "id": f"{id_prefix}-{i}"})


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m perf.localsource",
        description="Read a results table that may not be shipped into a local CSV of measured points.",
        allow_abbrev=False,
    )
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--saved", type=Path, help="a saved copy of the page (HTML), read offline")
    where.add_argument("--url", help="the page's address, fetched now")
    parser.add_argument("--out", type=Path, default=Path("data/local_points.csv"), help="the CSV to write")
    parser.add_argument("--publisher", required=True, help="who measured and published it (one held-out source)")
    parser.add_argument("--engine", required=True, help="vllm, sglang, tensorrt-llm or lmdeploy")
    parser.add_argument("--engine-version", default="", help="the engine release the page measured")
    parser.add_argument("--licence", required=True, help="the page's terms, as stated there")
    parser.add_argument("--source-url", default="", help="where the saved copy came from (default: --url)")
    parser.add_argument("--method", default="", help="how the page measured (benchmark tool, load)")
    for field in ("model", "gpu", "gpus", "quant", "input-tokens", "output-tokens", "concurrency"):
        parser.add_argument(f"--{field}", default="", help=f"{field} of every row, where the table has no column")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Read the page, write the CSV, list the rows left out; exit 1 when no row could be placed."""
    args = _parser().parse_args(argv)
    try:
        html = args.saved.read_text(encoding="utf-8", errors="replace") if args.saved else fetch(args.url)
    except OSError as exc:
        print(f"error: cannot read {'--saved' if args.saved else '--url'}: {exc}", file=sys.stderr)
        return 2
    given = {
        "engine": args.engine,
        "engine_version": args.engine_version,
        "publisher": args.publisher,
        "licence": args.licence,
        "method": args.method,
        "source": args.source_url or args.url or str(args.saved),
        "source_date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "note": "read by perf.localsource; not shipped",
    }
    for field in ("model", "gpu", "gpus", "quant", "input_tokens", "output_tokens", "concurrency"):
        if getattr(args, field):
            given[field] = getattr(args, field)
    rows, skipped = read_tables(html, given)
    for reason in skipped:
        print(f"left out: {reason}", file=sys.stderr)
    if not rows:
        print("error: no table row could be placed (see 'left out' above)", file=sys.stderr)
        return 1
    write_csv(rows, args.out, f"local-{args.publisher.lower().replace(' ', '-')}")
    print(f"{len(rows)} rows written to {args.out}; use them with PERF_LOCAL_POINTS={args.out} make perf-model")
    return 0


if __name__ == "__main__":
    run_command(main)
