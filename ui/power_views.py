"""A run's measured GPU energy: its cards (J per output token, kWh) and the power chart on the run's time axis."""

import pandas as pd
import streamlit as st

from catalog.units import J_PER_KWH, TOKENS_PER_MILLION
from probes.metrics import level_energy
from probes.models import RunResult
from probes.power import energy_amount, three_digits
from probes.power_figure import power_figure
from ui.lang import _


def power_section(result: RunResult, key: str) -> None:
    """The energy the run measured through its DCGM exporter, then each GPU's power over time."""
    energy = result.energy
    failed = sum(1 for s in result.power if not s.ok)
    if energy is None:
        st.info(
            _(
                "No energy was measured: the DCGM exporter gave fewer than two readings of a GPU over the run's "
                "levels ({failed} failed reads)."
            ).format(failed=failed),
            icon="ℹ️",
        )
    else:
        cards = st.columns(4)
        per_token = energy.j_per_output_token
        cards[0].metric(
            _("Energy per output token"),
            "—" if per_token is None else f"{three_digits(per_token)} J",
            border=True,
            help=_(
                "Measured: the GPUs' energy over the levels divided by the output tokens of the successful requests."
            ),
        )
        cards[1].metric(
            _("Energy of the run"),
            energy_amount(energy.energy_j),
            border=True,
            help=_("{kwh} kWh ({joules} J) over {seconds} s of levels, all GPUs together.").format(
                kwh=three_digits(energy.kwh), joules=f"{energy.energy_j:,.0f}", seconds=f"{energy.window_s:,.1f}"
            ),
        )
        per_million = None if per_token is None else per_token * TOKENS_PER_MILLION / J_PER_KWH
        cards[2].metric(
            _("Energy per 1M output tokens"),
            "—" if per_million is None else f"{three_digits(per_million)} kWh",
            border=True,
            help=_("For the cost, multiply by the electricity price and the PUE on the cost page (GPU energy only)."),
        )
        cards[3].metric(
            _("Mean GPU power"),
            "—" if energy.mean_power_w is None else f"{energy.mean_power_w:,.0f} W",
            border=True,
            help=_("Energy divided by the levels' time, summed over {gpus} GPUs.").format(gpus=energy.gpus),
        )
        source = (
            _("from the GPUs' energy counter")
            if energy.source == "energy_counter"
            else _("from the integral of the power read")
        )
        st.caption(
            _("Measured {source}; {reads} reads of the DCGM exporter, {failed} failed.").format(
                source=source, reads=energy.scrapes, failed=failed
            )
        )
    if any(s.ok and s.power_w is not None for s in result.power):
        st.plotly_chart(power_figure(result, _), key=f"{key}.fig.power")
    if energy is not None and len(result.levels) > 1:
        st.dataframe(pd.DataFrame(_level_rows(result)), hide_index=True, key=f"{key}.power_levels")


def _level_rows(result: RunResult) -> list[dict[str, object]]:
    """Each level's own energy: the load, J per output token and the mean power over its time."""
    rate = any(level.request_rate_rps is not None for level, _energy in level_energy(result))
    rows: list[dict[str, object]] = []
    for level, energy in level_energy(result):
        rows.append(
            {
                _("Request rate (req/s)") if rate else _("Concurrency"): (
                    level.request_rate_rps if rate else level.concurrency
                ),
                _("Output tokens"): level.output_tokens,
                _("Energy per output token (J)"): None if energy is None else energy.j_per_output_token,
                _("Mean GPU power (W)"): None if energy is None else energy.mean_power_w,
            }
        )
    return rows
