"""Forgiving name matching for catalog entries (GPUs, models): normalise, then exact, prefix, or close matches."""

import difflib
import re
from collections.abc import Mapping, Sequence

_NOISE_WORDS = ("nvidia", "amd", "apple", "geforce", "instinct", "tesla")


def normalize(name: str) -> str:
    """Lower-case, drop vendor words and separators: 'NVIDIA A800 40GB' -> 'a80040gb'."""
    text = name.lower()
    for word in _NOISE_WORDS:
        text = re.sub(rf"\b{word}\b", " ", text)
    return re.sub(r"[^a-z0-9.]+", "", text).replace(".", "")


def match_names(query: str, keys: Mapping[str, Sequence[str]]) -> tuple[str | None, list[str]]:
    """Return (unique id, []) or (None, close candidate ids) for a query against ids with their aliases."""
    wanted = normalize(query)
    if not wanted:
        return None, []
    exact = [key for key, aliases in keys.items() if any(normalize(a) == wanted for a in aliases)]
    if len(exact) == 1:
        return exact[0], []
    if exact:
        return None, sorted(exact)
    prefixed = [key for key, aliases in keys.items() if any(normalize(a).startswith(wanted) for a in aliases)]
    if len(prefixed) == 1:
        return prefixed[0], []
    if prefixed:
        return None, sorted(prefixed)
    contained = [key for key, aliases in keys.items() if any(wanted in normalize(a) for a in aliases)]
    if len(contained) == 1:
        return contained[0], []
    if contained:
        return None, sorted(contained)
    normal_to_key = {normalize(a): key for key, aliases in keys.items() for a in aliases}
    close = difflib.get_close_matches(wanted, list(normal_to_key), n=5, cutoff=0.6)
    return None, sorted({normal_to_key[c] for c in close})
