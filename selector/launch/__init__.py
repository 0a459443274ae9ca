"""Launch commands with today's flag spellings, one module per engine, from one serving plan."""

from collections.abc import Callable

from selector.launch.common import GB_PER_GIB, LaunchCommand, Plan, engine_gpus, offload_gib
from selector.launch.llama_cpp import llama_cpp_command
from selector.launch.lmdeploy import lmdeploy_backend, lmdeploy_command
from selector.launch.ollama import ollama_command
from selector.launch.sglang import sglang_command
from selector.launch.tgi import tgi_command
from selector.launch.trtllm import trtllm_command
from selector.launch.vllm import vllm_command

BUILDERS: dict[str, Callable[[Plan], LaunchCommand]] = {
    "vllm": vllm_command,
    "sglang": sglang_command,
    "tensorrt-llm": trtllm_command,
    "lmdeploy": lmdeploy_command,
    "tgi": tgi_command,
    "llama.cpp": llama_cpp_command,
    "ollama": ollama_command,
}


def launch_command(plan: Plan) -> LaunchCommand:
    """The launch command for the plan's engine."""
    return BUILDERS[plan.engine.id](plan)


__all__ = [
    "BUILDERS",
    "GB_PER_GIB",
    "LaunchCommand",
    "Plan",
    "engine_gpus",
    "launch_command",
    "lmdeploy_backend",
    "offload_gib",
]
