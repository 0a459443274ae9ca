"""The router: page config, navigation over the pages, and the shared sidebar."""

import streamlit as st

from ui.first_paint import drew_whole_page, run_started, stopped_at_headline
from ui.lang import _, language_switch
from ui.resources import get_engine


def _to_overview() -> None:
    """/home: on to the overview at the root URL with the link's parameters (no "Page not found" on the way)."""
    st.switch_page("views/home.py", query_params=st.query_params.to_dict())


def main() -> None:
    """Route the run to the page the URL names; every page goes through here."""
    st.set_page_config(page_icon="⚡", layout="wide")
    pages = {
        "": [
            st.Page("views/home.py", title=_("Overview"), icon=":material/home:", url_path="overview", default=True),
            st.Page(_to_overview, title=_("Overview"), url_path="home", visibility="hidden"),
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


if __name__ == "__main__":
    main()
