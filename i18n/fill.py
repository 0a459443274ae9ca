"""Fill a domain's Chinese catalog from a {msgid: translation} table (a translator's tool; make i18n compiles)."""

import io
from collections.abc import Mapping

from babel.messages.pofile import write_po

from i18n.catalogs import po_path, read


def fill(domain: str, table: Mapping[str, str], *, overwrite: bool = False) -> list[str]:
    """Set the translations the table has (keeping existing ones unless overwrite); returns the msgids still empty."""
    catalog = read(domain)
    for message in catalog:
        if not message.id or not isinstance(message.id, str):
            continue
        if message.id in table and (overwrite or not message.string):
            message.string = table[message.id]
            message.flags.discard("fuzzy")
    out = io.BytesIO()
    write_po(out, catalog, width=120, sort_output=True, ignore_obsolete=True, include_lineno=False)
    po_path(domain).write_bytes(out.getvalue())
    return [str(m.id) for m in catalog if m.id and not m.string]
