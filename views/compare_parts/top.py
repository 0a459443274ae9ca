"""The compare page's top option: its cost, latency, band and basis, and its links to the other pages."""

import streamlit as st

from i18n import N_
from tco import convert, format_money
from tco.compare_inputs import RankBy
from tco.money import Currency, format_money_range
from tco.options import RankedOption
from tco.prices import kind_text
from tco.ranking import Ranking
from ui.lang import _, language
from ui.names import basis_words, group_words
from ui.params import to_params
from ui.tco_links import tco_link_params

_RANKED_BY = {
    RankBy.PER_MILLION: N_("cost per million output tokens"),
    RankBy.FLEET: N_("monthly fleet cost"),
    RankBy.PESSIMISTIC: N_("cost per million output tokens at the low end of each throughput band"),
    RankBy.INPUT: N_("cost per million input tokens at full load"),
    RankBy.OUTPUT: N_("cost per million output tokens (decode share) at full load"),
    RankBy.BLENDED: N_("blended cost per million tokens at full load"),
    RankBy.INPUT_AT_TRAFFIC: N_("cost per million input tokens at your traffic"),
    RankBy.OUTPUT_AT_TRAFFIC: N_("cost per million output tokens (decode share) at your traffic"),
    RankBy.BLENDED_AT_TRAFFIC: N_("blended cost per million tokens at your traffic"),
}


def price_used(option: RankedOption) -> str:
    """'on-demand · 晨涧云 (mainland China)', or 'your price' for an override."""
    if option.price_overridden:
        return _("your price")
    return f"{kind_text(option.price_kind, _)} · {_(option.price_provider)} ({_(option.price_region)})"


def headline(ranking: Ranking) -> None:
    """The top option: its name, its rank and verdict, its figures."""
    top = ranking.top
    assert top is not None
    cur = ranking.inputs.currency
    if top.meets_slo:
        verdict = _("meets the SLO")
    else:
        verdict = _("no option meets the SLO; this one misses it least expensively")
    st.subheader(f":material/trophy: {top.worded_label(_)}")
    st.caption(
        _("Rank 1 of {count} by {ranked_by}: {verdict}. Every figure is an estimate.").format(
            count=f"{len(ranking.options):,}", ranked_by=_(_RANKED_BY[ranking.inputs.rank_by]), verdict=verdict
        )
    )
    _top_metrics(top, cur)
    _range_and_other_currency(ranking)


def _top_metrics(top: RankedOption, cur: Currency) -> None:
    """The top option's four figures: cost per million, fleet per month, GPUs, throughput."""
    lang = language()
    price_help = _("at {price} {currency}/GPU-hour: {tier}")
    cols = st.columns(4)
    cols[0].metric(
        _("Per million output tokens"),
        format_money(top.cost_per_million_output_tokens, cur, language=lang),
        border=True,
        help=price_help.format(price=f"{top.price_per_gpu_hour:g}", currency=cur.value, tier=price_used(top)),
    )
    cols[1].metric(
        _("Fleet per month"),
        format_money(top.fleet_cost_per_month, cur, compact=True, language=lang),
        border=True,
        help=_("Exactly {amount}").format(amount=format_money(top.fleet_cost_per_month, cur)),
    )
    cols[2].metric(
        _("GPUs needed"),
        f"{top.total_gpus:,}",
        border=True,
        help=_("{replicas} replicas × {gpus} GPUs at the peak").format(
            replicas=f"{top.replicas:,}", gpus=top.gpus_per_replica
        ),
    )
    cols[3].metric(
        _("Tok/s per replica (estimate)"),
        f"{top.output_tok_s:,.0f} tok/s",
        border=True,
        help=_("at concurrency {concurrency}, the highest within the SLO").format(concurrency=top.concurrency),
    )


def _range_and_other_currency(ranking: Ranking) -> None:
    """The cost's range across the band, a datasheet-only warning, and the figures in the other currency."""
    top = ranking.top
    assert top is not None
    cur, lang = ranking.inputs.currency, language()
    low, high = top.cost_per_million_range
    st.caption(
        _(
            "Per million output tokens, {range} across the throughput band; rank it by the pessimistic end "
            "to favour options whose estimate is surer."
        ).format(range=format_money_range(low, high, cur, language=lang))
    )
    if top.datasheet_only:
        st.warning(_datasheet_warning(ranking), icon="⚠️")
    other = Currency.USD if cur == Currency.CNY else Currency.CNY
    fx = ranking.inputs.cny_per_usd
    st.caption(
        _(
            "In {currency} at {fx} CNY per USD: {per_million} per million output tokens, {fleet} for the fleet per "
            "month."
        ).format(
            currency=other.value,
            fx=f"{fx:g}",
            per_million=format_money(convert(top.cost_per_million_output_tokens, cur, other, fx), other, language=lang),
            fleet=format_money(convert(top.fleet_cost_per_month, cur, other, fx), other, compact=True, language=lang),
        )
    )


def _datasheet_warning(ranking: Ranking) -> str:
    """Why the top option is uncertain, and the best-ranked option with a measured basis instead."""
    top, measured = ranking.top, ranking.first_measured
    assert top is not None
    text = _(
        "This option rests on datasheet figures alone: no measurement of {engine} on {gpu}'s architecture "
        "backs it. Rank by the pessimistic end, or probe it before buying."
    ).format(engine=top.engine_name, gpu=top.gpu_name)
    if measured is None:
        return text
    cur, lang = ranking.inputs.currency, language()
    low, high = measured.cost_per_million_range
    best = _(
        "The best-ranked option with a measured basis (fitted or calibrated) is rank {rank}, {label}: {cost} per "
        "million output tokens ({range} across its band), {verdict}."
    ).format(
        rank=measured.rank,
        label=measured.worded_label(_),
        cost=format_money(measured.cost_per_million_output_tokens, cur, language=lang),
        range=format_money_range(low, high, cur, language=lang),
        verdict=_("meets the SLO") if measured.meets_slo else _("misses the SLO"),
    )
    return _("{warning} {alternative}").format(warning=text, alternative=best)


def latency_and_links(top: RankedOption) -> None:
    """The top option's estimated latency, its band and basis, and its links to the advisor and the cost page."""
    cols = st.columns(4)
    cols[0].metric(_("TTFT p50 (estimate)"), f"{top.ttft_p50_ms:,.0f} ms", border=True)
    cols[1].metric(
        _("TTFT p99 (estimate)"), "—" if top.ttft_p99_ms is None else f"{top.ttft_p99_ms:,.0f} ms", border=True
    )
    cols[2].metric(_("TPOT p50 (estimate)"), f"{top.tpot_p50_ms:,.1f} ms", border=True)
    cols[3].metric(_("Concurrency per replica"), f"{top.concurrency:,}", border=True)
    band_and_basis(top)
    links(top)


def band_and_basis(option: RankedOption) -> None:
    st.caption(
        _(
            "Estimate: 8 in 10 held-out measurements fell within {bands} of the estimate ({group}). Basis: {basis}."
        ).format(
            bands=option.bands_text(_),
            group=group_words(option.band.group, _),
            basis=basis_words(option.basis, _),
        )
    )


def links(option: RankedOption) -> None:
    left, right = st.columns(2)
    left.page_link(
        "views/tco.py",
        label=_("Price this in the cost calculator"),
        icon=":material/payments:",
        query_params=tco_link_params(option.tco_inputs),
    )
    right.page_link(
        "views/selector.py",
        label=_("Open in the engine advisor"),
        icon=":material/tune:",
        query_params=to_params(option.advice_request),
    )
