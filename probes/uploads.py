"""Uploaded workload files (traces, conversations, prompts) kept by their content, so stored runs can name them."""

import hashlib
import os
import re
import tempfile
from pathlib import Path

DIGEST_CHARS = 16
_SUFFIX = re.compile(r"^\.[a-z0-9]{1,8}$")


def keep_upload(content: bytes, name: str, directory: Path, default_suffix: str = ".jsonl") -> Path:
    """The file holding `content` in `directory`, named by its SHA-256 and the upload's suffix; written once.

    The same content uploaded again is the same file. The name the user gave is not used beyond its suffix
    (a suffix that is not short and alphanumeric becomes `default_suffix`).
    """
    suffix = Path(name).suffix.lower()
    if not _SUFFIX.match(suffix):
        suffix = default_suffix
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{hashlib.sha256(content).hexdigest()[:DIGEST_CHARS]}{suffix}"
    if path.exists() and path.stat().st_size == len(content):
        return path
    fd, temporary = tempfile.mkstemp(dir=directory, prefix=".upload-", suffix=suffix)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(content)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path
