"""Which measured levels may calibrate an estimate: the same model as served, and request shapes near the asked one."""

from collections.abc import Sequence

from catalog import find_model
from i18n import N_
from perf.hardware import model_facts
from perf.inputs import PerfRequest
from perf.result import Calibration, Wording
from selector import SelectorError


def _shape_factor() -> float:
    value = model_facts()["calibration"]["shape_factor"]
    assert isinstance(value, int | float)
    return float(value)


def same_model(served: str, declared: str) -> bool:
    """Whether the model name a server reported is the declared catalog model ('' when it reported none: unknown).

    A name the catalog resolves to another model, or to none at all ('fake', 'my-finetune'), is not the same.
    """
    if not served:
        return True
    try:
        return find_model(served).id == find_model(declared).id
    except SelectorError:
        return False


def serves_declared_model(calibration: Calibration) -> bool:
    """Whether a run may calibrate its declared model: the server named it, or the user confirmed the run."""
    return calibration.confirmed or same_model(calibration.served_model, calibration.model)


def _near(value: float, wanted: float, factor: float) -> bool:
    return value > 0 and wanted / factor <= value <= wanted * factor


def near_lengths(input_tokens: float, output_tokens: float, wanted_input: float, wanted_output: float) -> bool:
    """Whether measured request lengths are near enough the wanted ones (each within the shape factor)."""
    factor = _shape_factor()
    return _near(input_tokens, wanted_input, factor) and _near(output_tokens, wanted_output, factor)


def near_shape(request: PerfRequest, input_tokens: float, output_tokens: float) -> bool:
    """Whether a measured level's lengths are near enough the request's to calibrate it."""
    return near_lengths(input_tokens, output_tokens, request.input_tokens, request.output_tokens)


def vouched(request: PerfRequest, calibrations: Sequence[Calibration]) -> tuple[list[Calibration], list[Wording]]:
    """The calibrations, each with only the levels near the requested shape, and notes on what was left out."""
    factor = _shape_factor()
    kept: list[Calibration] = []
    notes: list[Wording] = []
    for c in calibrations:
        name: Wording | str = c.run_id or Wording(template=N_("published measurements"))
        if not serves_declared_model(c):
            notes.append(
                Wording(
                    template=N_(
                        "run {run} does not calibrate: its server named the model '{served}', not {model}; confirm "
                        "the run to use it"
                    ),
                    values=(("run", name), ("served", c.served_model), ("model", c.model)),
                )
            )
            continue
        levels = tuple(m for m in c.levels if near_shape(request, m.input_tokens, m.output_tokens))
        if not levels:
            notes.append(
                Wording(
                    template=N_(
                        "run {run} does not calibrate {input} in / {output} out: it measured other request lengths "
                        "(a level calibrates lengths within {factor}x of its own)"
                    ),
                    values=(
                        ("run", name),
                        ("input", str(request.input_tokens)),
                        ("output", str(request.output_tokens)),
                        ("factor", f"{factor:g}"),
                    ),
                )
            )
            continue
        kept.append(c.model_copy(update={"levels": levels}))
    return kept, notes
