"""The catalog's errors: one base for what a user named or entered wrongly, and one for names that match nothing."""

from collections.abc import Sequence

from catalog.matching import normalize


class InputError(ValueError):
    """An expected failure from what a user named or entered: the page or the command line shows it as one message."""


class NameLookupError(InputError):
    """A name that matches no catalog entry, or several; `candidates` holds the close matches, nearest first."""

    def __init__(self, kind: str, query: str, candidates: Sequence[str], known: Sequence[str]) -> None:
        self.kind = kind
        self.query = query
        self.candidates = list(candidates)
        hint = f"did you mean: {', '.join(candidates)}?" if candidates else f"known {kind}s: {', '.join(known)}"
        ambiguous = len(candidates) > 1 and all(normalize(query) in normalize(c) for c in candidates)
        what = "is ambiguous" if ambiguous else "is not in the catalog"
        super().__init__(f"{kind} '{query}' {what}; {hint}")


class GpuLookupError(NameLookupError):
    """A GPU name the catalog does not know."""

    def __init__(self, query: str, candidates: Sequence[str], known: Sequence[str]) -> None:
        super().__init__("GPU", query, candidates, known)


class UnknownModelError(NameLookupError):
    """A model name the catalog does not know."""

    def __init__(self, query: str, candidates: Sequence[str], known: Sequence[str]) -> None:
        super().__init__("model", query, candidates, known)


class UnknownEngineError(NameLookupError):
    """An engine name the catalog does not know."""

    def __init__(self, query: str, candidates: Sequence[str], known: Sequence[str]) -> None:
        super().__init__("engine", query, candidates, known)


class UnknownQuantizationError(NameLookupError):
    """A quantization method the catalog does not know."""

    def __init__(self, query: str, candidates: Sequence[str], known: Sequence[str]) -> None:
        super().__init__("quantization", query, candidates, known)
