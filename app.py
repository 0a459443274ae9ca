"""The router: page config, navigation over the pages, and the shared sidebar."""

import streamlit as st

from db import safe_url
from settings import get_settings
from ui.first_paint import drew_whole_page, run_started, stopped_at_headline
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
    run_started()
    shared = st.sidebar.container()  # above the page's own sidebar, filled once the page is drawn
    page.run()
    if stopped_at_headline():
        return  # the language switch comes with the rest of the page, once the browser has drawn its headline
    drew_whole_page(page.url_path)  # from now on this page's runs do not stop at its headline
    with shared:
        language_switch()
        st.caption(_("Database: `{url}`").format(url=safe_url(get_settings().database_url)))


if __name__ == "__main__":
    main()
