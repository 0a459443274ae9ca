"""The router: page config, navigation over the pages, and the shared sidebar."""

import streamlit as st

from db import safe_url
from settings import get_settings
from ui.lang import _, language_switch
from ui.resources import get_engine


def main() -> None:
    """Route the run to the page the URL names; every page goes through here."""
    st.set_page_config(page_icon="⚡", layout="wide")
    pages = {
        "": [
            st.Page("views/home.py", title=_("Overview"), icon=":material/home:", url_path="home", default=True),
            st.Page("views/handbook.py", title=_("Handbook"), icon=":material/menu_book:", url_path="handbook"),
        ],
        _("Decide"): [
            st.Page("views/tco.py", title=_("Cost calculator"), icon=":material/payments:", url_path="tco"),
            st.Page("views/selector.py", title=_("Engine advisor"), icon=":material/tune:", url_path="selector"),
            st.Page("views/compare.py", title=_("Compare options"), icon=":material/leaderboard:", url_path="compare"),
        ],
        _("Measure"): [
            st.Page("views/probe.py", title=_("Live probe"), icon=":material/speed:", url_path="probe"),
            st.Page("views/runs.py", title=_("Probe runs"), icon=":material/history:", url_path="runs"),
        ],
    }
    page = st.navigation(pages)
    get_engine()  # creates the database (SQLite under ./data/ by default) on first start
    language_switch()
    with st.sidebar:
        st.caption(_("Database: `{url}`").format(url=safe_url(get_settings().database_url)))
    page.run()


if __name__ == "__main__":
    main()
