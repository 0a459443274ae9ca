"""Where the levers start from: what the throughput already includes, and which levers are what-ifs."""

from catalog.quantization import AUTO, get_quant
from i18n import N_, Translate, identity
from tco.inputs import TcoInputs, TpsSource

QUANT = "quant"
PREFIX = "prefix"
SPOT = "spot"
WHAT_IF_LEVERS = (PREFIX, SPOT)  # assumptions about the traffic (prompt reuse) and the market (spot prices)
FULL_PRECISION_BITS = 16.0  # a format at this many bits per weight or more is not a quantization


def measured_or_estimated(inputs: TcoInputs) -> bool:
    """The throughput came from perf's estimate or a probe run (not typed by hand)."""
    return inputs.throughput_derived


def quantized_throughput(inputs: TcoInputs) -> str | None:
    """The quantization the throughput was estimated or measured on (its name), None when it was not quantized.

    An `auto` estimate names no format here; the page's estimate note names the one the advisor chose.
    """
    if not measured_or_estimated(inputs) or inputs.quant_method == AUTO:
        return None
    quant = get_quant(inputs.quant_method)
    return quant.name if quant.bits_per_weight < FULL_PRECISION_BITS else None


def already_in(inputs: TcoInputs, tr: Translate = identity) -> dict[str, str]:
    """Lever key -> why it gains nothing: it is already inside the estimate or the run the throughput came from."""
    inside: dict[str, str] = {}
    where = tr(N_("the estimate")) if inputs.tps_source == TpsSource.ESTIMATE else tr(N_("the probe run"))
    quant = quantized_throughput(inputs)
    if quant is not None:
        inside[QUANT] = tr(N_("no gain: {where} already runs {quant}")).format(where=where, quant=quant)
    if inputs.tps_source == TpsSource.ESTIMATE and inputs.cached_pct > 0:  # the estimate simulated the cache hits
        inside[PREFIX] = tr(N_("no gain: the estimate already has {pct}% of each prompt cached")).format(
            pct=f"{inputs.cached_pct:g}"
        )
    return inside


def lever_link_params() -> dict[str, bool]:
    """The what-if levers a link from an estimate or a run turns off (they are assumptions, not measurements)."""
    return dict.fromkeys(WHAT_IF_LEVERS, False)
