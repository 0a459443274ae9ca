"""Overview: what the dashboard answers and where to start."""

import streamlit as st

st.title("LLM serving decisions")
st.markdown(
    "Three questions, one place: **what will it cost**, **what should we run**, and **how fast is it really**. "
    "Every page keeps its inputs in the URL, so a link shows the same scenario on another screen."
)
left, mid, right = st.columns(3)
with left.container(border=True):
    st.subheader(":material/payments: What will it cost?")
    st.write(
        "GPU price and traffic in; cost per request, per million tokens, per month and year out, "
        "with the GPUs the traffic needs and what each optimization saves."
    )
    st.page_link("views/tco.py", label="Open the cost calculator", icon=":material/arrow_forward:")
with mid.container(border=True):
    st.subheader(":material/tune: What should we run?")
    st.write(
        "GPU, model and workload in; the engine, quantization, KV-cache and speculative-decoding advice, "
        "the memory fit and a launch command out, every decision with its source."
    )
    st.page_link("views/selector.py", label="Open the engine advisor", icon=":material/arrow_forward:")
with right.container(border=True):
    st.subheader(":material/speed: How fast is it really?")
    st.write(
        "An OpenAI-compatible endpoint in; TTFT, TPOT and throughput at each concurrency level out, the highest "
        "concurrency within your SLO, every run kept to compare, and the measured throughput carried into the costs."
    )
    st.page_link("views/probe.py", label="Open the live probe", icon=":material/arrow_forward:")
st.page_link(
    "views/compare.py",
    label="Or compare every GPU, engine and quantization by estimated cost for your traffic and SLO",
    icon=":material/leaderboard:",
)
