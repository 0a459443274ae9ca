"""The formats python -m probes import reads, in detection order, and how a file finds its format (or is refused).

The --format choices, the page's and the refusal message all derive from IMPORTERS.
"""

from datetime import datetime
from pathlib import Path

from pydantic import ValidationError

from probes.importers.aiperf import AiperfImporter
from probes.importers.base import ImportedRun, Importer, ImportFormatError
from probes.importers.guidellm import GuidellmImporter
from probes.importers.inference_perf import IMPORTER as INFERENCE_PERF
from probes.importers.inferencex import IMPORTER as INFERENCEX
from probes.importers.llmd_br import IMPORTER as LLMD_BR
from probes.importers.sglang import SglangImporter
from probes.importers.vllm import VllmImporter

AUTO = "auto"
# Detection order: the most specific markers first (SGLang's lines before vLLM's object, which share key names).
IMPORTERS: tuple[Importer, ...] = (
    AiperfImporter(),
    GuidellmImporter(),
    LLMD_BR,
    INFERENCE_PERF,
    INFERENCEX,
    SglangImporter(),
    VllmImporter(),
)


def format_ids() -> tuple[str, ...]:
    """Every format's id, in detection order."""
    return tuple(importer.format_id for importer in IMPORTERS)


def format_choices() -> tuple[str, ...]:
    """The --format values: auto, then every format."""
    return (AUTO, *format_ids())


def expected_text() -> str:
    """What each format expects, one line each (the message when a file matches none)."""
    return "\n".join(f"  - {importer.expected}" for importer in IMPORTERS)


def importer_for(path: Path, format_id: str = AUTO) -> Importer:
    """The importer named, or the first that detects the file (ImportFormatError saying what was expected)."""
    if not path.exists():
        raise ImportFormatError(f"{path.name}: no such file or folder")
    if format_id != AUTO:
        for importer in IMPORTERS:
            if importer.format_id == format_id and importer.detect(path):
                return importer
            if importer.format_id == format_id:
                raise ImportFormatError(f"{path.name}: not a {format_id} file. Expected {importer.expected}")
        raise ImportFormatError(f"unknown format '{format_id}' (allowed: {', '.join(format_choices())})")
    for importer in IMPORTERS:
        if importer.detect(path):
            return importer
    raise ImportFormatError(
        f"{path.name}: not a result file of a format this app reads. Expected one of:\n{expected_text()}"
    )


def read_runs(path: Path, imported_at: datetime, format_id: str = AUTO) -> list[ImportedRun]:
    """Every run the file (or folder) holds; ImportFormatError, never another exception, when it cannot be read."""
    importer = importer_for(path, format_id)
    try:
        runs = importer.parse(path, imported_at)
    except ImportFormatError:
        raise
    except (ValidationError, ValueError, TypeError, KeyError, IndexError, AttributeError, OSError) as exc:
        raise ImportFormatError(f"{path.name}: not readable as {importer.format_id} ({exc})") from None
    if not runs:
        raise ImportFormatError(f"{path.name}: holds no run")
    return runs
