"""Honest name matching for catalog entries (GPUs, models, engines, quantizations): a match only when it is close.

A query names an entry when, once normalised, it equals one of the entry's names or aliases, or is a prefix or a
piece of one that is long enough to mean something (a prefix of three characters and half of that name, a piece
from inside it of four characters and most of it). Anything
else is at most a suggestion, ranked by similarity: 'y' is not 'QLoRA NF4 (bitsandbytes)', and 'x' is no engine.
"""

import difflib
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import lru_cache

_NOISE_WORDS = ("nvidia", "amd", "apple", "geforce", "instinct", "tesla", "huawei")

MIN_PARTIAL_CHARS = 3  # a prefix of a name counts from three characters ('h10'), never one or two
MIN_PARTIAL_SHARE = 0.5  # ... and only when it is at least half of the name ('int' of 'int8', 'gpt' of 'gptq')
MIN_PIECE_CHARS = 4  # a piece from inside a name needs four characters ('bitsandbytes' in 'QLoRA NF4 (bitsandbytes)')
MIN_PIECE_SHARE = 0.6  # ... and most of the name ('lla' is not 'ollama')
SUGGEST_RATIO = 0.6  # similarity from which a name is offered as a suggestion
NEAREST_RATIO = 0.8  # similarity from which the one best suggestion may stand in for the query (always said)
NEAREST_MARGIN = 0.05  # ... when it is at least this far ahead of the next entry
MAX_SUGGESTIONS = 5


@lru_cache(maxsize=16_384)  # every lookup normalises every catalog name: the advisor's ranking asks thousands
def normalize(name: str) -> str:
    """Lower-case, drop vendor words and separators: 'NVIDIA A800 40GB' -> 'a80040gb'."""
    text = name.lower()
    for word in _NOISE_WORDS:
        text = re.sub(rf"\b{word}\b", " ", text)
    return re.sub(r"[^a-z0-9.]+", "", text).replace(".", "")


def similarity(query: str, name: str) -> float:
    """How alike two names are once normalised: 0 (nothing shared) to 1 (the same)."""
    a, b = normalize(query), normalize(name)
    if not a or not b:
        return 0.0
    return difflib.SequenceMatcher(None, a, b).ratio()


def _is_part(wanted: str, name: str, *, prefix: bool) -> bool:
    """Whether `wanted` is a prefix (or a piece) of `name` long enough to stand for it."""
    if prefix:
        return len(wanted) >= max(MIN_PARTIAL_CHARS, MIN_PARTIAL_SHARE * len(name)) and name.startswith(wanted)
    return len(wanted) >= max(MIN_PIECE_CHARS, MIN_PIECE_SHARE * len(name)) and wanted in name


def _score(wanted: str, names: Sequence[str]) -> float:
    return max((difflib.SequenceMatcher(None, wanted, n).ratio() for n in names if n), default=0.0)


@dataclass(frozen=True)
class _Index:
    """A catalog's names once normalised, and which entries hold each normalised name (catalog order)."""

    names: dict[str, tuple[str, ...]]
    holders: dict[str, tuple[str, ...]]


@lru_cache(maxsize=64)  # one per catalog (GPUs, models, engines, quantizations) and per test table
def _indexed(items: tuple[tuple[str, tuple[str, ...]], ...]) -> _Index:
    names = {key: tuple(n for n in (normalize(a) for a in aliases) if n) for key, aliases in items}
    holders: dict[str, list[str]] = {}
    for key, normalised in names.items():
        for n in dict.fromkeys(normalised):
            holders.setdefault(n, []).append(key)
    return _Index(names=names, holders={n: tuple(keys) for n, keys in holders.items()})


def _index(keys: Mapping[str, Sequence[str]]) -> _Index:
    """The index of these names, built once per distinct catalog (a ranking looks names up 30,000 times)."""
    return _indexed(tuple((key, tuple(aliases)) for key, aliases in keys.items()))


def _normalised(keys: Mapping[str, Sequence[str]]) -> dict[str, tuple[str, ...]]:
    return _index(keys).names


def _best_first(wanted: str, hits: list[str], names: Mapping[str, Sequence[str]]) -> list[str]:
    order = {key: i for i, key in enumerate(names)}
    return sorted(hits, key=lambda key: (-_score(wanted, names[key]), order[key]))


def ranked(query: str, keys: Mapping[str, Sequence[str]]) -> list[tuple[str, float]]:
    """Every entry with its similarity to the query (its closest name), best first, catalog order on ties."""
    wanted = normalize(query)
    names = _normalised(keys)
    scores = [(key, _score(wanted, aliases) if wanted else 0.0) for key, aliases in names.items()]
    order = {key: i for i, key in enumerate(names)}
    return sorted(scores, key=lambda pair: (-pair[1], order[pair[0]]))


@dataclass(frozen=True)
class ForgivenMatch:
    """A query that named an entry only forgivingly (a prefix or a piece of one of its names, not the name itself)."""

    kind: str  # what was looked up: "GPU", "model", "engine", "quantization"
    query: str
    name: str  # the entry's name as the catalog writes it

    def note(self, flag: str) -> str:
        """The line a command line prints for it: note: --model 'lama3.1-70b' matched 'Llama-3.1-70B-Instruct'."""
        return f"note: {flag} '{self.query}' matched '{self.name}'"


# The flag that names each kind of entry on the command lines, for the notes of forgiving matches.
LOOKUP_FLAGS: Mapping[str, str] = {"GPU": "--gpu", "model": "--model", "engine": "--engine", "quantization": "--quant"}


def forgiven_notes(forgiven: Sequence[ForgivenMatch], flags: Mapping[str, str] = LOOKUP_FLAGS) -> list[str]:
    """One note per forgiving match, naming the flag that gave the name."""
    return [match.note(flags.get(match.kind, match.kind)) for match in forgiven]


_FORGIVEN: ContextVar[list[ForgivenMatch] | None] = ContextVar("forgiven_matches", default=None)


@contextmanager
def forgiven_matches() -> Iterator[list[ForgivenMatch]]:
    """Collect, while the block runs, every lookup that matched only forgivingly (once per kind and query).

    The command lines wrap their reading of the flags in it and print one note per match, so a user sees what a
    loose name became; exact names (case, spaces and punctuation aside) add nothing.
    """
    heard: list[ForgivenMatch] = []
    token = _FORGIVEN.set(heard)
    try:
        yield heard
    finally:
        _FORGIVEN.reset(token)


def _heard(kind: str, query: str, name: str) -> None:
    heard = _FORGIVEN.get()
    match = ForgivenMatch(kind, query, name)
    if heard is not None and match not in heard:
        heard.append(match)


def match_names(query: str, keys: Mapping[str, Sequence[str]], *, kind: str = "") -> tuple[str | None, list[str]]:
    """Return (unique id, []) when the query names one entry, else (None, close candidate ids, best first).

    The candidates are entries the query is a genuine part of (ambiguous) or that look alike (similarity of at
    least SUGGEST_RATIO, from three characters on): suggestions, never a match. A match by a prefix or a piece is
    recorded for `forgiven_matches` under `kind`, with the entry's name (its second key, else its id).
    """
    wanted = normalize(query)
    if not wanted:
        return None, []
    index = _index(keys)
    names = index.names
    tests: tuple[Callable[[str], bool] | None, ...] = (
        None,  # the name itself: looked up in the index
        lambda n: _is_part(wanted, n, prefix=True),
        lambda n: _is_part(wanted, n, prefix=False),
    )
    for exact, test in zip((True, False, False), tests, strict=True):
        if test is None:
            hits = list(index.holders.get(wanted, ()))
        else:
            hits = [key for key, aliases in names.items() if any(test(n) for n in aliases)]
        if len(hits) == 1:
            if not exact:
                shown = keys[hits[0]]
                _heard(kind, query, shown[1] if len(shown) > 1 and shown[1] else hits[0])
            return hits[0], []
        if hits:
            return None, _best_first(wanted, hits, names)
    if len(wanted) < MIN_PARTIAL_CHARS:
        return None, []
    close = [key for key, score in ranked(query, keys) if score >= SUGGEST_RATIO]
    return None, close[:MAX_SUGGESTIONS]


def nearest(query: str, keys: Mapping[str, Sequence[str]]) -> str | None:
    """The one entry clearly closest to a query that names none ('H1000' -> the H100), else None.

    Clearly: a similarity of at least NEAREST_RATIO, NEAREST_MARGIN ahead of the next entry, from three characters.
    Whoever uses it in place of the query must say so.
    """
    if len(normalize(query)) < MIN_PARTIAL_CHARS:
        return None
    scores = ranked(query, keys)
    if not scores or scores[0][1] < NEAREST_RATIO:
        return None
    if len(scores) > 1 and scores[0][1] - scores[1][1] < NEAREST_MARGIN:
        return None
    return scores[0][0]
