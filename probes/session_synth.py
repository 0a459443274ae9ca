"""Synthetic multi-turn sessions (chat and agent), deterministic for a plan's seed (probes/sessions.py)."""

import json
import random

from probes.sessions import Conversation, SessionPlan, estimate_tokens
from probes.workloads import VOCABULARY

_AGENT_TASK_WORDS = 48


def _words(rng: random.Random, count: int) -> str:
    return " ".join(rng.choices(VOCABULARY, k=max(0, count)))


def _padded(text: str, tokens: int, rng: random.Random, lead: str = "\n\nNotes: ") -> str:
    """``text`` followed by vocabulary words up to about ``tokens`` estimated tokens."""
    missing = tokens - estimate_tokens(text) - estimate_tokens(lead)
    return text + lead + _words(rng, missing) if missing > 0 else text


def _chat_system(plan: SessionPlan, tokens: int) -> str | None:
    if tokens <= 0:
        return None
    head = "You are a helpful assistant. Answer the user in plain words."
    return _padded(head, tokens, random.Random(f"{plan.seed}:chat:system"), lead=" Context: ")


def _tool_schema(rng: random.Random, number: int) -> str:
    params = {
        f"{rng.choice(VOCABULARY)}_{k}": {
            "type": rng.choice(("string", "integer", "boolean")),
            "description": _words(rng, 8),
        }
        for k in range(3)
    }
    schema = {
        "name": f"tool_{number}_{rng.choice(VOCABULARY)}",
        "description": _words(rng, 16),
        "parameters": {"type": "object", "properties": params, "required": list(params)[:2]},
    }
    return json.dumps(schema)


def _agent_system(plan: SessionPlan, tokens: int) -> tuple[str | None, list[str]]:
    """The agent's system prompt (tool schemas up to about ``tokens``) and its tool names."""
    if tokens <= 0:
        return None, ["tool_0"]
    rng = random.Random(f"{plan.seed}:agent:system")
    text = (
        "You are an agent working in a sandbox. To act, answer with exactly one JSON object "
        '{"tool": name, "arguments": {...}} and nothing else. After each call the user sends the tool result. '
        "Keep every answer short.\n\nTools (JSON schemas):"
    )
    names: list[str] = []
    while True:
        schema = _tool_schema(rng, len(names))
        if names and estimate_tokens(text) + estimate_tokens(schema) > tokens:
            break
        names.append(json.loads(schema)["name"])
        text += "\n" + schema
    return _padded(text, tokens, rng), names


def _tool_result(rng: random.Random, call: int, tool: str, tokens: int) -> str:
    head = f"Result of tool call {call}:\n"
    tail = "\nDecide the next step."
    budget = tokens - estimate_tokens(head) - estimate_tokens(tail)
    results: list[dict[str, object]] = []
    result: dict[str, object] = {"call": call, "tool": tool, "status": "ok", "results": results}
    while True:  # whole records while they fit, leaving room for the summary that fills the rest
        results.append({"id": len(results) + 1, "title": _words(rng, 5), "text": _words(rng, 24)})
        if estimate_tokens(json.dumps(result)) > budget - 8:
            results.pop()
            break
    words = 0
    for _ in range(3):  # the summary field's own punctuation costs tokens too: settle in a few steps
        words = max(0, words + budget - estimate_tokens(json.dumps(result)))
        if words:
            result["summary"] = _words(rng, words)
        else:
            result.pop("summary", None)
    if estimate_tokens(json.dumps(result)) > budget:  # too small a size for a summary field at all
        result.pop("summary", None)
    return head + json.dumps(result) + tail


def synthetic_conversations(plan: SessionPlan) -> list[Conversation]:
    """The plan's conversations, deterministic for its seed (each text depends only on seed, session and turn)."""
    system_tokens, user_tokens, max_tokens = plan.resolved
    conversations = []
    if plan.variant == "agent":
        system, tools = _agent_system(plan, system_tokens)
        for s in range(plan.sessions):
            rng = random.Random(f"{plan.seed}:agent:task:{s}")
            users = [f"Task {s}: " + _words(rng, min(user_tokens, _AGENT_TASK_WORDS) - 3)]
            for turn in range(2, plan.turns + 1):
                rng = random.Random(f"{plan.seed}:agent:result:{s}:{turn}")
                users.append(_tool_result(rng, turn - 1, rng.choice(tools), user_tokens))
            conversations.append(Conversation(s, users, system, max_tokens=max_tokens))
        return conversations
    system = _chat_system(plan, system_tokens)
    for s in range(plan.sessions):
        users = []
        for turn in range(1, plan.turns + 1):
            rng = random.Random(f"{plan.seed}:chat:user:{s}:{turn}")
            head = "Continue this text:" if turn == 1 else "Now go on with this:"
            users.append(f"{head} {_words(rng, user_tokens - estimate_tokens(head))}".strip())
        conversations.append(Conversation(s, users, system, max_tokens=max_tokens))
    return conversations
