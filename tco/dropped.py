"""The GPUs a ranking has no option for, each named with why: its kind, the filters, no price in the tier, no fit."""

from collections import Counter
from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict

from catalog import load_gpus
from i18n import N_, Translate, identity
from tco.compare_inputs import CompareInputs
from tco.options import Candidate, RankedOption, gpu_excluded, left_out, reason_text
from tco.prices import PriceBook


class DroppedGpu(BaseModel):
    """A catalog GPU with no option in the ranking, and the reason (a key of `Ranking.skipped`)."""

    model_config = ConfigDict(frozen=True)

    gpu_id: str
    gpu_name: str
    reason: str

    def reason_worded(self, tr: Translate = identity) -> str:
        """The reason in the language of `tr`."""
        return reason_text(self.reason, tr)


def dropped_gpus(
    inputs: CompareInputs,
    prices: PriceBook | None,
    found: Sequence[Candidate],
    refusals: Mapping[str, Counter[str]],
    options: Sequence[RankedOption],
) -> tuple[DroppedGpu, ...]:
    """Every catalog GPU without a ranked option, and why.

    A GPU whose options were each refused gets the commonest refusal.
    """
    ranked = {o.gpu_id for o in options}
    tried = {c.gpu for c in found}
    dropped: list[DroppedGpu] = []
    for gpu in load_gpus():
        if gpu.id in ranked:
            continue
        reason = gpu_excluded(inputs, gpu, prices)
        if not reason and gpu.id not in tried:
            reason = left_out(N_("no engine or quantization runs on it"))
        elif not reason:
            counts = refusals.get(gpu.id)
            reason = counts.most_common(1)[0][0] if counts else left_out(N_("no option kept"))
        dropped.append(DroppedGpu(gpu_id=gpu.id, gpu_name=gpu.name, reason=reason))
    return tuple(dropped)
