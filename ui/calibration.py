"""Stored probe runs as calibrations of perf's estimates, and a run's levels beside the estimate of the same load."""

from collections.abc import Sequence

import pandas as pd
import streamlit as st

from db import CalibrationRun, calibration_runs, confirm_served_model, model_confirmed
from perf import Calibration, MeasuredLevel, PerfError, PerfRequest
from perf.measured import side_by_side
from perf.result import Estimate
from perf.vouch import same_model
from probes.models import LevelResult, RunResult
from ui.lang import _
from ui.names import basis_words
from ui.resources import get_engine
from ui.text import escape_markdown


def _measured(levels: Sequence[LevelResult]) -> tuple[MeasuredLevel, ...]:
    return tuple(
        MeasuredLevel(
            concurrency=level.concurrency,
            request_rate_rps=level.request_rate_rps,
            input_tokens=level.input_tokens_per_request or 0.0,
            output_tokens=level.output_tokens_per_request or 0.0,
            ttft_p50_ms=level.ttft_ms.p50,
            tpot_p50_ms=level.tpot_ms.p50,
            output_tok_s=level.output_tok_s,
        )
        for level in levels
        if level.completed
    )


def from_stored(run: CalibrationRun) -> Calibration:
    """A stored run of a known deployment, as perf's calibration."""
    return Calibration(
        run_id=run.run_id,
        gpu=run.gpu,
        gpus=run.gpu_count,
        model=run.model,
        engine=run.engine,
        quant=run.quant,
        served_model=run.served_model,
        confirmed=run.model_confirmed,
        levels=tuple(
            MeasuredLevel(
                concurrency=level.concurrency,
                request_rate_rps=level.request_rate_rps,
                input_tokens=level.input_tokens_mean or 0.0,
                output_tokens=level.output_tokens_mean or 0.0,
                ttft_p50_ms=level.ttft_p50_ms,
                tpot_p50_ms=level.tpot_p50_ms,
                output_tok_s=level.output_tok_s,
            )
            for level in run.levels
        ),
    )


def stored_calibrations(excluding: str | None = None) -> tuple[Calibration, ...]:
    """Every completed run of a known deployment (perf keeps the ones of the configuration it estimates)."""
    return tuple(from_stored(run) for run in calibration_runs(get_engine()) if run.run_id != excluding)


def estimate_vs_measured(result: RunResult) -> None:
    """For a run of a known deployment: each level beside perf's estimate of the same load (other runs calibrate)."""
    deployment = result.settings.deployment
    if not deployment.complete or not result.levels:
        return
    measured = _measured(result.levels)
    if not measured:
        return
    request = PerfRequest(
        gpu=str(deployment.gpu),
        gpus=int(deployment.gpu_count or 1),
        model=str(deployment.model),
        engine=str(deployment.engine),
        quant=str(deployment.quant),
    )
    with st.expander(_("Estimated against measured"), expanded=True):
        vouches = _vouches(result, str(deployment.model))
        try:
            est, pairs = side_by_side(request, measured, stored_calibrations(excluding=result.run_id))
        except PerfError as exc:
            st.info(_("No estimate for this deployment: {reason}").format(reason=escape_markdown(str(exc))), icon="ℹ️")
            return
        st.caption(_label(est, result, vouches))
        rows = []
        for pair in pairs:
            m, e = pair.measured, pair.estimated
            load = (
                _("{rate} req/s").format(rate=f"{m.request_rate_rps:g}")
                if m.request_rate_rps
                else _("concurrency {concurrency}").format(concurrency=m.concurrency)
            )
            rows.append(
                {
                    _("Load"): load,
                    _("Output tok/s measured"): m.output_tok_s,
                    _("Output tok/s estimated"): e.output_tok_s if e else None,
                    _("Measured / estimated"): pair.tok_s_ratio,
                    _("TTFT p50 ms measured"): m.ttft_p50_ms,
                    _("TTFT p50 ms estimated"): e.ttft_ms.p50 if e else None,
                    _("TPOT p50 ms measured"): m.tpot_p50_ms,
                    _("TPOT p50 ms estimated"): e.tpot_ms.p50 if e else None,
                }
            )
        st.dataframe(
            pd.DataFrame(rows),
            hide_index=True,
            key=f"runs.vs.{result.run_id}",
            column_config={
                _("Measured / estimated"): st.column_config.NumberColumn(format="%.2f×"),
                **{
                    name: st.column_config.NumberColumn(format="%.1f")
                    for name in rows[0]
                    if name not in {_("Load"), _("Measured / estimated")}
                },
            },
        )


def _vouches(result: RunResult, declared: str) -> bool:
    """Whether the run may calibrate its declared model; if the server named another one, offer to confirm it."""
    served, run_id = result.settings.model, result.run_id
    if same_model(served, declared) or (run_id is not None and model_confirmed(get_engine(), run_id)):
        return True
    st.warning(
        _(
            "The server named its model '{served}', not {model}: this run does not calibrate estimates of {model} "
            "until you confirm it measured {model}."
        ).format(served=escape_markdown(served), model=escape_markdown(declared)),
        icon="⚠️",
    )
    if run_id is not None and st.button(
        _("Confirm: this run measured {model}").format(model=declared), key=f"runs.confirm.{run_id}"
    ):
        confirm_served_model(get_engine(), run_id)
        st.rerun()
    return False


def _label(est: Estimate, result: RunResult, vouches: bool) -> str:
    after = (
        _("This run now calibrates later estimates of this deployment at request lengths near its own.")
        if vouches
        else _("This run does not calibrate estimates until it is confirmed.")
    )
    return _(
        "Measured: this run (`{run_id}`). Estimated: perf's estimate of the same load at the run's mean request "
        "lengths ({inputs} in, {outputs} out); 8 in 10 held-out measurements fell within {bands} of such "
        "estimates. Basis: {basis}. {after}"
    ).format(
        after=after,
        run_id=result.run_id,
        inputs=est.request.input_tokens,
        outputs=est.request.output_tokens,
        bands=est.bands_text(_),
        basis=escape_markdown(basis_words(est.basis, _)),
    )
