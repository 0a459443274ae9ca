"""What every launch command shares: the serving plan, the command it becomes, and layout and node helpers."""

import math
import shlex

from pydantic import BaseModel, ConfigDict

from catalog.engines import Platform, ServingEngine, load_engines
from catalog.models import ModelSpec
from catalog.quantization import BYTES_PER_GB
from i18n import DEFAULT_LANGUAGE, Language, translate
from selector.speculative import Speculative

CONTINUATION = " \\\n  "
GB_PER_GIB = 2**30 / BYTES_PER_GB  # 1 GiB = 1.073741824 GB: engines that take GiB get GB / GB_PER_GIB
HEAD_NODE = "HEAD_NODE_IP"  # placeholder the user replaces with the head node's address
SGLANG_DIST_INIT_PORT = 50000  # any free TCP port on the head node; SGLang's server-arguments doc uses this one


class Plan(BaseModel):
    """Everything a launch command needs, decided by the advisor."""

    model_config = ConfigDict(frozen=True)

    engine: ServingEngine
    model: ModelSpec
    quant: str
    kv_dtype: str
    split: int  # GPUs per model copy: tensor_parallel x pipeline_parallel
    replicas: int  # data-parallel copies (with attention_data_parallel: attention ranks of one copy instead)
    tensor_parallel: int = 0  # 0: same as split
    pipeline_parallel: int = 1  # pipeline stages, one per node when nodes > 1
    expert_parallel: bool = False  # experts spread over the copy's GPUs instead of split by tensor parallelism
    attention_data_parallel: bool = False  # MLA attention replicated per GPU, each holding its own sequences
    nodes: int = 1
    gpus_per_node: int = 0  # 0: same as split
    gpu_offload: bool = True  # False on a CPU-only host: no layers to offload to a GPU
    platform: Platform = "nvidia"  # the GPU's software platform (catalog.engines.gpu_platform): ascend needs its builds
    devices_per_card: int = 1  # devices the engines see on one card (catalog/data/gpus.csv): 2 on the 910C
    context: int
    max_num_seqs: int
    batched_tokens: int
    speculative: Speculative
    slots: int = 1
    offload_gb: int | None = None  # KV offload for each engine (one model copy), in GiB
    language: Language = DEFAULT_LANGUAGE  # the notes' and warnings' language (the command itself is the same)

    def tr(self, message: str) -> str:
        """A note's text in the plan's language."""
        return translate(self.language, message)


class LaunchCommand(BaseModel):
    """A command to paste: environment, argv, files and preparation commands first, follow-ups, notes and warnings.

    `prepare` runs before the main command (making a quantized checkpoint, starting a Ray head); `then` after it in
    another shell. `warnings` are what the advisor must show beside the command, not only as notes.
    """

    model_config = ConfigDict(frozen=True)

    engine_id: str
    argv: tuple[str, ...]
    head: int = 1
    env: dict[str, str] = {}
    files: dict[str, str] = {}
    prepare: tuple[tuple[str, ...], ...] = ()
    then: tuple[tuple[str, ...], ...] = ()
    notes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()

    @property
    def command_line(self) -> str:
        """The main command on one line (environment assignments first)."""
        return shlex.join([*(f"{k}={v}" for k, v in self.env.items()), *self.argv])

    @property
    def shell(self) -> str:
        """Everything to paste into a shell, flags one per line."""
        lines: list[str] = []
        for name, content in self.files.items():
            lines += [f"cat > {name} <<'EOF'", content.rstrip("\n"), "EOF"]
        lines += [shlex.join(cmd) for cmd in self.prepare]
        head = [*(f"{k}={shlex.quote(v)}" for k, v in self.env.items())]
        parts: list[str] = []
        argv = list(self.argv)
        parts.append(" ".join([*head, *[shlex.quote(a) for a in argv[: self.head]]]))
        rest = argv[self.head :]
        i = 0
        while i < len(rest):
            group = [rest[i]]
            while i + 1 < len(rest) and not rest[i + 1].startswith("-"):
                i += 1
                group.append(rest[i])
            parts.append(" ".join(shlex.quote(a) for a in group))
            i += 1
        lines.append(CONTINUATION.join(parts))
        lines += [shlex.join(cmd) for cmd in self.then]
        return "\n".join(lines)


# -- layout helpers -------------------------------------------------------------------------------------------------
def engine_gpus(tensor_parallel: int, pipeline_parallel: int, attention_data_parallel: bool) -> int:
    """GPUs of one serving engine: one per rank under data-parallel attention, else the copy's tensor x pipeline."""
    return 1 if attention_data_parallel else max(1, tensor_parallel) * max(1, pipeline_parallel)


def offload_gib(shortfall_gb_per_gpu: float, gpus: int, extra_gib: int) -> int:
    """KV offload size for one engine in GiB: its GPUs' KV shortfall (GB) converted to GiB, plus headroom."""
    return math.ceil(shortfall_gb_per_gpu * gpus / GB_PER_GIB) + extra_gib


def tp_size(plan: Plan) -> int:
    return plan.tensor_parallel or max(1, plan.split // max(1, plan.pipeline_parallel))


def node_gpus(plan: Plan) -> int:
    return plan.gpus_per_node or plan.split


def moe_ep(plan: Plan) -> bool:
    """Experts spread whole over the GPUs: asked for, or implied by data-parallel attention on a MoE model."""
    return plan.expert_parallel or (plan.attention_data_parallel and plan.model.is_moe)


def with_value(argv: list[str], flag: str, value: str) -> list[str]:
    """The argv with the value after `flag` replaced (the command for another node)."""
    out = list(argv)
    out[out.index(flag) + 1] = value
    return out


def other_nodes(plan: Plan) -> str:
    """How the notes name the nodes other than the head: 'node 1', or 'node i (1-3)'."""
    return plan.tr("node 1") if plan.nodes == 2 else plan.tr("node i (1-{last})").format(last=plan.nodes - 1)


def other_rank(plan: Plan) -> str:
    """The rank those nodes take: '1' when there is one, 'i' when other_nodes names several ('node i (1-3)')."""
    return "1" if plan.nodes == 2 else "i"


def node_names(nodes: int) -> list[str]:
    return [HEAD_NODE, *(f"NODE{i}_IP" for i in range(1, nodes))]


def multi_node_engines() -> str:
    return ", ".join(e.name for e in load_engines() if e.multi_node and e.launchable)


def no_multi_node(plan: Plan) -> list[str]:
    if plan.nodes <= 1:
        return []
    return [
        plan.tr(
            "{engine} cannot spread one model copy over several nodes, so this command runs on one node only; "
            "the plan needs {nodes} nodes: use {engines} for it."
        ).format(engine=plan.engine.name, nodes=plan.nodes, engines=multi_node_engines())
    ]


def extra_copies(plan: Plan, gpus: int) -> list[str]:
    if plan.replicas <= 1:
        return []
    return [
        plan.tr("Run {replicas} copies (one per group of {gpus} GPUs) behind a load balancer.").format(
            replicas=plan.replicas, gpus=gpus
        )
    ]


def device_note(plan: Plan) -> list[str]:
    """A card the engines see as several devices (the 910C's two dies): the command's sizes count devices."""
    per = plan.devices_per_card
    if per <= 1:
        return []
    return [
        plan.tr(
            "The engines see each card as {per} devices (its dies), each with 1/{per} of its memory, so the sizes in "
            "this command count devices: a copy on {cards} cards is {devices} devices."
        ).format(per=per, cards=plan.split // per, devices=plan.split)
    ]
