"""Save, list, open and delete named scenarios of a page (short links ?s=<id>)."""

from collections.abc import Callable

import streamlit as st
from pydantic import BaseModel

from db import delete_scenario, get_scenario, list_scenarios, save_scenario
from ui.lang import _
from ui.params import to_params
from ui.resources import get_engine
from ui.state import SCENARIO_PARAM
from ui.text import escape_markdown


def load_scenario_params(page: str) -> Callable[[str], tuple[dict[str, str] | None, str | None]]:
    """A loader for PageState: a scenario id -> its stored parameters, or None and why."""

    def load(scenario_id: str) -> tuple[dict[str, str] | None, str | None]:
        row = get_scenario(get_engine(), scenario_id, page=page)
        if row is None:
            return None, _("Scenario '{id}' does not exist (it may have been deleted). Showing the defaults.").format(
                id=scenario_id
            )
        return row.params, _("Opened saved scenario “{name}”.").format(name=escape_markdown(row.name))

    return load


def scenario_panel(page: str, page_url: str, model: BaseModel, on_saved: Callable[[str, dict[str, str]], None]) -> None:
    """An expander to save the current inputs under a name, and to open or delete saved ones."""
    engine = get_engine()
    with st.expander(_("Saved scenarios"), icon=":material/bookmark:"):
        with st.form(f"{page}.save-form", clear_on_submit=True, border=False):
            name = st.text_input(
                _("Scenario name"), max_chars=200, key=f"{page}.scenario-name", placeholder=_("e.g. A800 baseline")
            )
            submitted = st.form_submit_button(_("Save scenario"), icon=":material/save:")
        if submitted:
            params = to_params(model)
            row = save_scenario(engine, page, name or _("untitled"), params)
            on_saved(row.id, params)
            st.success(
                _("Saved “{name}”. Short link: `{link}`").format(
                    name=escape_markdown(row.name), link=f"{page_url}?{SCENARIO_PARAM}={row.id}"
                ),
                icon="✅",
            )
        rows = list_scenarios(engine, page)
        if not rows:
            st.caption(_("No saved scenarios yet."))
        for row in rows:
            left, mid, right = st.columns([5, 1, 1], vertical_alignment="center")
            left.text(f"{row.name}  ·  {row.id}  ·  {row.created_at:%Y-%m-%d %H:%M}")
            mid.page_link(f"views/{page}.py", label=_("Open"), query_params={SCENARIO_PARAM: row.id})
            if right.button(_("Delete"), key=f"{page}.delete.{row.id}", type="tertiary"):
                delete_scenario(engine, row.id)
                st.rerun()
