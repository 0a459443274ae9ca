"""Where one request's GPU time goes at an operating point: prefill of its uncached input, its cached prefix, decode.

The step-time model prices a step as theta . features(step) (perf/features.py). At `concurrency` users a request's
decode shares each step with the other users' decodes, so it takes 1 / n of every decode step of n sequences (at
the mean context: prompt + half the answer). Its prefill rides in steps the other n - 1 users decode in (chunked
prefill, at most the engine's token budget per step): it costs the time those steps take beyond the decode alone.
That prefill time is split in two: what the uncached tokens cost with no prefix at all (their GEMMs and attention
among themselves), and what the cached prefix adds (its KV read and the new tokens' attention over it), which is the
cost of the cached tokens. The estimate computes it once at its SLO operating point (`Estimate.phases`, a few
hundredths of a millisecond); method and figures: docs/token-costs.md.
"""

import math

from pydantic import BaseModel, ConfigDict

from perf.features import StepInputs
from perf.hardware import model_facts
from perf.simulate import Engine


class PhaseSeconds(BaseModel):
    """Seconds of one replica's time per request, by phase, at one concurrency (the replica's time, all its GPUs)."""

    model_config = ConfigDict(frozen=True)

    concurrency: int
    input_tokens: int
    cached_tokens: int  # of input_tokens, already in the prefix cache
    output_tokens: int
    prefill_s: float  # computing the uncached input tokens
    cached_s: float  # the cached prefix: its KV read and the new tokens' attention over it
    decode_s: float  # producing the output tokens after the first
    cached_s_per_token: float  # one cached token at this shape (read at a small probe prefix when none is cached)

    @property
    def total_s(self) -> float:
        return self.prefill_s + self.cached_s + self.decode_s

    @property
    def uncached_tokens(self) -> int:
        return self.input_tokens - self.cached_tokens


def _prefill_s(engine: Engine, background: StepInputs, new_tokens: int, prefix: int) -> float:
    """Time `new_tokens` of prefill after `prefix` cached tokens add to the steps `background` decodes in."""
    alone = engine.step_s(background)
    chunk = max(engine.budget_tokens - float(background.decode_seqs) * engine.computed_per_step, 1.0)
    total, done = 0.0, 0.0
    while done < new_tokens:
        take = min(chunk, new_tokens - done)
        before = prefix + done
        step = background._replace(
            prefill_tokens=take, prefill_pairs=take * (before + take / 2), prefill_ctx=before, prefill_seqs=1.0
        )
        total += max(engine.step_s(step) - alone, 0.0)
        done += take
    return total


def split_phases(
    engine: Engine, input_tokens: int, cached_tokens: int, output_tokens: int, concurrency: int
) -> PhaseSeconds:
    """The per-request seconds of each phase for this engine and request shape at `concurrency` users."""
    n = max(1, min(concurrency, engine.max_seqs))
    mean_ctx = input_tokens + output_tokens / 2
    decode = StepInputs(decode_seqs=float(n), decode_ctx=n * mean_ctx, tokens_per_decode=engine.computed_per_step)
    steps = math.ceil(max(output_tokens - 1, 0) / engine.accepted_per_step)
    decode_s = steps * engine.step_s(decode) / n
    others = StepInputs(
        decode_seqs=float(n - 1), decode_ctx=(n - 1) * mean_ctx, tokens_per_decode=engine.computed_per_step
    )
    cached = min(max(cached_tokens, 0), input_tokens - 1)
    new = input_tokens - cached
    probe_share = model_facts()["phases"]["cached_probe_share"]
    assert isinstance(probe_share, float)
    probe = cached or max(1, round(input_tokens * probe_share))
    probe_new = max(input_tokens - probe, 1)
    probe_s = _prefill_s(engine, others, probe_new, probe) - _prefill_s(engine, others, probe_new, 0)
    per_cached = max(probe_s, 0.0) / probe
    return PhaseSeconds(
        concurrency=n,
        input_tokens=input_tokens,
        cached_tokens=cached,
        output_tokens=output_tokens,
        prefill_s=_prefill_s(engine, others, new, 0),
        cached_s=per_cached * cached,
        decode_s=decode_s,
        cached_s_per_token=per_cached,
    )
