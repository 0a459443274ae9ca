"""The 'self-hosting is cheaper from' figure beside a hosted API, on /tco and /compare: its label, value and hover."""

from i18n.numbers import format_large
from ui.lang import _, language


def break_even_label() -> str:
    """The card's label; the unit is in it, so the figure fits a third of the page ('2.200B', '22亿')."""
    return _("Self-hosting cheaper from (tokens/month)")


def break_even_column() -> str:
    """The same figure's column header in a table of hosted APIs, lowercase like the table's other headers."""
    return _("self-hosting cheaper from (tokens/month)")


def break_even_value(requests_per_month: float | None, tokens_per_request: int) -> str:
    """The monthly tokens from which the self-hosted fleet costs less; 'never' when no volume does at these prices."""
    if requests_per_month is None:
        return _("never")
    return format_large(requests_per_month * tokens_per_request, language())


def break_even_help() -> str:
    """The card's hover: what the volume is, and what 'never' means."""
    return _(
        "The monthly volume (input + output tokens) from which the self-hosted fleet, at least one replica, "
        "costs less than this API and stays so. Never: at these prices, no volume does."
    )
