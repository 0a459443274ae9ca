"""The handbook the app is built from (Chinese), section by section, so every concept note can link to its source."""

import streamlit as st

from catalog.handbook_text import handbook_sections
from i18n.concepts import section_anchor
from ui.errors import guarded
from ui.lang import _


def body() -> None:
    """Draw the page."""
    sections = handbook_sections()
    st.title(sections[0].title)
    st.caption(
        _(
            "The team's handbook, in its own words (Chinese). Its lost tables are not repeated here; every rule and "
            "number the app uses from it is cited where it is used."
        )
    )
    for paragraph in sections[0].paragraphs:
        st.markdown(paragraph)
    for section in sections[1:]:
        heading = (
            f"{section.number} {section.title}" if section.number[0].isdigit() else f"{section.number}：{section.title}"
        )
        (st.header if section.level == 2 else st.subheader)(heading, anchor=section_anchor(section.number))
        code = [p for p in section.paragraphs if p.startswith(("import ", "async ", "    ", "vllm ", "--", "#"))]
        for paragraph in section.paragraphs:
            if paragraph in code:
                continue
            st.markdown(paragraph.replace("*", "\\*"))
        if code:
            st.code("\n".join(code), language="python" if code[0].startswith("import") else "bash")


guarded(body)
