"""The advisor's refusals share the catalog's base error: one `except SelectorError` catches both."""

from catalog.errors import InputError as SelectorError

__all__ = ["SelectorError"]
