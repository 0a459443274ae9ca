"""The advisor's estimated performance for the recommendation and the runner-up, and the link to price it."""

import re

import streamlit as st

from catalog import CUSTOM_MODEL, find_gpu
from catalog.quantization import get_quant
from selector import Advice
from tco import TcoInputs
from tco.inputs import TpsSource
from tco.lever_basis import FULL_PRECISION_BITS, lever_link_params
from tco.throughput import AdviceEstimate, OperatingPoint
from ui.lang import _, lang_param
from ui.names import estimate_label, quant_name, unmodelled_gpu_note
from ui.npu_measurements import npu_measurements
from ui.resources import price_book
from ui.tco_links import tco_link_params

# perf's words when the weights leave no room (perf/estimate.py), read back to word them in the page's language
_DOES_NOT_FIT = re.compile(r"^gpus: (?P<model>.+) does not fit (?P<gpus>\d+)x (?P<gpu>.+) in (?P<quant>\S+)$")


def _estimate_label(point: OperatingPoint) -> str:
    """How the page names the estimate: its band and what it rests on (tco's `label`, in the page's language)."""
    return estimate_label(point, _)


def _estimate_short_label(point: OperatingPoint) -> str:
    """The estimate's short name (tco's `short_label`), in the page's language."""
    band = point.estimate.band
    return _("estimate (band {low}–{high}×, basis {kind})").format(
        low=f"{band.low_ratio:.2f}", high=f"{band.high_ratio:.2f}", kind=point.estimate.basis.kind_text(_)
    )


def _missing(est: AdviceEstimate) -> str:
    """Why there is no estimate (tco's `missing`), in the page's language."""
    if est.unmodelled_gpu:
        return unmodelled_gpu_note(est.unmodelled_gpu, _)
    if est.missing == f"no estimate for {est.engine_name}":
        return _("no estimate for {engine}").format(engine=est.engine_name)
    prefix = f"no estimate for {est.engine_name}: "
    if est.missing.startswith(prefix):
        problem = est.missing.removeprefix(prefix)
        unfit = _DOES_NOT_FIT.match(problem)
        if unfit:
            return _("no estimate for {engine}: {model} does not fit {gpus}× {gpu} in {quant}.").format(
                engine=est.engine_name,
                model=unfit["model"],
                gpus=unfit["gpus"],
                gpu=unfit["gpu"],
                quant=quant_name(unfit["quant"], short=True),
            )
        return _("no estimate for {engine}; the estimator says: `{problem}`").format(
            engine=est.engine_name, problem=problem
        )
    return est.missing


def _estimate_column(title: str, est: AdviceEstimate) -> None:
    st.markdown(
        _("**{title}: {engine}, {quant}**").format(
            title=title, engine=est.engine_name, quant=quant_name(est.quant, short=True)
        )
    )
    if est.point is None:
        st.caption(_missing(est))
        return
    point, level = est.point, est.at_target
    cols = st.columns(2)
    at = _("at concurrency {concurrency}").format(concurrency=est.target_concurrency)
    if level is not None:
        cols[0].metric(_("TTFT p50 (estimate)"), f"{level.ttft_ms.p50:,.0f} ms", border=True, help=at)
        cols[1].metric(_("TPOT p50 (estimate)"), f"{level.tpot_ms.p50:,.1f} ms", border=True, help=at)
        cols = st.columns(2)
        cols[0].metric(
            _("Output tok/s (estimate)"),
            f"{level.output_tok_s:,.0f}",
            border=True,
            help=_("{at}, per replica").format(at=at),
        )
    best = point.estimate.best_concurrency_within_slo
    cols[1].metric(
        _("Max in SLO (estimate)"),
        _("none") if best is None else f"{best:,}",
        border=True,
        help=_("the highest concurrency within the SLO: {tok_s} tok/s per replica there").format(
            tok_s=f"{point.output_tok_s:,.0f}"
        )
        if best
        else _("misses the SLO even at concurrency 1"),
    )
    st.caption(_("{label}.").format(label=_estimate_label(point)))


def estimates(advice: Advice, chosen: AdviceEstimate, runner_up: AdviceEstimate) -> None:
    """The estimates for the recommendation and the runner-up engine: latency, throughput, the SLO load."""
    st.markdown(_("**:material/query_stats: Estimated performance**"))
    slo = chosen.point.estimate.request.slo if chosen.point else None
    target = (
        _("; SLO TTFT p50 ≤ {ttft_p50} ms, p99 ≤ {ttft_p99} ms, TPOT p50 ≤ {tpot_p50} ms").format(
            ttft_p50=f"{slo.ttft_p50_ms:g}", ttft_p99=f"{slo.ttft_p99_ms:g}", tpot_p50=f"{slo.tpot_p50_ms:g}"
        )
        if slo
        else ""
    )
    st.caption(
        _(
            "Estimates, not measurements: requests of {input} input and {output} output tokens (your context) at "
            "{concurrency} concurrent sequences{target}."
        ).format(
            input=f"{chosen.input_tokens:,}",
            output=f"{chosen.output_tokens:,}",
            concurrency=advice.request.concurrency,
            target=target,
        )
    )
    left, right = st.columns(2)
    with left:
        _estimate_column(_("Recommended"), chosen)
    with right:
        _estimate_column(_("Runner-up"), runner_up)
    if chosen.unmodelled_gpu:
        npu_measurements(advice.gpu_id, advice.model_id)


def price_link(advice: Advice, chosen: AdviceEstimate) -> None:
    """The cost page with the GPU, its catalog price and, when there is one, the estimated throughput."""
    gpu = find_gpu(advice.gpu_id)
    request = advice.request
    values: dict[str, object] = {
        "gpu": gpu.id,
        "gpus": request.gpus,
        "in_tokens": request.in_tokens_per_request,
        "out_tokens": request.out_tokens_per_request,
        "traffic": request.traffic_requests_per_day,
    }
    tier = price_book().public_price(gpu.id)
    if tier is not None:
        values.update(price=tier.price_per_gpu_hour, currency=tier.currency)
    point = chosen.point
    custom = advice.request.model == CUSTOM_MODEL
    if point is not None:
        values.update(
            gpus=point.estimate.layout.gpus,
            tps=point.output_tok_s,
            engine=chosen.engine,
            engine_version=advice.request.engine_version,
            quant_method=point.estimate.quant,
        )
        # the cost page estimates catalog models only: a custom model's throughput arrives as a figure to price
        values |= (
            {"tps_source": TpsSource.ENTERED}
            if custom
            else {"tps_source": TpsSource.ESTIMATE, "model": advice.model_id}
        )
        values |= lever_link_params()  # an estimate, even of a custom model: prompt reuse and spot are what-ifs
        if custom and get_quant(point.estimate.quant).bits_per_weight < FULL_PRECISION_BITS:
            values["quant"] = False  # /tco cannot see that this typed throughput is already quantized
    params = tco_link_params(TcoInputs.model_validate(values), priced=tier is not None)
    st.page_link(
        "views/tco.py", label=_("Price this"), icon=":material/payments:", query_params={**params, **lang_param()}
    )
    if point is not None:
        where = _("the highest within the SLO") if point.meets_slo else _("misses the SLO")
        st.caption(
            _(
                "Carries the estimated {tok_s} tok/s per replica at concurrency {concurrency} ({where}), an {label}."
            ).format(
                tok_s=f"{point.output_tok_s:,.0f}",
                concurrency=point.concurrency,
                where=where,
                label=_estimate_short_label(point),
            )
        )
        if custom:
            st.caption(_("The cost page takes it as a figure to price: it estimates the catalog's models only."))
    if tier is None:
        st.caption(_("No public hourly price on record for {gpu}; enter yours on the cost page.").format(gpu=gpu.name))
