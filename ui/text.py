"""Text that users typed, made safe to show inside Markdown (no links, emphasis or HTML from a name)."""

import re

_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:])")


def escape_markdown(text: str) -> str:
    """Backslash-escape every Markdown and HTML character, so the text shows exactly as typed."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text)
