"""Cost this on a probe run: the measured level with the deployment the run declared (GPU, count, price, format)."""

from catalog import find_gpu
from catalog.errors import GpuLookupError
from probes.form import cost_params
from probes.metrics import level_energy
from probes.models import LevelResult, RunResult
from tco import TcoInputs
from tco.inputs import TpsSource
from tco.lever_basis import lever_link_params
from ui.resources import price_book
from ui.tco_links import tco_link_params


def run_cost_params(result: RunResult, level: LevelResult) -> tuple[dict[str, str], bool]:
    """The /tco parameters for one level of a run, and whether the run declared its GPU.

    The GPU carries its lowest public price in its own currency; a GPU without one carries no price (the cost page
    asks for it). The run's quantization comes along so that the quantization lever counts no gain twice. A run that
    read a DCGM exporter carries the level's measured power as the GPUs' average draw (`draw`, % of the rated power),
    so the cost page's energy is the measured one.
    """
    measured: dict[str, object] = {**cost_params(level, result.run_id), "tps_source": TpsSource.MEASURED}
    deployment = result.settings.deployment
    priced = True
    try:
        gpu = find_gpu(deployment.gpu) if deployment.gpu else None
    except GpuLookupError:  # a stored run may name a GPU the catalog no longer knows
        gpu = None
    if gpu is not None:
        measured["gpu"] = gpu.id
        draw = measured_draw_pct(result, level, gpu.tdp_w)
        if draw is not None:
            measured["draw"] = draw
        tier = price_book().public_price(gpu.id)
        priced = tier is not None
        if tier is not None:
            measured |= {"price": tier.price_per_gpu_hour, "currency": tier.currency}
    if deployment.gpu_count:
        measured["gpus"] = deployment.gpu_count
    if deployment.quant:
        measured["quant_method"] = deployment.quant
    inputs = TcoInputs.model_validate({**measured, **lever_link_params()})
    params = tco_link_params(inputs, priced=priced)
    for shape in ("in_tokens", "out_tokens", "tps"):  # what the run did not measure is not written as if it had
        if shape not in measured:  # (with `rps` the cost page derives tps from the rate)
            params.pop(shape, None)
    return params, gpu is not None


def measured_draw_pct(result: RunResult, level: LevelResult, tdp_w: float | None) -> float | None:
    """The level's measured mean power per GPU as a % of the GPU's rated power (None: no reading or no rating)."""
    energy = next((e for lv, e in level_energy(result) if lv.index == level.index), None)
    if energy is None or energy.mean_power_w is None or not energy.gpus or not tdp_w:
        return None
    return round(min(100.0, max(0.1, energy.mean_power_w / energy.gpus / tdp_w * 100)), 1)
