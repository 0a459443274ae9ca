"""The advisor's domain errors: unknown or ambiguous names, each listing the close matches."""

from catalog import GpuLookupError


class SelectorError(ValueError):
    """An expected failure the page or the CLI shows as one clear message."""


class NameLookupError(SelectorError):
    """A name that matches no catalog entry, or several; `candidates` holds the close matches."""

    def __init__(self, kind: str, query: str, candidates: list[str], known: list[str]) -> None:
        self.kind = kind
        self.query = query
        self.candidates = candidates
        hint = f"did you mean: {', '.join(candidates)}?" if candidates else f"known {kind}s: {', '.join(known)}"
        super().__init__(f"{kind} '{query}' is not in the catalog; {hint}")


class UnknownModelError(NameLookupError):
    """A model name the catalog does not know."""

    def __init__(self, query: str, candidates: list[str], known: list[str]) -> None:
        super().__init__("model", query, candidates, known)


class UnknownEngineError(NameLookupError):
    """An engine name the catalog does not know."""

    def __init__(self, query: str, candidates: list[str], known: list[str]) -> None:
        super().__init__("engine", query, candidates, known)


class UnknownQuantizationError(NameLookupError):
    """A quantization method the advisor does not know."""

    def __init__(self, query: str, candidates: list[str], known: list[str]) -> None:
        super().__init__("quantization", query, candidates, known)


__all__ = [
    "GpuLookupError",
    "NameLookupError",
    "SelectorError",
    "UnknownEngineError",
    "UnknownModelError",
    "UnknownQuantizationError",
]
