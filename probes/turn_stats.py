"""A sessions level's figures per turn index: turn 1 against later turns shows the server's prefix cache."""

from collections.abc import Sequence

from probes.metrics import stats
from probes.models import RequestSample, TurnStats

TurnSample = tuple[int, float | None, float | None, float | None, int | None]  # turn, ttft, tpot, e2e, input tokens


def per_turn_stats(samples: Sequence[TurnSample]) -> list[TurnStats]:
    """One TurnStats per turn index present, in turn order, from (turn, ttft_ms, tpot_ms, e2e_ms, input_tokens).

    Pass completed requests; None values are left out of their statistic. Percentiles are the probe's (numpy's
    linear interpolation, as vLLM reports them).
    """
    by_turn: dict[int, list[TurnSample]] = {}
    for sample in samples:
        by_turn.setdefault(sample[0], []).append(sample)
    result = []
    for turn in sorted(by_turn):
        rows = by_turn[turn]
        ttft = stats([r[1] for r in rows if r[1] is not None])
        tpot = stats([r[2] for r in rows if r[2] is not None])
        e2e = stats([r[3] for r in rows if r[3] is not None])
        inputs = stats([float(r[4]) for r in rows if r[4] is not None])
        result.append(
            TurnStats(
                turn=turn,
                count=len(rows),
                ttft_ms_p50=ttft.p50,
                ttft_ms_p99=ttft.p99,
                tpot_ms_p50=tpot.p50,
                e2e_ms_p50=e2e.p50,
                input_tokens_mean=inputs.mean,
            )
        )
    return result


def level_turn_stats(samples: Sequence[RequestSample]) -> list[TurnStats]:
    """Per-turn figures of a sessions level: per_turn_stats over its completed requests, with each turn's failures."""
    done: list[TurnSample] = []
    failed: dict[int, int] = {}
    for s in samples:
        if s.turn is None:
            continue
        if s.ok:
            done.append((s.turn, s.ttft_ms, s.tpot_ms, s.e2e_ms, s.input_tokens))
        else:
            failed[s.turn] = failed.get(s.turn, 0) + 1
    stats_by_turn = {t.turn: t for t in per_turn_stats(done)}
    return [
        stats_by_turn.get(turn, TurnStats(turn=turn, count=0)).model_copy(update={"failed": failed.get(turn, 0)})
        for turn in sorted(set(stats_by_turn) | set(failed))
    ]
