"""What the advisor returns: an Advice with every Decision (its rule, reason and source), and the model's facts."""

from pydantic import BaseModel, ConfigDict, Field

from catalog.models import ModelSpec
from i18n import Translate, identity
from selector.inputs import AdviceRequest
from selector.launch import LaunchCommand
from selector.memory import MemoryFit
from selector.speculative import Speculative


class Decision(BaseModel):
    """One decision: what, which rule fired, why (one sentence) and where the rule comes from."""

    model_config = ConfigDict(frozen=True)

    topic: str
    choice: str
    rule_id: str
    reason: str
    source: str
    handbook_choice: str = ""
    shown: str = Field(default="", exclude=True)  # `choice` as the page words it in its language ('' = as is)


class Advice(BaseModel):
    """The whole recommendation. `reasons` lists every decision; `warnings` name problems with the inputs."""

    model_config = ConfigDict(frozen=True)

    request: AdviceRequest
    gpu_id: str
    gpu_name: str
    model_id: str
    model_name: str
    engine: str
    engine_name: str
    runner_up: str
    runner_up_name: str
    switch_when: str
    quantization: str
    quantization_name: str
    kv_cache_dtype: str
    prefix_caching: bool
    chunked_prefill: bool
    kv_offload_gb: int | None
    max_num_seqs: int
    max_num_batched_tokens: int
    speculative: Speculative
    memory: MemoryFit
    model: ModelSpec
    launch: LaunchCommand
    runner_up_launch: LaunchCommand | None
    reasons: tuple[Decision, ...]
    today_vs_handbook: tuple[str, ...]
    warnings: tuple[str, ...]

    @property
    def launch_command(self) -> str:
        """The chosen engine's command, ready to paste."""
        return self.launch.shell

    def summary(self, tr: Translate = identity, kv_text: str | None = None) -> str:
        """One readable sentence (`kv_text`: the KV cache dtype as the page words it; its engine value otherwise)."""
        spec = tr("n-gram speculation") if self.speculative.enabled else tr("no speculation")
        fit_text = (
            tr("up to {sequences} sequences of {tokens} tokens").format(
                sequences=self.memory.max_concurrent_sequences, tokens=self.memory.context_tokens
            )
            if self.memory.fits
            else tr("does NOT fit")
        )
        return tr("{engine} with {quant} weights, {kv} KV cache and {spec} on {gpus}x {gpu}: {fit}.").format(
            engine=self.engine_name,
            quant=self.quantization_name,
            kv=self.kv_cache_dtype if kv_text is None else kv_text,
            spec=spec,
            gpus=self.request.gpus,
            gpu=self.gpu_name,
            fit=fit_text,
        )

    def to_json_dict(self) -> dict[str, object]:
        """The CLI's --json object."""
        memory = self.memory.model_dump()
        return {
            "gpu": self.gpu_id,
            "gpus": self.request.gpus,
            "model": self.model_id,
            "engine": self.engine,
            "runner_up": self.runner_up,
            "switch_when": self.switch_when,
            "quantization": self.quantization,
            "kv_cache_dtype": self.kv_cache_dtype,
            "prefix_caching": self.prefix_caching,
            "chunked_prefill": self.chunked_prefill,
            "kv_offload_gb": self.kv_offload_gb,
            "speculative": self.speculative.model_dump(),
            "launch_command": self.launch.shell,
            "launch_argv": list(self.launch.argv),
            "runner_up_launch_command": self.runner_up_launch.shell if self.runner_up_launch else None,
            "memory": memory,
            "model_facts": model_facts(self.model),
            "reasons": [d.model_dump() for d in self.reasons],
            "today_vs_handbook": list(self.today_vs_handbook),
            "warnings": list(self.warnings),
        }


def model_facts(model: ModelSpec) -> dict[str, object]:
    """The model's architecture as the CLI's --json `model_facts` reports it."""
    return {
        "id": model.id,
        "name": model.name,
        "total_params_b": model.params_b,
        "active_params_b": model.active_params / 1e9,
        "layers": model.layers,
        "hidden_size": model.hidden_size,
        "attention_heads": model.attention_heads,
        "kv_heads": model.kv_heads,
        "head_dim": model.head_dim,
        "experts": model.experts,
        "shared_experts": model.shared_experts,
        "experts_per_token": model.experts_per_token,
        "kv_kind": model.kv_kind,
        "kv_lora_rank": model.kv_lora_rank or None,
        "sliding_window": model.sliding_window or None,
        "sliding_window_layers": model.sliding_window_layers if model.sliding_window else None,
        "max_context": model.max_context,
        "native_format": model.native_format,
        "source": model.source,
    }
