"""The /tco inputs for owning, energy and hosted APIs: fields TcoInputs inherits (their aliases are URL parameters)."""

from pydantic import BaseModel, ConfigDict, Field

from catalog.owning import OwningKey, owning_default
from i18n import N_

MAX_MONEY = 1e9


def _default(key: OwningKey) -> float:
    return owning_default(key).value


class OwningInputs(BaseModel):
    """Owned hardware, energy and API inputs. A blank money field takes the catalog's sourced default, converted."""

    model_config = ConfigDict(frozen=True, populate_by_name=True, extra="ignore")

    own_price_per_gpu: float | None = Field(
        default=None,
        alias="own_price",
        gt=0,
        le=MAX_MONEY,
        title=N_("Purchase price per GPU"),
        description="in `currency`; empty: the catalog's sourced price for the GPU, if any",
    )
    own_price_per_server: float | None = Field(
        default=None,
        alias="own_server_price",
        gt=0,
        le=MAX_MONEY,
        title=N_("Purchase price per server"),
        description="in `currency`; when given, the price per GPU is this / `own_server_gpus`",
    )
    own_gpus_per_server: int = Field(
        default=int(_default("gpus_per_server")), alias="own_server_gpus", ge=1, le=72, title=N_("GPUs per server")
    )
    own_depreciation_years: float = Field(
        default=_default("depreciation_years"), alias="own_years", gt=0, le=30, title=N_("Depreciation (years)")
    )
    own_interest_pct: float = Field(
        default=_default("interest_pct_per_year"),
        alias="own_interest",
        ge=0,
        le=100,
        title=N_("Cost of capital (% per year)"),
    )
    own_hosting_per_kw_month: float | None = Field(
        default=None, alias="own_hosting", ge=0, le=MAX_MONEY, title=N_("Hosting per kW-month")
    )
    own_gpu_power_w: float | None = Field(
        default=None, alias="gpu_w", gt=0, le=100_000, title=N_("GPU power (W)"), description="empty: the GPU's TDP"
    )
    own_overhead_w_per_gpu: float = Field(
        default=_default("server_overhead_w_per_gpu"),
        alias="overhead_w",
        ge=0,
        le=100_000,
        title=N_("Server overhead power per GPU (W)"),
    )
    power_draw_pct: float = Field(
        default=100, alias="draw", gt=0, le=100, title=N_("Average draw, % of the rated power")
    )
    pue: float = Field(default=_default("pue"), alias="pue", ge=1, le=5, title=N_("PUE"))
    electricity_per_kwh: float | None = Field(
        default=None, alias="kwh_price", ge=0, le=1000, title=N_("Electricity price per kWh")
    )
    own_support_per_gpu_year: float | None = Field(
        default=None, alias="own_support", ge=0, le=MAX_MONEY, title=N_("Support and licences per GPU-year")
    )
    own_utilization_pct: float = Field(default=100, alias="own_util", gt=0, le=100, title=N_("Fleet utilization (%)"))
    carbon_g_per_kwh: float | None = Field(
        default=None, alias="carbon", ge=0, le=5000, title=N_("Grid carbon intensity (g CO2e per kWh)")
    )
    api_cached_pct: float | None = Field(
        default=None,
        alias="api_cached",
        ge=0,
        le=100,
        title=N_("Cached share of input tokens at the API (%)"),
        description="empty: the traffic's own cached share (`cached`)",
    )
