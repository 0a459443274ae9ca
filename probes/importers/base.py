"""The shape every importer returns: runs read from another tool's result file, with where they came from."""

from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field

from probes.models import RunResult


class ImportProvenance(BaseModel):
    """Which tool and release wrote the file, the file's own settings, and when it came in."""

    model_config = ConfigDict(frozen=True)

    format: str = Field(description="the importer's format id (vllm, sglang, aiperf, guidellm, ...)")
    tool: str = Field(description="the tool that wrote the file, as it names itself")
    tool_version: str | None = Field(default=None, description="its release, when the file states it")
    file_name: str = Field(description="the file's name as given (no directory)")
    file_sha256: str = Field(description="SHA-256 of the file's bytes: the same file imported twice is recognized")
    part: int = Field(default=0, ge=0, description="which run of a file holding many (a guidellm benchmark, a line)")
    settings: dict[str, Any] = Field(default_factory=dict, description="the file's own settings, as it gives them")
    imported_at: datetime


class ImportedRun(BaseModel):
    """One run read from a file: a RunResult like a probe's, marked aggregate-only when no per-request data came."""

    model_config = ConfigDict(frozen=True)

    result: RunResult
    provenance: ImportProvenance
    aggregate_only: bool = Field(
        description="no per-request records: the levels hold the file's percentiles as given, never recomputed"
    )


class ImportFormatError(ValueError):
    """A file that is not what its format expects; the message says what was expected and where it differs."""


class Importer(Protocol):
    """A format: how to recognize its files and read them (`parse` raises ImportFormatError, never KeyError)."""

    format_id: str  # the --format value
    expected: str  # what a file of this format holds, for the message when nothing matches

    def detect(self, path: Path) -> bool:
        """Whether the file (or folder) looks like this format; cheap, never raises."""
        ...

    def parse(self, path: Path, imported_at: datetime) -> list[ImportedRun]:
        """Every run the file holds, in file order."""
        ...
