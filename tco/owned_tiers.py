"""The owned price tier of each GPU with a sourced purchase price: its owning cost per GPU-hour at the defaults."""

from functools import cache

from catalog.owning import load_owning_defaults
from catalog.prices import PriceTier
from i18n import N_
from tco.inputs import TcoInputs
from tco.owning import owned_cost, owned_hardware

OWNED_PROVIDER = N_("owned (catalog defaults)")
OWNED_REGION = N_("your data center")
_RENTAL_UNUSED = 1.0  # owned_cost's break-even figures need a rent; the tier keeps only the cost per GPU-hour


@cache
def owned_tiers() -> tuple[PriceTier, ...]:
    """One `owned` tier per GPU that catalog/data/owning.csv prices: what /tco's "Rent or own" shows at its defaults.

    The cost is the owning method of tco/owning.py (capital recovery, hosting per kW, power at the PUE, support) over
    the catalog's defaults, per GPU-hour used at the default fleet utilization; the tier cites the purchase price.
    """
    tiers = []
    for row in load_owning_defaults():
        if row.key != "purchase_price_per_gpu" or row.gpu is None or row.currency is None:
            continue
        inputs = TcoInputs.model_validate({"gpu": row.gpu, "currency": row.currency})
        hardware, _missing = owned_hardware(inputs)
        if hardware is None:
            continue
        cost = owned_cost(hardware, _RENTAL_UNUSED, inputs.hours_per_month)
        tiers.append(
            PriceTier(
                gpu=row.gpu,
                provider=OWNED_PROVIDER,
                region=OWNED_REGION,
                kind="owned",
                price_per_gpu_hour=round(cost.per_used_gpu_hour, 4),
                currency=row.currency,
                source=f"owning cost (tco/owning.py) at catalog/data/owning.csv defaults; purchase: {row.source}",
                fetched_at=row.checked,
                note=row.note,
            )
        )
    return tuple(tiers)
