"""The handbook's own text (Chinese), split into its numbered sections for the handbook page."""

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

HANDBOOK_TEXT = Path(__file__).parent / "data" / "handbook.zh.txt"
_HEADING = re.compile(r"^(?:(?P<num>\d+(?:\.\d+)?)\.?\s+(?P<title>\S.*)|(?P<q>Q\d+)：(?P<qtitle>.+))$")


@dataclass(frozen=True)
class Section:
    """A numbered section ('2.3', 'Q3', '' for the text before the first) with its title and paragraphs."""

    number: str
    title: str
    paragraphs: tuple[str, ...]

    @property
    def level(self) -> int:
        """2 for a chapter (1, 2, …), 3 for a subsection (2.3) or a question (Q3)."""
        return 2 if self.number.isdigit() else 3


@cache
def handbook_sections() -> tuple[Section, ...]:
    """The handbook in order: the title and introduction first (number ''), then every numbered section."""
    lines = HANDBOOK_TEXT.read_text(encoding="utf-8").splitlines()
    sections: list[Section] = []
    number, title = "", lines[0].strip()
    body: list[str] = []
    chapter, in_questions = 0, False
    for line in lines[1:]:
        match = _HEADING.match(line.strip())
        num = match.group("num") if match else None
        if match and num and num.isdigit():  # a chapter follows the last one; numbered lists (in the questions) do not
            if in_questions or int(num) != chapter + 1:
                match = None
            else:
                chapter += 1
        if match and match.group("q"):
            in_questions = True
        if match:
            sections.append(Section(number, title, tuple(body)))
            number = match.group("num") or match.group("q")
            title = (match.group("title") or match.group("qtitle")).strip()
            body = []
        elif line.strip():
            body.append(line.rstrip())
    sections.append(Section(number, title, tuple(body)))
    return tuple(sections)
