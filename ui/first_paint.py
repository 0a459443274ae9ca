"""Headline first: a page's first run ends after its headline; the rest is sent once the browser has drawn it."""

import functools

import streamlit as st
import streamlit.components.v2 as components

BEACON_KEY = "_first_paint_beacon"  # also the element's CSS class (st-key-_first_paint_beacon), which tests wait on
_PAINTED = "_first_paint.{page}"  # set once this session's browser has drawn that page's headline
_STOPPED = "_first_paint.stopped"  # this run ended at a headline (reset as each run starts)

# The browser draws what one run sends as one batch, so a headline sent with a sidebar form, tables and tabs waits
# for all of them (docs/performance.md). The beacon (in the sidebar, so that its going never moves the page) reports
# once the first run is over and no element is still a placeholder waiting for its code, one frame later; the
# timeout covers a background tab, where animation frames do not run.
_JS = """
export default function ({ setTriggerValue }) {
  let sent = false;
  const report = () => {
    if (!sent) {
      sent = true;
      setTriggerValue("painted", true);
    }
  };
  const app = document.querySelector('[data-testid="stApp"]');
  const drawn = () =>
    app.getAttribute("data-test-script-state") === "notRunning" && !app.querySelector('[data-testid="stSkeleton"]');
  const watch = new MutationObserver(() => {
    if (drawn()) {
      watch.disconnect();
      requestAnimationFrame(() => setTimeout(report, 0));
    }
  });
  watch.observe(app, { attributes: true, childList: true, subtree: true });
  if (drawn()) {
    watch.disconnect();
    requestAnimationFrame(() => setTimeout(report, 0));
  }
  setTimeout(report, 3000);
}
"""
_beacon = components.component("first_paint_beacon", js=_JS)


def painted_key(page: str) -> str:
    """The session-state flag that says the browser has drawn this page's headline in this session."""
    return _PAINTED.format(page=page)


def headline_drawn(page: str) -> bool:
    """Whether this session's browser has drawn this page's headline (then every run draws the whole page)."""
    return bool(st.session_state.get(painted_key(page)))


def drew_whole_page(page: str) -> None:
    """Say the page was drawn in full (the beacon's report, or a run that did not stop): later runs draw it all."""
    st.session_state[painted_key(page)] = True


def after_headline(page: str) -> bool:
    """Call right below the headline: True when the rest of the page may be drawn in this run.

    On the page's first run in a session this mounts the beacon and returns False: the caller ends the run with its
    headline drawn, and the beacon's report reruns the page in full. Later runs (every click) return True. What comes
    after the headline must be below it (or in the sidebar): the headline never moves when the rest comes.
    """
    if headline_drawn(page):
        return True
    with st.sidebar:
        _beacon(key=BEACON_KEY, on_painted_change=functools.partial(drew_whole_page, page), height=0)
    st.session_state[_STOPPED] = True
    return False


def run_started() -> None:
    """Call as each run starts (the router does): no headline has stopped it yet."""
    st.session_state.pop(_STOPPED, None)


def stopped_at_headline() -> bool:
    """Whether this run's page ended at its headline: what the router adds after the page can wait too."""
    return bool(st.session_state.get(_STOPPED))
