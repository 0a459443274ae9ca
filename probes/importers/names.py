"""A name another tool wrote (GPU 'NVIDIA-H100-80GB-HBM3', runner 'mi355x_amd', engine 'trt') as a catalog id."""

import re
from typing import Any

from probes.deployment import catalog_id

VENDOR_PREFIX = re.compile(r"^(nvidia|amd|intel|huawei)[-_ ]+", re.IGNORECASE)
ENGINE_ALIASES = {"trt": "tensorrt-llm", "trtllm": "tensorrt-llm"}  # short names tools use that the catalog lacks


def _candidates(field: str, name: str) -> list[str]:
    """The name; for a GPU also without a vendor prefix, then its leading parts ('H100-80GB-HBM3' -> 'H100').

    Only a GPU's name is shortened: hardware names carry memory and form suffixes, while a shorter model name
    is another model ('Kimi-K2.5' is not 'Kimi').
    """
    if field != "gpu":
        return [name]
    bare = VENDOR_PREFIX.sub("", name.strip())
    parts = re.split(r"[-_ ]+", bare)
    return list(dict.fromkeys([name, bare, *("-".join(parts[:n]) for n in range(len(parts) - 1, 0, -1))]))


def catalog_match(field: str, name: Any) -> str | None:
    """The catalog id the name stands for, trying it whole and then shorter; None when nothing matches."""
    if not isinstance(name, str) or not name.strip():
        return None
    for candidate in _candidates(field, name):
        wanted = ENGINE_ALIASES.get(candidate.lower(), candidate) if field == "engine" else candidate
        try:
            found = catalog_id(field, wanted)
        except ValueError:
            continue
        if found is not None:
            return found
    return None
