"""The compare page's inverse question: under a cost ceiling, the best tokens/s per user any option reaches."""

import streamlit as st

from tco import format_money
from tco.inverse import best_interactivity
from tco.ranking import Ranking
from ui.lang import _, language


def ceiling_answer(ranking: Ranking) -> None:
    """The most interactive estimated level within the SLO whose cost per million output tokens fits the ceiling."""
    ceiling = ranking.inputs.ceiling
    if ceiling is None:
        return
    cur, lang = ranking.inputs.currency, language()
    priced = [(o.worded_label(_), o.price_per_gpu_hour, o.gpus_per_replica, o.levels) for o in ranking.options]
    best = best_interactivity(priced, ceiling)
    limit = format_money(ceiling, cur, language=lang)
    if best is None:
        st.warning(
            _(
                "No option reaches the SLO at {ceiling} or less per million output tokens at any load; raise the "
                "ceiling or loosen the SLO."
            ).format(ceiling=limit),
            icon=":material/price_check:",
        )
        return
    left, right = st.columns([1, 2], vertical_alignment="center")
    left.metric(
        _("Best tokens/s per user under {ceiling}").format(ceiling=limit),
        f"{best.tok_s_per_user:,.1f} tok/s",
        border=True,
        help=_("1000 / TPOT p50: how fast one user's answer streams (estimate)."),
    )
    right.caption(
        _(
            "{option} at concurrency {concurrency}: {cost} per million output tokens for one replica at that load "
            "(estimate). Every estimated load of every ranked option within the SLO was tried; fewer users per "
            "replica stream faster and cost more per token."
        ).format(
            option=best.option,
            concurrency=best.concurrency,
            cost=format_money(best.cost_per_million_output_tokens, cur, language=lang),
        )
    )
