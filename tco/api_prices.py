"""Refresh the hosted-API price snapshot from LiteLLM's model price table (MIT): read, trim, check, then replace."""

import csv
import io
import json
import os
import tempfile
import urllib.request
from collections.abc import Callable
from datetime import date
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from catalog.api_prices import (
    API_PRICE_COLUMNS,
    API_PRICES_CSV,
    UPSTREAM_URL,
    ApiPrice,
    load_api_links,
    load_api_prices,
)
from catalog.units import TOKENS_PER_MILLION

FETCH_TIMEOUT_S = 30.0
LICENCE = "MIT (BerriAI/litellm; catalog/data/api_prices.LICENSE)"
# LiteLLM's provider ids as a person reads them
PROVIDERS = {
    "deepinfra": "DeepInfra",
    "together_ai": "Together AI",
    "fireworks_ai": "Fireworks AI",
    "groq": "Groq",
    "openai": "OpenAI",
    "deepseek": "DeepSeek",
}


class RefreshError(Exception):
    """The new list could not be read or lacks what the snapshot needs; the old snapshot stays."""


class PriceChange(BaseModel):
    """One API entry whose price moved (or that appeared or went away)."""

    model_config = ConfigDict(frozen=True)

    api_key: str
    before: tuple[float, float | None, float] | None
    after: tuple[float, float | None, float] | None


class RefreshReport(BaseModel):
    """What a refresh did: the rows written, from where, and what changed."""

    model_config = ConfigDict(frozen=True)

    source: str
    snapshot_date: str
    rows: int
    changes: list[PriceChange]


def read_source(source: str, fetch: Callable[[str], bytes] | None = None) -> bytes:
    """The bytes of a local file or an http(s) URL (`fetch` replaces the network, for tests)."""
    if source.startswith(("http://", "https://")):
        if fetch is not None:
            return fetch(source)
        with urllib.request.urlopen(source, timeout=FETCH_TIMEOUT_S) as response:
            body: bytes = response.read()
            return body
    return Path(source).read_bytes()


def _per_million(entry: dict[str, object], field: str) -> float | None:
    value = entry.get(field)
    if value is None:
        return None
    if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
        raise RefreshError(f"{field} is not a price: {value!r}")
    return round(float(value) * TOKENS_PER_MILLION, 6)


def trim(table: object, source: str, snapshot_date: str) -> list[ApiPrice]:
    """The catalog's API entries out of LiteLLM's whole table, USD per million tokens."""
    if not isinstance(table, dict):
        raise RefreshError("the price list is not a JSON object of models")
    rows: list[ApiPrice] = []
    missing: list[str] = []
    for key in dict.fromkeys(link.api_key for link in load_api_links()):
        entry = table.get(key)
        if not isinstance(entry, dict):
            missing.append(key)
            continue
        try:
            prices = [_per_million(entry, f) for f in ("input_cost_per_token", "cache_read_input_token_cost")]
            output = _per_million(entry, "output_cost_per_token")
        except RefreshError as exc:
            raise RefreshError(f"{key}: {exc}") from exc
        if prices[0] is None or output is None:
            missing.append(key)
            continue
        provider = str(entry.get("litellm_provider", ""))
        rows.append(
            ApiPrice(
                api_key=key,
                provider=PROVIDERS.get(provider, provider),
                api_model=key.removeprefix(f"{provider}/").removeprefix("accounts/fireworks/models/"),
                input_per_million_usd=prices[0],
                cached_input_per_million_usd=prices[1],
                output_per_million_usd=output,
                source=source,
                licence=LICENCE,
                source_snapshot=snapshot_date,
            )
        )
    if not rows or len(missing) > len(rows):
        raise RefreshError(f"the list lacks most of the catalog's API entries ({len(missing)} missing)")
    return rows


def _csv_text(rows: list[ApiPrice]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(API_PRICE_COLUMNS)
    for row in rows:
        values = row.model_dump()
        writer.writerow(
            "" if values[c] is None else f"{values[c]:g}" if isinstance(values[c], float) else values[c]
            for c in API_PRICE_COLUMNS
        )
    return buffer.getvalue()


def _changes(before: tuple[ApiPrice, ...], after: list[ApiPrice]) -> list[PriceChange]:
    def prices(row: ApiPrice) -> tuple[float, float | None, float]:
        return (row.input_per_million_usd, row.cached_input_per_million_usd, row.output_per_million_usd)

    old = {row.api_key: prices(row) for row in before}
    new = {row.api_key: prices(row) for row in after}
    return [
        PriceChange(api_key=key, before=old.get(key), after=new.get(key))
        for key in sorted(old.keys() | new.keys())
        if old.get(key) != new.get(key)
    ]


def refresh(
    source: str = UPSTREAM_URL,
    target: Path = API_PRICES_CSV,
    *,
    fetch: Callable[[str], bytes] | None = None,
    today: date | None = None,
) -> RefreshReport:
    """Replace the snapshot at `target` with the catalog's entries of the list at `source` (file or URL).

    Raises RefreshError, leaving `target` untouched, when the list cannot be read or lacks the entries.
    """
    try:
        table = json.loads(read_source(source, fetch))
    except (OSError, ValueError) as exc:
        raise RefreshError(f"could not read {source}: {exc}") from exc
    snapshot_date = (today or date.today()).isoformat()
    rows = trim(
        table, UPSTREAM_URL if source.startswith("http") else f"{UPSTREAM_URL} (read from a copy)", snapshot_date
    )
    before = load_api_prices(target) if target.exists() else ()
    handle, temporary = tempfile.mkstemp(dir=target.parent, suffix=".csv.tmp")
    with os.fdopen(handle, "w", encoding="utf-8", newline="") as out:
        out.write(_csv_text(rows))
    os.replace(temporary, target)
    return RefreshReport(source=source, snapshot_date=snapshot_date, rows=len(rows), changes=_changes(before, rows))
