"""The cost page's notes on where the throughput came from: an estimate (band, basis, staleness) or a probe run."""

import streamlit as st

from catalog import get_engine
from catalog.quantization import get_quant
from perf import PerfError
from tco import TcoInputs
from tco.inputs import TpsSource
from tco.throughput import OperatingPoint, estimate_tps
from ui.calibration import stored_calibrations
from ui.lang import _
from ui.names import estimate_label
from views.tco_parts.topology import topology_note


def point_text(point: OperatingPoint) -> str:
    """Where the estimate stands (the highest load within the SLO, or concurrency 1 missing it), and its label."""
    where = (
        _("at concurrency {concurrency}, the highest within the SLO").format(concurrency=point.concurrency)
        if point.meets_slo
        else _("at concurrency 1: it misses the SLO even there")
    )
    return f"{where}; {estimate_label(point, _)}"


def estimate_note(inputs: TcoInputs) -> None:
    """When the throughput is an estimate, say so on the page with its band and basis (and when it is stale)."""
    if inputs.tps_source != TpsSource.ESTIMATE:
        return
    if topology_note(inputs):  # a unit of two pools (/compare): perf.disagg estimated it, not the one-pool model
        return
    try:
        point = estimate_tps(inputs, stored_calibrations())
    except PerfError as exc:
        st.warning(
            _(
                "The throughput is marked as an estimate, but these inputs have none ({reason}); treat {tok_s} tok/s "
                "as entered."
            ).format(reason=exc, tok_s=f"{inputs.output_tok_s_per_replica:,.6g}"),
            icon="⚠️",
        )
        return
    engine = get_engine(inputs.engine).name
    quant = get_quant(point.estimate.quant).name
    text = _(
        "Throughput {tok_s} tok/s per replica is an {label}. {model} on {gpus}x {gpu} with {engine}, {quant}, {where}."
    ).format(
        tok_s=f"{inputs.output_tok_s_per_replica:,.6g}",
        label=estimate_label(point, _),
        model=point.estimate.model_name,
        gpus=inputs.gpus_per_replica,
        gpu=point.estimate.gpu_name,
        engine=engine,
        quant=quant,
        where=point_text(point).split(";")[0],
    )
    if abs(point.output_tok_s - inputs.output_tok_s_per_replica) > 0.005 * point.output_tok_s:
        text += " " + _(
            "For the inputs now on the page the estimate is {tok_s} tok/s: apply it again under Estimate throughput."
        ).format(tok_s=f"{point.output_tok_s:,.6g}")
    st.info(text, icon=":material/query_stats:")


def measured_note(inputs: TcoInputs) -> None:
    """A measured request rate (`rps`) says so, naming the probe run when the link does."""
    rps = inputs.requests_per_s_per_replica
    if rps is None:
        return
    run = (
        _("probe run `{run_id}`").format(run_id=inputs.rps_run_id)
        if inputs.rps_run_id
        else _("a probe run (not named in the link)")
    )
    st.info(
        _(
            "Capacity per replica is **measured**: {rps} requests/s within the SLO, by {run}. With {out} output "
            "tokens per request that is {tok_s} output tokens/s."
        ).format(
            rps=f"{rps:,.6g}",
            run=run,
            out=f"{inputs.out_tokens_per_request:,}",
            tok_s=f"{inputs.output_tok_s_per_replica:,.6g}",
        ),
        icon=":material/speed:",
    )
