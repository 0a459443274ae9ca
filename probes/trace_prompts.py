"""The prompts of a trace replay: text of each request's input length, Mooncake blocks shared as the trace shares them.

Prompts: ``TracePromptBuilder.prompt`` writes ``words_for(input_tokens)`` common words (``VOCABULARY``, about one
token each). A Mooncake request starts with one block per hash id, in order: the same id gives byte-identical text,
different ids differ from their first word (a number naming the block), so the server's prefix cache sees exactly the
trace's sharing; the last block is cut when the input is shorter than the blocks. The rest is filler unique to the
request (it starts with a number naming the line, odd where block numbers are even). The builder is sized by a
``Calibration``: ``server tokens = overhead_tokens + tokens_per_word * words``. Two calibration requests of different
sizes give both (slope and intercept, which absorbs the chat template); one request gives the slope through the
overhead already set (0 by default: right for the completions API, not for chat). The numbers naming blocks and lines
may cost a few tokens more than a word; that is under 1% of a 512-token block and of the traces' median prompts.
Building a 14,000-token prompt takes about a millisecond (blocks are cached): build it ahead of its send time.
"""

import random
import statistics
from collections import OrderedDict
from dataclasses import dataclass

from probes.traces import BLOCK_TOKENS, TraceError, TraceRequest
from probes.workloads import VOCABULARY

CALIBRATION_WORDS = (64, 512)  # the two calibration prompt sizes the runner is advised to send


@dataclass(frozen=True)
class Calibration:
    """How the server counts the builder's text: ``tokens = overhead_tokens + tokens_per_word * words``."""

    tokens_per_word: float = 1.0
    overhead_tokens: float = 0.0  # per request: chat template, BOS

    @classmethod
    def fit(cls, points: list[tuple[int, int]], overhead_tokens: float = 0.0) -> "Calibration":
        """From (sent words, server prompt tokens) points.

        One size gives the slope through ``overhead_tokens``; two or more give slope and intercept (least squares).
        """
        if not points or any(w < 1 or t < 1 for w, t in points):
            raise TraceError(f"calibration needs words and server prompt tokens of 1 or more (got {points})")
        sizes = {w for w, _ in points}
        if len(sizes) == 1:
            slope = statistics.fmean((t - overhead_tokens) / w for w, t in points)
        else:
            slope, overhead_tokens = statistics.linear_regression([w for w, _ in points], [t for _, t in points])
        if not 0.2 <= slope <= 10:
            raise TraceError(
                f"the server counted {slope:.2f} tokens per word (points {points}); its usage report looks wrong"
            )
        return cls(slope, overhead_tokens)

    def words_for(self, tokens: int) -> int:
        """Words to send so that the server counts about ``tokens`` prompt tokens (at least one)."""
        return max(1, round((tokens - self.overhead_tokens) / self.tokens_per_word))

    def tokens_for(self, words: int) -> float:
        """Prompt tokens the server should count for ``words`` words."""
        return self.overhead_tokens + self.tokens_per_word * words


class TracePromptBuilder:
    """Prompts of a trace request's input length; Mooncake hash ids become shared 512-token blocks of text.

    Deterministic for a given seed and calibration (blocks are cached, at most ``cache_blocks`` of them). Calibrate
    before building the run's prompts: a new calibration changes the block texts.
    """

    def __init__(
        self, tokens_per_word: float = 1.0, overhead_tokens: float = 0.0, *, seed: int = 0, cache_blocks: int = 256
    ) -> None:
        self.calibration = Calibration(tokens_per_word, overhead_tokens)
        self.seed = seed
        self._cache_blocks = cache_blocks
        self._blocks: OrderedDict[int, list[str]] = OrderedDict()

    @property
    def tokens_per_word(self) -> float:
        """Server tokens per word of the builder's text."""
        return self.calibration.tokens_per_word

    @property
    def overhead_tokens(self) -> float:
        """Server tokens a request carries besides the text (chat template, BOS)."""
        return self.calibration.overhead_tokens

    @property
    def block_words(self) -> int:
        """Words in one hash-id block (BLOCK_TOKENS server tokens)."""
        return max(1, round(BLOCK_TOKENS / self.tokens_per_word))

    def calibrate(self, sent_words: int, server_prompt_tokens: int, *more: tuple[int, int]) -> Calibration:
        """Set the calibration from the server's ``usage.prompt_tokens`` for ``calibration_prompt(sent_words)``.

        With one point the overhead already set (0 by default) is kept and only tokens per word is fitted; pass a
        second point of another size (``calibrate(64, t64, (512, t512))``) to fit the overhead too.
        """
        self.calibration = Calibration.fit([(sent_words, server_prompt_tokens), *more], self.overhead_tokens)
        self._blocks.clear()
        return self.calibration

    def calibration_prompt(self, words: int) -> str:
        """A prompt of exactly ``words`` vocabulary words, like the builder's text but shared with no trace prompt."""
        rng = random.Random(f"{self.seed}:calibrate:{words}")
        return " ".join(rng.choices(VOCABULARY, k=max(1, words)))

    def prompt(self, req: TraceRequest) -> str:
        """About ``req.input_tokens`` server tokens: the hash-id blocks in order, then filler unique to the request."""
        total = self.calibration.words_for(req.input_tokens)
        words: list[str] = []
        for block_id in req.hash_ids:
            if len(words) >= total:
                break
            words += self._block(block_id)[: total - len(words)]
        if len(words) < total:
            rng = random.Random(f"{self.seed}:line:{req.line}")
            words.append(str(2 * req.line + 1))  # odd: never a block's (even) first word
            words += rng.choices(VOCABULARY, k=total - len(words))
        return " ".join(words)

    def _block(self, block_id: int) -> list[str]:
        cached = self._blocks.get(block_id)
        if cached is not None:
            self._blocks.move_to_end(block_id)
            return cached
        rng = random.Random(f"{self.seed}:block:{block_id}")
        block = [str(2 * block_id), *rng.choices(VOCABULARY, k=self.block_words - 1)]
        self._blocks[block_id] = block
        if len(self._blocks) > self._cache_blocks:
            self._blocks.popitem(last=False)
        return block
