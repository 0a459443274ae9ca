"""The Ollama command: `ollama serve` configured by OLLAMA_* variables, then `ollama pull`."""

from selector.launch.common import LaunchCommand, Plan, no_multi_node


def ollama_command(plan: Plan) -> LaunchCommand:
    slots = max(1, plan.slots)
    env = {
        "OLLAMA_NUM_PARALLEL": str(slots),
        "OLLAMA_CONTEXT_LENGTH": str(plan.context),
        "OLLAMA_FLASH_ATTENTION": "1",
    }
    if plan.kv_dtype == "q8_0":
        env["OLLAMA_KV_CACHE_TYPE"] = "q8_0"
    if plan.split > 1:
        env["OLLAMA_SCHED_SPREAD"] = "1"
    warnings = no_multi_node(plan)
    limit = plan.engine.max_slots_advised
    if limit is not None and slots > limit:
        warnings.append(
            plan.tr(
                "OLLAMA_NUM_PARALLEL={slots} is above {limit}, the most parallel requests Ollama ever chose on its own "
                "(its default is 1): every slot adds a full {context}-token context of KV memory and Ollama batches "
                "them less efficiently than vLLM or llama-server. For this concurrency use vLLM (or llama.cpp's "
                "llama-server on Apple and CPU machines)."
            ).format(slots=slots, limit=limit, context=plan.context)
        )
    tag = plan.model.ollama_tag or plan.model.name.lower()
    return LaunchCommand(
        engine_id="ollama",
        argv=("ollama", "serve"),
        head=2,
        env=env,
        then=(("ollama", "pull", tag),),
        notes=(plan.tr("Run `ollama pull` in a second shell once the server is up."),),
        warnings=tuple(warnings),
    )
