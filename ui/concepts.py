"""Margin notes: a concept of the handbook, collapsed beside the figure it explains, linked to its section."""

import streamlit as st

from i18n.concepts import CONCEPTS, Concept, concept, note_values, section_anchor
from ui.lang import _, lang_param

HANDBOOK_PATH = "/handbook"


def handbook_link(section: str) -> str:
    """A Markdown link to a section of the handbook page (in the session's language)."""
    query = "".join(f"?{k}={v}" for k, v in lang_param().items())
    label = _("Handbook, section {section}").format(section=section)
    return f"[{label}]({HANDBOOK_PATH}{query}#{section_anchor(section)})"


def _text(item: Concept) -> str:
    return f"{_(item.note).format(**note_values())}\n\n{handbook_link(item.section)}"


def concept_note(key: str) -> None:
    """A collapsed note explaining a concept, where its number is shown."""
    item = concept(key)
    with st.expander(_("What is this? {title}").format(title=_(item.title)), icon=":material/school:"):
        st.markdown(_text(item))


def all_concepts() -> None:
    """Every concept in full (the home page's "How to read this")."""
    for item in CONCEPTS:
        st.markdown(f"**{_(item.title)}**. {_text(item)}")
