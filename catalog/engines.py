"""The engine catalog: status, hardware, quantization, caching, speculation and server facts, with sources."""

from functools import cache
from pathlib import Path
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator

from catalog.errors import UnknownEngineError
from catalog.gpus import Gpu
from catalog.matching import match_names
from catalog.tables import blank_as, load_table, split_list, yes_no
from i18n import DEFAULT_LANGUAGE, Language

ENGINES_CSV = Path(__file__).parent / "data" / "engines.csv"
ENGINE_SOURCES_CSV = Path(__file__).parent / "data" / "engine_sources.csv"

Platform = Literal["nvidia", "amd", "apple", "cpu", "intel", "ascend"]
# The catalog's worded columns: each has a `<column>_zh` twin in engines.csv, the same fact in Simplified Chinese.
WordedColumn = Literal[
    "status",
    "hardware",
    "quant_formats",
    "openai_server",
    "prefix_caching",
    "chunked_prefill",
    "speculative_decoding",
    "today_vs_handbook",
]
WORDED_COLUMNS: tuple[WordedColumn, ...] = get_args(WordedColumn)
# What a decision about an engine may cite it for; "all" rows of engine_sources.csv back every topic.
SourceTopic = Literal[
    "all", "hardware", "quantization", "prefix_caching", "chunked_prefill", "speculative", "parallelism", "kv_offload"
]


class EngineSource(BaseModel):
    """One row of catalog/data/engine_sources.csv: where one engine's facts on one topic come from."""

    model_config = ConfigDict(frozen=True)

    engine: str
    topic: SourceTopic | Literal["server"]
    source: str
    checked: str


@cache
def load_engine_sources() -> tuple[EngineSource, ...]:
    """Every engine's sources by topic, in file order."""
    return load_table(ENGINE_SOURCES_CSV, EngineSource)


class ServingEngine(BaseModel):
    """An inference engine: one row of catalog/data/engines.csv (not a database engine).

    The columns in WORDED_COLUMNS are prose; each has a `<column>_zh` twin that `text` reads for the page in Chinese.
    """

    model_config = ConfigDict(frozen=True)

    id: str
    name: str
    aliases: tuple[str, ...]
    lifecycle: Literal["active", "maintenance", "archived"]
    status: str
    status_zh: str = ""
    runs_on: tuple[Platform, ...]
    hardware: str
    hardware_zh: str = ""
    quant_methods: tuple[str, ...]
    quant_formats: str
    quant_formats_zh: str = ""
    openai_server: str
    openai_server_zh: str = ""
    default_port: int
    prefix_caching: str
    prefix_caching_zh: str = ""
    prefix_caching_default: Literal["on", "off"]
    chunked_prefill: str
    chunked_prefill_zh: str = ""
    speculative_decoding: str
    speculative_decoding_zh: str = ""
    spec_methods: tuple[str, ...]
    multi_gpu: str
    split: Literal["tensor", "layer"]
    kv_cache_quant: str
    kv_offload: str
    launchable: bool
    today_vs_handbook: str
    today_vs_handbook_zh: str = ""
    gotchas: str
    kv_cache_8bit: str = ""  # the engine's 8-bit KV-cache type (the rules' generic "8bit"), "" when it has none
    fp8_weight_only: bool = False  # FP8 checkpoints run weight-only (W8A16) on GPUs without FP8 tensor cores
    multi_node: bool = False  # one model copy can span several nodes
    max_slots_advised: int | None = None  # parallel slots beyond which the engine is not advised (None: no such limit)
    backends: tuple[str, ...] = ()  # the engine's backends, preferred first, when it has more than one
    primary_backend_archs: tuple[str, ...] = ()  # architectures the preferred backend loads (others use the next one)
    primary_backend_quant: tuple[str, ...] = ()  # quantization methods the preferred backend loads
    fallback_backend_quant: tuple[str, ...] = ()  # quantization methods the next backend loads
    online_fp8_block: int = 0  # the block of its own FP8 quantization of a BF16 checkpoint at load (0: per tensor)
    kv_memory_share: float = Field(default=0.9, gt=0, le=1)  # its default share of GPU memory (see kv_memory_of)
    kv_memory_of: Literal["total", "free"] = "total"  # of the whole GPU (weights included), or of what loading left
    kv_memory_source: str = ""
    source: str
    source_snapshot: str

    @field_validator(
        "aliases",
        "runs_on",
        "quant_methods",
        "spec_methods",
        "backends",
        "primary_backend_archs",
        "primary_backend_quant",
        "fallback_backend_quant",
        mode="before",
    )
    @classmethod
    def _split_lists(cls, value: object) -> object:
        return split_list(value)

    @field_validator("launchable", "fp8_weight_only", "multi_node", mode="before")
    @classmethod
    def _yes_no(cls, value: object) -> object:
        return yes_no(value)

    @field_validator("max_slots_advised", mode="before")
    @classmethod
    def _blank_is_none(cls, value: object) -> object:
        return blank_as(value, None)

    def text(self, column: WordedColumn, language: Language = DEFAULT_LANGUAGE) -> str:
        """A worded column in the language: its `_zh` twin for Chinese when the catalog has one, else the English.

        The CLI and its JSON keep the English columns; the advisor's page in Chinese reads the twins.
        """
        english = str(getattr(self, column))
        if language == DEFAULT_LANGUAGE:
            return english
        return str(getattr(self, f"{column}_{language}", "") or english)

    def source_for(self, topic: SourceTopic) -> str:
        """The sources of the engine's facts on one topic (its general ones first), not the whole row's list."""
        rows = [row for row in load_engine_sources() if row.engine == self.id and row.topic in {"all", topic}]
        return "; ".join(row.source for row in rows) or self.source

    def runs_on_gpu(self, gpu: Gpu) -> bool:
        """Whether the engine supports this GPU's platform."""
        return gpu_platform(gpu) in self.runs_on


def gpu_platform(gpu: Gpu) -> Platform:
    """The software platform a GPU needs: nvidia, amd, apple, cpu or ascend.

    nvidia is CUDA, amd ROCm, apple Metal, cpu a CPU-only host and ascend a Huawei Ascend NPU on CANN. The kind
    decides before the vendor: a CPU host built on AMD EPYC is a cpu platform, not ROCm.
    """
    if gpu.kind == "cpu":
        return "cpu"
    if gpu.vendor.lower() == "huawei":
        return "ascend"
    if gpu.kind == "apple" or gpu.vendor.lower() == "apple":
        return "apple"
    if gpu.vendor.lower() == "amd":
        return "amd"
    return "nvidia"


@cache
def load_engines() -> tuple[ServingEngine, ...]:
    """Every engine, in file order."""
    return load_table(ENGINES_CSV, ServingEngine)


def get_engine(engine_id: str) -> ServingEngine:
    """An engine by its exact id."""
    return {e.id: e for e in load_engines()}[engine_id]


def find_engine(name: str) -> ServingEngine:
    """Look an engine up forgivingly ('trtllm', 'TensorRT-LLM', 'vllm')."""
    engines = {e.id: e for e in load_engines()}
    found, candidates = match_names(name, {e.id: (e.id, e.name, *e.aliases) for e in engines.values()}, kind="engine")
    if found is None:
        raise UnknownEngineError(name, candidates, list(engines))
    return engines[found]
