"""Published measurements on an NPU, shown where the step-time model gives no estimate: figures with their source."""

import streamlit as st

from catalog import find_gpu, find_model
from perf.npu_measurements import NpuMeasurement, measured_on
from ui.lang import _
from ui.tables import without_gaps


def _deployment(m: NpuMeasurement) -> str:
    if m.deployment == "disaggregated":
        return _("disaggregated")
    return _("aggregated")


def _row(m: NpuMeasurement) -> dict[str, object]:
    return {
        _("Model"): find_model(m.model).name,
        _("NPUs"): m.gpus,
        _("Deployment"): _deployment(m),
        _("Format"): m.quant_as_published,
        _("Tokens in / out"): f"{m.input_tokens:,} / {m.output_tokens:,}",
        _("Concurrency"): m.concurrency,
        _("TTFT mean (ms)"): round(m.ttft_mean_ms),
        _("TTFT p99 (ms)"): round(m.ttft_p99_ms),
        _("TPOT mean (ms)"): m.tpot_mean_ms,
        _("Output tok/s"): round(m.output_tok_s),
        _("Output tok/s per NPU"): round(m.output_tok_s_per_gpu, 1),
        _("Speculative decoding"): m.speculative,  # last: the longest cell, and a setting rather than a figure
    }


def npu_measurements(gpu_id: str, model_id: str | None = None) -> None:
    """The published measurements on this NPU (this model's first), each with its settings, and where they are from."""
    found = measured_on(gpu_id, model_id)
    if not found:
        return
    gpu = find_gpu(gpu_id)
    own = sum(1 for m in found if m.model == model_id)
    st.markdown(_("**Published measurements on {gpu}**").format(gpu=gpu.name))
    st.caption(
        _(
            "Measurements, not estimates: {count} operating points published for {engines} on {servers} ({own} of "
            "this model; disaggregated: prefill and decode on separate NPUs). Each holds for the layout, format and "
            "speculative decoding it names (speculative decoding shortens TPOT and raises throughput); no estimate "
            "is fitted to them."
        ).format(
            count=len(found),
            engines=", ".join(sorted({m.engine for m in found})),
            servers=", ".join(sorted({m.server for m in found})),
            own=own,
        )
    )
    st.dataframe(without_gaps([_row(m) for m in found]), hide_index=True)
    for source, licence in sorted({(m.source.split(" (")[0], m.licence) for m in found}):
        st.caption(
            _(
                "Source: {source} ({licence}); the revision read, rows and checks: perf/data/npu_measurements.md."
            ).format(source=source, licence=licence)
        )
