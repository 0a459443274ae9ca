"""How an engine release is written ('0.19.0', '1.2.0rc6.post3', '0.5.10.post1'), read the same by every input."""

import re

RELEASE = re.compile(r"^[0-9][0-9a-z.+\-]{0,39}$")
"""A release as the engines number them: digits first, then digits, letters, dots, plus and minus signs."""


def engine_release(value: object) -> object:
    """An engine release from a form, a link or a flag: '' for the default, a leading 'v' dropped, lower case.

    Raises ValueError (naming what is allowed) for anything else; a non-string passes through to the model's type
    check.
    """
    if not isinstance(value, str):
        return value
    text = value.strip().lower().removeprefix("v")
    if text and not RELEASE.match(text):
        raise ValueError(
            f"'{value}' is not an engine release: write it as the engine numbers it (0.19.0, 1.2.0rc6, "
            "0.5.10.post1), or leave it empty for the newest release with measured data"
        )
    return text
