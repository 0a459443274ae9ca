"""Keep every page behind app.py's st.navigation, even when Streamlit runs a pages/ file on its own."""

import streamlit as st
from streamlit.runtime.pages_manager import PagesManager


def require_router() -> None:
    """Run app.py's router instead, if Streamlit ran this page directly.

    Streamlit treats a `pages/` folder beside the main script as a legacy multipage app until app.py has called
    st.navigation in the process (and AppTest starts every run that way). A shared link opened first after a
    restart would then run the page without the router: no page config, no shared sidebar. Here the router runs
    in its place, in the same script run (so no click is lost), and the direct run stops.
    """
    if not PagesManager.uses_pages_directory:
        return
    PagesManager.uses_pages_directory = False
    from app import main

    main()
    st.stop()
