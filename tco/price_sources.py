"""Reading gpuhunt's offline catalogs (one CSV per provider) from a directory, a zip, a URL or its default bucket.

gpuhunt (MPL-2.0) publishes each provider's catalog at ``{base}/{provider}/{version}/catalog.zip`` holding
``{provider}.csv`` (the newest version named by ``{base}/{provider}/version``); older releases published one zip of
every provider's CSV. Rows are read with gpuhunt's own loader, so its format stays its own business.
"""

import io
import zipfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.request import urlopen

from gpuhunt import CatalogItem
from gpuhunt._internal.catalog import CATALOG_URL, OFFLINE_PROVIDERS
from gpuhunt._internal.storage import load as load_rows

Fetch = Callable[[str], bytes]
"""Reads a URL's body (the tests pass their own; the default opens the network)."""
TIMEOUT_S = 30.0  # per request; the providers are read side by side


def fetch_url(url: str) -> bytes:
    """The body of `url` (raises on any network or HTTP error)."""
    with urlopen(url, timeout=TIMEOUT_S) as response:
        body: bytes = response.read()
    return body


def _items(text: str, provider: str) -> list[CatalogItem]:
    items = list(load_rows(io.StringIO(text), provider=provider))
    if not items and text.strip():
        raise ValueError(f"{provider}.csv has no row gpuhunt can read")
    return items


def _from_zip(data: bytes, where: str) -> dict[str, list[CatalogItem]]:
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile as exc:
        raise ValueError(f"{where} is not a zip of gpuhunt catalogs") from exc
    with archive:
        names = [n for n in archive.namelist() if n.endswith(".csv")]
        return {Path(n).stem: _items(archive.read(n).decode("utf-8"), Path(n).stem) for n in names}


def read_directory(path: Path) -> tuple[dict[str, list[CatalogItem]], dict[str, str]]:
    """Each `<provider>.csv` of a directory: (items by provider, what failed by provider)."""
    found: dict[str, list[CatalogItem]] = {}
    failed: dict[str, str] = {}
    for csv_path in sorted(path.glob("*.csv")):
        try:
            found[csv_path.stem] = _items(csv_path.read_text(encoding="utf-8"), csv_path.stem)
        except (OSError, ValueError, UnicodeDecodeError) as exc:
            failed[csv_path.stem] = str(exc)
    return found, failed


def _read_provider(base: str, provider: str, fetch: Fetch) -> dict[str, list[CatalogItem]]:
    version = fetch(f"{base}/{provider}/version").decode("utf-8").strip()
    return _from_zip(fetch(f"{base}/{provider}/{version}/catalog.zip"), f"{provider} {version}")


def read_bucket(base_url: str, fetch: Fetch) -> tuple[dict[str, list[CatalogItem]], dict[str, str]]:
    """Every offline provider of a gpuhunt catalog bucket, newest version of each, read side by side."""
    found: dict[str, list[CatalogItem]] = {}
    failed: dict[str, str] = {}
    base = base_url.rstrip("/")
    with ThreadPoolExecutor(max_workers=len(OFFLINE_PROVIDERS)) as pool:
        futures = {p: pool.submit(_read_provider, base, p, fetch) for p in OFFLINE_PROVIDERS}
    for provider, future in futures.items():
        try:
            found.update(future.result())
        except Exception as exc:
            failed[provider] = f"{type(exc).__name__}: {exc}"
    return found, failed


def read_catalogs(source: str | None, fetch: Fetch = fetch_url) -> tuple[dict[str, list[CatalogItem]], dict[str, str]]:
    """The gpuhunt catalog items by provider, and what failed by provider (or by the source itself).

    `source` is a directory, a .zip file or URL, a bucket URL, or None for gpuhunt's default bucket.
    """
    if source is None:
        return read_bucket(CATALOG_URL, fetch)
    if source.startswith(("http://", "https://")):
        if source.lower().endswith(".zip"):
            try:
                return _from_zip(fetch(source), source), {}
            except Exception as exc:
                return {}, {source: f"{type(exc).__name__}: {exc}"}
        return read_bucket(source, fetch)
    path = Path(source)
    if path.is_dir():
        return read_directory(path)
    if path.is_file():
        try:
            return _from_zip(path.read_bytes(), source), {}
        except (OSError, ValueError) as exc:
            return {}, {source: str(exc)}
    return {}, {source: "no such directory, zip file or http(s) URL"}
