"""The gettext workflow: extract marked strings per domain, update the Chinese catalogs, compile, check."""

import argparse
import csv
import io
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

from babel.messages.catalog import Catalog
from babel.messages.extract import extract_from_file
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po, write_po

from i18n import LOCALE_DIR

ROOT = Path(__file__).resolve().parent.parent
DOMAINS_FILE = Path(__file__).parent / "domains.toml"
KEYWORDS = {"_": None, "N_": None, "tr": None}  # tr: a package function's translate argument
TRANSLATED = "zh"


def _spec() -> dict[str, dict[str, object]]:
    with DOMAINS_FILE.open("rb") as f:
        return tomllib.load(f)


def domains() -> dict[str, list[str]]:
    """Domain -> its source globs."""
    return {name: list(spec.get("files", [])) for name, spec in _spec().items()}  # type: ignore[call-overload]


def data_texts(domain: str) -> Iterator[tuple[str, str, int]]:
    """The data-file texts a domain words (its `csv` entries): (text, file, line), each non-empty cell of the column.

    An entry names a file (a glob: the data may move between packages), a column, and optionally `when_empty`: only
    rows whose that column is empty (a GPU's price note reaches a page only when there is no price).
    """
    entries = _spec()[domain].get("csv", [])
    assert isinstance(entries, list)
    for entry in entries:
        for path in sorted(ROOT.glob(entry["file"])):
            with path.open(newline="", encoding="utf-8") as f:
                for line, row in enumerate(csv.DictReader(f), start=2):
                    text = (row.get(entry["column"]) or "").strip()
                    if text and not (entry.get("when_empty") and (row.get(entry["when_empty"]) or "").strip()):
                        yield text, str(path.relative_to(ROOT)), line


def sources(globs: list[str]) -> Iterator[Path]:
    """The files of a domain, sorted."""
    yield from sorted({p for pattern in globs for p in ROOT.glob(pattern) if p.is_file()})


def template(domain: str) -> Catalog:
    """Every string marked with _() or N_() in the domain's files."""
    catalog = Catalog(domain=domain)
    for path in sources(domains()[domain]):
        for line, message, comments, context in extract_from_file(
            "python", str(path), keywords=KEYWORDS, comment_tags=("i18n:",), options={}
        ):
            if isinstance(message, str) and message:
                catalog.add(
                    message, None, [(str(path.relative_to(ROOT)), line)], auto_comments=comments, context=context
                )
    for text, file, line in data_texts(domain):
        catalog.add(text, None, [(file, line)])
    return catalog


def po_path(domain: str) -> Path:
    return LOCALE_DIR / TRANSLATED / "LC_MESSAGES" / f"{domain}.po"


def read(domain: str) -> Catalog:
    """The domain's Chinese catalog (empty when there is none yet)."""
    path = po_path(domain)
    if not path.exists():
        return Catalog(locale=TRANSLATED, domain=domain)
    with path.open("rb") as f:
        return read_po(f, locale=TRANSLATED, domain=domain)


def _po_bytes(catalog: Catalog) -> bytes:
    out = io.BytesIO()
    write_po(out, catalog, width=120, sort_output=True, omit_header=False, ignore_obsolete=True, include_lineno=False)
    return out.getvalue()


def _mo_bytes(catalog: Catalog) -> bytes:
    out = io.BytesIO()
    write_mo(out, catalog, use_fuzzy=False)
    return out.getvalue()


def update(domain: str) -> Catalog:
    """Extract, merge into the .po (translations kept, vanished strings dropped), compile the .mo."""
    catalog = read(domain)
    catalog.update(template(domain), no_fuzzy_matching=True, update_creation_date=False)
    path = po_path(domain)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(_po_bytes(catalog))
    path.with_suffix(".mo").write_bytes(_mo_bytes(read(domain)))
    return catalog


def problems(domain: str) -> list[str]:
    """What is wrong with a domain's catalog: untranslated or unused entries, a stale .mo."""
    found: list[str] = []
    wanted = {m.id for m in template(domain) if m.id}
    catalog = read(domain)
    have = {m.id: m for m in catalog if m.id}
    for msgid in sorted(wanted):
        message = have.get(msgid)
        if message is None or not message.string or message.fuzzy:
            found.append(f"{domain}: no Chinese translation for {msgid!r}")
    for msgid in sorted(set(have) - wanted):
        found.append(f"{domain}: {msgid!r} is in the catalog but no code uses it")
    mo = po_path(domain).with_suffix(".mo")
    if not mo.exists() or mo.read_bytes() != _mo_bytes(catalog):
        found.append(f"{domain}: {mo.name} is not compiled from {po_path(domain).name} (run make i18n)")
    return found


def main(argv: list[str] | None = None) -> int:
    """`python -m i18n.catalogs update|check [domain ...]`."""
    parser = argparse.ArgumentParser(prog="python -m i18n.catalogs", description=__doc__)
    parser.add_argument("command", choices=("update", "check"))
    parser.add_argument("domains", nargs="*", help="default: every domain of i18n/domains.toml")
    args = parser.parse_args(argv)
    chosen = args.domains or list(domains())
    if args.command == "update":
        for domain in chosen:
            catalog = update(domain)
            missing = sum(1 for m in catalog if m.id and not m.string)
            print(f"{domain}: {len(catalog)} messages, {missing} without a translation")
        return 0
    found = [p for domain in chosen for p in problems(domain)]
    for problem in found:
        print(problem, file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
