"""The compare page's every option: the ranked table, one option's details, and what was left out."""

from collections.abc import Mapping
from urllib.parse import urlencode

import pandas as pd
import streamlit as st
from streamlit.elements.lib.column_types import ColumnConfig

from i18n import N_
from tco import format_money
from tco.inputs import SplitBasis
from tco.measured import MeasuredBeside, OptionKey, option_key
from tco.options import RankedOption, reason_text
from tco.ranking import Ranking
from ui.lang import _, language
from ui.names import basis_words
from ui.params import to_params
from ui.tco_links import tco_link_params
from ui.token_table import token_method, token_table
from views.compare_parts.top import band_and_basis, links, price_used

_DETAIL = "compare.detail"


def tco_link(option: RankedOption) -> str:
    """The /tco page with this option filled in (from the cost page's own input model)."""
    return "/tco?" + urlencode(tco_link_params(option.tco_inputs))


def selector_link(option: RankedOption) -> str:
    """The /selector page with this option pinned (from the advisor's own input model)."""
    return "/selector?" + urlencode(to_params(option.advice_request))


def ranking_table(ranking: Ranking, measured: Mapping[OptionKey, MeasuredBeside] | None = None) -> None:
    """The ranked options; the data keeps its English column keys, the headers are in the page's language.

    measured: the options a stored run (probed or imported) measured, shown beside their estimate and marked.
    """
    measured = measured or {}
    cur = ranking.inputs.currency.value
    per_million, fleet, price, per_million_range = (
        f"per 1M output tokens ({cur})",
        f"fleet per month ({cur})",
        f"price per GPU-hour ({cur})",
        f"per 1M range ({cur})",
    )
    meets, misses = _("meets"), _("misses SLO")
    rows = [
        {
            "rank": o.rank,
            "GPU": o.gpu_name,
            "GPUs per replica": o.gpus_per_replica,
            "topology": _topology(o),
            "replicas": o.replicas,
            "GPUs in all": o.total_gpus,
            "engine": o.engine_name,
            "quantization": o.quant_name,
            per_million: o.cost_per_million_output_tokens,
            per_million_range: _range(*o.cost_per_million_range),
            fleet: o.fleet_cost_per_month,
            **_by_kind(o, cur),
            "SLO": meets if o.meets_slo else misses,
            "concurrency": o.concurrency,
            "TTFT p50 ms": o.ttft_p50_ms,
            "TTFT p99 ms": _MISSING if o.ttft_p99_ms is None else f"{o.ttft_p99_ms:,.0f}",
            "TPOT p50 ms": o.tpot_p50_ms,
            "tok/s per replica": o.output_tok_s,
            **_measured_cells(measured.get(option_key(o))),
            "price tier": price_used(o),
            "band": f"{o.band_low:.2f}–{o.band_high:.2f}×",
            "bands": o.bands_text(_),
            "basis": o.basis_kind_text(_),
            "datasheet only": o.datasheet_only,
            "release": o.engine_version,
            price: o.price_per_gpu_hour,
            "cost calculator": tco_link(o),
            "engine advisor": selector_link(o),
            "basis detail": basis_words(o.basis, _),
        }
        for o in ranking.options
    ]
    st.dataframe(
        pd.DataFrame(rows),
        hide_index=True,
        key="compare.table",
        column_config=_column_config(cur, ranking.inputs.token_split),
    )


def _measured_cells(beside: MeasuredBeside | None) -> dict[str, object]:
    """The measured columns of one option: the mark, the measured tok/s, its distance to the estimate."""
    if beside is None:
        return {"measured": "", "measured tok/s per replica": None, "measured vs estimate": _MISSING}
    mark = _("✓ run {run}, concurrency {concurrency}").format(run=beside.run_id[:8], concurrency=beside.concurrency)
    if beside.distance_ratio is not None:
        distance = f"{beside.distance_ratio:+.0%}"
    elif not beside.same_load:
        distance = _("at another concurrency")
    else:
        distance = _MISSING
    return {"measured": mark, "measured tok/s per replica": beside.output_tok_s, "measured vs estimate": distance}


def _topology(option: RankedOption) -> str:
    """'one pool', or 'disaggregated 4P1D (...)': separate prefill and decode pools, a replica being one xPyD unit."""
    if option.topology == "disagg":
        return _("disaggregated {pools} (extrapolated)").format(pools=option.pools)
    return _("one pool")


def _column_config(cur: str, split: SplitBasis) -> dict[str, ColumnConfig]:
    """The table's headers in the page's language, and how its numbers are drawn."""
    per_million, fleet, price, per_million_range = (
        f"per 1M output tokens ({cur})",
        f"fleet per month ({cur})",
        f"price per GPU-hour ({cur})",
        f"per 1M range ({cur})",
    )
    headers = {
        "rank": _("rank"),
        "GPUs per replica": _("GPUs per replica"),
        "topology": _("topology"),
        "replicas": _("replicas"),
        "GPUs in all": _("GPUs in all"),
        "engine": _("engine"),
        "quantization": _("quantization"),
        "concurrency": _("concurrency"),
        "band": _("band"),
        "bands": _("bands (tok/s, TPOT, TTFT)"),
        "basis": _("basis"),
        "release": _("release"),
        "basis detail": _("basis detail"),
        "price tier": _("price tier"),
    }
    column_config: dict[str, ColumnConfig] = {key: st.column_config.Column(label) for key, label in headers.items()}
    column_config |= {
        per_million: st.column_config.NumberColumn(
            _("per 1M output tokens ({currency})").format(currency=cur), format="%.4g"
        ),
        fleet: st.column_config.NumberColumn(
            _("fleet per month ({currency})").format(currency=cur), format="localized"
        ),
        price: st.column_config.NumberColumn(_("price per GPU-hour ({currency})").format(currency=cur)),
        per_million_range: st.column_config.TextColumn(_("per 1M range ({currency})").format(currency=cur)),
        "datasheet only": st.column_config.CheckboxColumn(
            _("datasheet only"), help=_("no measurement of this engine on this GPU architecture backs the estimate")
        ),
        **_by_kind_columns(cur, split),
        "TTFT p50 ms": st.column_config.NumberColumn(format="%.0f"),
        "TTFT p99 ms": st.column_config.TextColumn(help=_("— where the estimate has no p99")),
        "TPOT p50 ms": st.column_config.NumberColumn(format="%.1f"),
        "tok/s per replica": st.column_config.NumberColumn(_("tok/s per replica"), format="%.0f"),
        "measured": st.column_config.TextColumn(
            _("measured"),
            help=_(
                "a stored run (probed or imported) of this GPU, count, model, engine and quantization at request "
                "lengths near yours: the run and the concurrency of its level nearest this option's"
            ),
        ),
        "measured tok/s per replica": st.column_config.NumberColumn(_("measured tok/s per replica"), format="%.0f"),
        "measured vs estimate": st.column_config.TextColumn(
            _("measured vs estimate"),
            help=_("measured output tok/s over the estimate, minus one; only where the run measured this concurrency"),
        ),
        "cost calculator": st.column_config.LinkColumn(_("cost calculator"), display_text=_("open /tco")),
        "engine advisor": st.column_config.LinkColumn(_("engine advisor"), display_text=_("open /selector")),
    }
    return column_config


_KINDS = (  # column key template, its header, which figure: (at the traffic?, TokenCosts field)
    ("per 1M input ({cur})", N_("per 1M input tokens ({currency})"), False, "input_per_million"),
    (
        "per 1M output, decode ({cur})",
        N_("per 1M output tokens, decode share ({currency})"),
        False,
        "output_per_million",
    ),
    ("per 1M blended ({cur})", N_("per 1M tokens, blended ({currency})"), False, "blended_per_million"),
    (
        "per 1M blended at traffic ({cur})",
        N_("per 1M tokens, blended, your traffic ({currency})"),
        True,
        "blended_per_million",
    ),
)


def _by_kind(option: RankedOption, cur: str) -> dict[str, float | None]:
    """The option's cost per million tokens by kind (tco/tokens.py), by the table's column keys."""
    row: dict[str, float | None] = {}
    for key, _header, at_traffic, field in _KINDS:
        costs = None if option.tokens is None else (option.tokens.at_traffic if at_traffic else option.tokens.full_load)
        row[key.format(cur=cur)] = None if costs is None else getattr(costs, field)
    return row


def _by_kind_columns(cur: str, split: SplitBasis) -> dict[str, ColumnConfig]:
    help_text = (
        _(
            "Each request's GPU time split by the option's own estimated prefill, cached-prefix and decode times at "
            "its operating point; blended at the request's own input/output mix."
        )
        if split == SplitBasis.ESTIMATE
        else _("Each request's GPU time split by the prefill share; blended at the request's own input/output mix.")
    )
    return {
        key.format(cur=cur): st.column_config.NumberColumn(
            _(header).format(currency=cur), format="%.4g", help=help_text
        )
        for key, header, _at, _field in _KINDS
    }


def option_details(ranking: Ranking) -> None:
    options = {o.rank: o for o in ranking.options}
    if st.session_state.get(_DETAIL) not in options:
        st.session_state[_DETAIL] = 1
    chosen = st.selectbox(
        _("Option"), list(options), key=_DETAIL, format_func=lambda r: f"#{r} {options[r].worded_label(_)}"
    )
    option = options[chosen]
    cur, lang = ranking.inputs.currency, language()
    cols = st.columns(4)
    cols[0].metric(
        _("Per million output tokens"),
        format_money(option.cost_per_million_output_tokens, cur, language=lang),
        border=True,
    )
    cols[1].metric(
        _("Fleet per month"), format_money(option.fleet_cost_per_month, cur, compact=True, language=lang), border=True
    )
    cols[2].metric(_("Band (estimate)"), f"{option.band_low:.2f}–{option.band_high:.2f}×", border=True)
    cols[3].metric(_("Basis"), option.basis_kind_text(_), border=True)
    band_and_basis(option)
    if option.tokens is not None:
        st.markdown("**" + _("Per million tokens, by kind") + "**")
        token_table(option.tokens, cur.value, "compare.tokens")
        inputs = option.tco_inputs
        token_method(option.tokens, inputs.in_tokens_per_request, inputs.out_tokens_per_request)
    links(option)


def left_out(ranking: Ranking) -> None:
    title = _("Considered {considered} combinations; ranked {ranked}").format(
        considered=f"{ranking.considered:,}", ranked=f"{len(ranking.options):,}"
    )
    with st.expander(title):
        for reason, count in sorted(ranking.skipped.items(), key=lambda item: -item[1]):
            st.markdown(f"- {reason_text(reason, _)}: {count:,}")
        if ranking.dropped:
            st.markdown(_("**GPUs without an option ({count})**").format(count=len(ranking.dropped)))
            for gone in ranking.dropped:
                st.markdown(f"- {gone.gpu_name}: {gone.reason_worded(_)}")
        st.caption(
            _(
                "Every catalog GPU with a price × GPU count × engine with a step-time model × quantization the "
                "advisor allows on it; each kept option is estimated at the SLO operating point (the highest "
                "concurrency within the SLO) and priced with the cost calculator's arithmetic."
            )
        )


_MISSING = "—"  # a grid shows a missing number as 'None': a dash, explained in the column's help, instead


def _range(low: float, high: float) -> str:
    """'0.071–0.32', or one figure when both ends read the same (never '15–15')."""
    first, last = f"{low:.4g}", f"{high:.4g}"
    return first if first == last else f"{first}–{last}"
