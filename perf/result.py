"""What a performance estimate returns: per-level latencies and throughput, the SLO operating point, band and basis."""

from collections.abc import Sequence
from typing import Literal, Union

from pydantic import BaseModel, ConfigDict, Field

from i18n import N_, Translate, identity
from perf.features import ReplicaShape
from perf.inputs import PerfRequest
from perf.phases import PhaseSeconds

BasisKind = Literal["datasheet", "fitted", "extrapolated", "calibrated"]
BASIS_KINDS: dict[str, str] = {
    "datasheet": N_("datasheet"),
    "fitted": N_("fitted"),
    "extrapolated": N_("extrapolated"),
    "calibrated": N_("calibrated"),
}
CALIBRATING_GROUP = N_("residuals of the calibrating levels")
_GROUP_WORDS = {"all": N_("all"), "new-architecture": N_("new-architecture")}  # the words of a band's key


class Wording(BaseModel):
    """A text a page can word in its language: an English template marked with N_ and its named values.

    A value is a plain string (a name, a number) or itself a Wording, worded in the same language.
    """

    model_config = ConfigDict(frozen=True)

    template: str
    values: tuple[tuple[str, Union[str, "Wording"]], ...] = ()

    def worded(self, tr: Translate = identity) -> str:
        """The text in the language of `tr` (English by default)."""
        values = {k: v.worded(tr) if isinstance(v, Wording) else v for k, v in self.values}
        return tr(self.template).format(**values)

    @classmethod
    def joined(cls, parts: "Sequence[Wording]") -> "Wording":
        """Several wordings as one, separated by semicolons (the language's own: '；' in Chinese)."""
        if len(parts) == 1:
            return parts[0]
        return cls(template=N_("{first}; {rest}"), values=(("first", parts[0]), ("rest", cls.joined(parts[1:]))))

    @classmethod
    def listed(cls, items: Sequence[str]) -> "Wording":
        """Names or figures as one list, separated by commas (the language's own: '，' in Chinese)."""
        if len(items) == 1:
            return cls(template="{item}", values=(("item", items[0]),))
        return cls(template=N_("{first}, {rest}"), values=(("first", items[0]), ("rest", cls.listed(items[1:]))))


class Percentiles(BaseModel):
    """Latency percentiles in milliseconds (p99 and mean are None where only the median is given)."""

    model_config = ConfigDict(frozen=True)

    p50: float
    p99: float | None = None
    mean: float | None = None


class LevelEstimate(BaseModel):
    """One simulated load level, per replica: closed-loop `concurrency` or Poisson `request_rate_rps`."""

    model_config = ConfigDict(frozen=True)

    concurrency: int | None
    request_rate_rps: float | None = None
    output_tok_s: float
    req_s: float
    ttft_ms: Percentiles
    tpot_ms: Percentiles
    e2e_ms: Percentiles
    mean_running: float  # sequences in flight on average (Little's law: req_s x E2E)
    preemptions: int
    meets_slo: bool


def bands_text(bands: dict[str, "Band"], tr: Translate = identity) -> str:
    """'tok/s 0.62–1.36×, TPOT 0.72–1.60×, TTFT 0.46–2.69×': the bands of the three figures, in the language of `tr`."""
    ratio = {k: f"{b.low_ratio:.2f}–{b.high_ratio:.2f}×" for k, b in bands.items()}
    return tr(N_("tok/s {tok_s}, TPOT {tpot}, TTFT {ttft}")).format(
        tok_s=ratio["output_tok_s"], tpot=ratio["tpot_ms"], ttft=ratio["ttft_ms"]
    )


class Band(BaseModel):
    """Where the measured value fell relative to the estimate for held-out configurations like this one.

    `low_ratio` and `high_ratio` are the 10th and 90th percentiles of measured / estimated (throughput, TPOT or
    TTFT) over the held-out sources in `group` (so 8 in 10 measurements fell inside); `groups` counts them.
    """

    model_config = ConfigDict(frozen=True)

    low_ratio: float
    high_ratio: float
    group: str
    groups: int

    def group_text(self, tr: Translate = identity) -> str:
        """`group` in the language of `tr` ('vllm|hopper', 'new-architecture|all', the calibrating levels)."""
        if self.group == CALIBRATING_GROUP:
            return tr(CALIBRATING_GROUP)
        return "|".join(tr(_GROUP_WORDS[part]) if part in _GROUP_WORDS else part for part in self.group.split("|"))


class Basis(BaseModel):
    """What an estimate rests on: datasheet figures only, coefficients fitted on public data, or a probe run."""

    model_config = ConfigDict(frozen=True)

    kind: BasisKind
    text: str
    run_ids: tuple[str, ...] = ()  # the probe runs that calibrated it
    wording: Wording | None = Field(default=None, exclude=True)  # `text` for pages in other languages (not in JSON)

    def kind_text(self, tr: Translate = identity) -> str:
        """`kind` in the language of `tr`."""
        return tr(BASIS_KINDS[self.kind])

    def worded(self, tr: Translate = identity) -> str:
        """`text` in the language of `tr`."""
        return self.text if self.wording is None else self.wording.worded(tr)


class Layout(BaseModel):
    """How one replica is laid out: as given (--tp, --pp, --ep, --dp), else as the advisor chose it.

    `tp`, `pp`, `ep` and `dp` are the engines' sizes: tensor-parallel GPUs per attention rank, pipeline stages,
    expert-parallel GPUs (1 = experts split by tensor parallelism) and attention data-parallel ranks; a replica has
    tp x pp x dp GPUs. `tensor_parallel` counts the GPUs of one stage (tp x dp), as before.
    """

    model_config = ConfigDict(frozen=True)

    gpus: int
    tensor_parallel: int
    pipeline_parallel: int = 1
    expert_parallel: bool = False
    attention_data_parallel: bool = False
    replicas: int = 1
    tp: int = 1
    pp: int = 1
    ep: int = 1
    dp: int = 1

    @classmethod
    def of(cls, shape: "ReplicaShape", request: PerfRequest, replicas: int = 1) -> "Layout":
        """The layout of a simulated replica, in the engines' sizes."""
        dp = shape.attention_ranks
        stage = shape.tensor_parallel
        ep = request.ep or (stage if shape.expert_parallel else 1)
        return cls(
            gpus=shape.gpus,
            tensor_parallel=stage,
            pipeline_parallel=shape.pipeline_parallel,
            expert_parallel=shape.expert_parallel,
            attention_data_parallel=shape.attention_data_parallel,
            replicas=replicas,
            tp=max(stage // dp, 1),
            pp=shape.pipeline_parallel,
            ep=ep,
            dp=dp,
        )


class Estimate(BaseModel):
    """The whole estimate for one configuration. Figures are per replica (one model copy)."""

    model_config = ConfigDict(frozen=True)

    request: PerfRequest
    gpu_id: str
    gpu_name: str
    model_id: str
    model_name: str
    engine: str
    engine_version: str = ""
    quant: str
    kv_cache_dtype: str
    layout: Layout
    max_num_seqs: int
    max_num_batched_tokens: int
    kv_capacity_tokens: int
    levels: tuple[LevelEstimate, ...]
    max_output_tok_s: float
    max_throughput_concurrency: int
    best_concurrency_within_slo: int | None
    best_request_rate_within_slo_rps: float | None
    slo_level: LevelEstimate | None = None  # the level at best_concurrency_within_slo
    band: Band  # the throughput band (bands["output_tok_s"]), kept for scripts that read it
    bands: dict[str, Band] = Field(default_factory=dict)  # output_tok_s, tpot_ms, ttft_ms
    basis: Basis
    notes: tuple[str, ...] = ()
    note_wordings: tuple[Wording, ...] = Field(default=(), exclude=True)  # perf's own notes, for other languages
    searched_levels: tuple[LevelEstimate, ...] = Field(default=(), exclude=True)  # the load curve the SLO search ran
    # a request's seconds of prefill, cached prefix and decode at the SLO operating point (concurrency 1 without one)
    phases: PhaseSeconds | None = Field(default=None, exclude=True)

    def bands_text(self, tr: Translate = identity) -> str:
        """The three bands in the language of `tr` (see `bands_text`)."""
        return bands_text(self.bands or {"output_tok_s": self.band, "tpot_ms": self.band, "ttft_ms": self.band}, tr)

    def worded_notes(self, tr: Translate = identity) -> tuple[str, ...]:
        """`notes` with perf's own in the language of `tr` (the advisor's warnings as they are)."""
        own = {w.worded(): w for w in self.note_wordings}
        return tuple(own[n].worded(tr) if n in own else n for n in self.notes)

    def to_json_dict(self) -> dict[str, object]:
        """The CLI's --json object (the keys are a contract)."""
        return {
            "gpu": self.gpu_id,
            "gpus": self.layout.gpus,
            "model": self.model_id,
            "engine": self.engine,
            "engine_version": self.engine_version,
            "quant": self.quant,
            "kv_cache_dtype": self.kv_cache_dtype,
            "input_tokens": self.request.input_tokens,
            "output_tokens": self.request.output_tokens,
            "layout": self.layout.model_dump(),
            "max_num_seqs": self.max_num_seqs,
            "max_num_batched_tokens": self.max_num_batched_tokens,
            "kv_capacity_tokens": self.kv_capacity_tokens,
            "levels": [level.model_dump() for level in self.levels],
            "max_output_tok_s": self.max_output_tok_s,
            "max_throughput_concurrency": self.max_throughput_concurrency,
            "best_concurrency_within_slo": self.best_concurrency_within_slo,
            "best_request_rate_within_slo_rps": self.best_request_rate_within_slo_rps,
            "slo_level": self.slo_level.model_dump() if self.slo_level else None,
            "slo": self.request.slo.model_dump(),
            "band": self.band.model_dump(),
            "bands": {k: {"low_ratio": b.low_ratio, "high_ratio": b.high_ratio} for k, b in self.bands.items()},
            "basis": self.basis.model_dump(),
            "estimate": True,
            "notes": list(self.notes),
        }


class MeasuredLevel(BaseModel):
    """One level of a stored probe run, as calibration needs it."""

    model_config = ConfigDict(frozen=True)

    concurrency: int | None
    request_rate_rps: float | None = None
    input_tokens: float
    output_tokens: float
    ttft_p50_ms: float | None
    tpot_p50_ms: float | None
    output_tok_s: float | None


class Calibration(BaseModel):
    """A stored probe run of a known configuration (`gpus` in all, as deployed): its id and measured levels."""

    model_config = ConfigDict(frozen=True)

    run_id: str  # the stored probe run ('' for a published measurement)
    gpu: str
    gpus: int
    model: str
    engine: str
    quant: str
    levels: tuple[MeasuredLevel, ...]
    served_model: str = ""  # the model name the server reported ('' when unknown)
    confirmed: bool = False  # the user confirmed the run measured `model` although the server named another
