"""The distinct command shapes the advisor prints, found by running it over a bounded grid of requests.

A shape is the engine, the command words, the sorted flag names and the values of every flag whose
value is a word rather than a number or a path (quantization names, KV cache dtypes, JSON keys ...),
plus the keys and word values of the files it writes (TensorRT-LLM's extra.yml) and its environment.
Runs in the project's environment (it imports `selector` and `catalog`).
"""

import itertools
import json
import multiprocessing
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

NUMBER = re.compile(r"^-?\d+(\.\d+)?$")

# a few values of everything the grid does not cross fully, cycled so each appears with every model
WORKLOADS = ("chat", "rag", "agent", "code", "batch")
PRIORITIES = ("latency", "throughput", "cost")
QLORA = ("no", "yes")
GPU_COUNTS = (1, 2, 4, 8)
CONCURRENCY = (16, 64, 256, 1024)


@dataclass
class Shape:
    """One distinct command shape: a representative command and how often the grid printed it."""

    key: str
    engine: str
    kind: str  # "launch" (the server command) or "prepare" (a step before it)
    argv: list[str]
    env: dict[str, str]
    files: dict[str, str]
    example: dict[str, Any]
    count: int = 0
    roles: set[str] = field(default_factory=set)


def normalize_value(value: str) -> str:
    """Replace what varies per request (numbers, paths, JSON numbers) by a placeholder."""
    if NUMBER.match(value):
        return "<n>"
    if re.fullmatch(r"([A-Z0-9_]+_IP(:\d+)?,?)+", value):  # placeholder host lists (mpirun -H HEAD_NODE_IP:8,...)
        return "<hosts>"
    if value.startswith("{"):
        try:
            data = json.loads(value)
        except json.JSONDecodeError:
            return "<json?>"
        if isinstance(data, dict):
            return json.dumps({k: (v if isinstance(v, str) else "<n>") for k, v in sorted(data.items())})
    if "/" in value or value.startswith(".") or value.endswith((".gguf", ".yml", ".yaml")):
        return "<path>"
    return value


def argv_shape(argv: list[str], head: int) -> list[str]:
    """Flag names with normalized values; positional words become <pos>."""
    out = []
    for word in argv[head:]:
        if word.startswith("-") and not NUMBER.match(word):
            name, eq, value = word.partition("=")
            out.append(f"{name}={normalize_value(value)}" if eq else name)
        else:
            out.append(f"={normalize_value(word)}")
    # pair each value with its flag, then sort the pairs so order does not split shapes
    pairs: list[str] = []
    for token in out:
        if token.startswith("=") and pairs:
            pairs[-1] += token
        else:
            pairs.append(token if not token.startswith("=") else f"<pos>{token}")
    return sorted(pairs)


def simple_yaml(text: str) -> dict[str, str]:
    """Flatten the advisor's simple two-space-indented `key: value` YAML into dotted keys."""
    flat: dict[str, str] = {}
    stack: list[tuple[int, str]] = []
    for raw in text.splitlines():
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        indent = len(raw) - len(raw.lstrip(" "))
        key, _, value = raw.strip().partition(":")
        while stack and stack[-1][0] >= indent:
            stack.pop()
        path = ".".join([*(k for _, k in stack), key.strip()])
        if value.strip():
            flat[path] = value.strip()
        else:
            stack.append((indent, key.strip()))
    return flat


def shape_key(engine: str, argv: list[str], env: dict[str, str], files: dict[str, str]) -> str:
    """The dedupe key of one command."""
    parts = [engine, " ".join(argv[:1]), *argv_shape(argv, 1)]
    parts += [f"env:{k}={normalize_value(v)}" for k, v in sorted(env.items())]
    for name, content in sorted(files.items()):
        flat = simple_yaml(content) if name.endswith((".yml", ".yaml")) else {}
        parts += [f"file:{name}:{k}={normalize_value(v)}" for k, v in sorted(flat.items())]
    return " ".join(parts)


def _requests() -> Iterator[dict[str, Any]]:
    """The bounded grid (about 26,000 requests); what is not crossed fully is cycled, so each value meets many others.

    A: every GPU x engine pin x quantization pin x 1/2/4/8 GPUs (model cycled);
    B: every model x engine pin x quantization pin x 1/2/4/8 GPUs (GPU cycled);
    C: every model x GPU on 1 and 8 GPUs (engine and quantization left to the advisor);
    D: every workload x priority x QLoRA x deployment x engine pin on an H100 and an M2 Ultra at 4k and 32k context.
    """
    from catalog import load_engines, load_gpus
    from catalog.models import load_models
    from catalog.quantization import load_quant_methods

    engines = ["auto", *(e.id for e in load_engines() if e.launchable)]
    quants = ["auto", *(q.id for q in load_quant_methods())]
    models = [m.id for m in load_models()]
    gpus = [g.id for g in load_gpus()]

    def cycled(i: int) -> dict[str, Any]:
        return {
            "workload": WORKLOADS[i % 5],
            "priority": PRIORITIES[(i // 5) % 3],
            "qlora": QLORA[(i // 15) % 2],
            "concurrency": CONCURRENCY[(i // 7) % len(CONCURRENCY)],
        }

    grid_a = itertools.product(gpus, engines, quants, GPU_COUNTS)
    for i, (gpu, engine, quant, count) in enumerate(grid_a):
        yield {
            "gpu": gpu,
            "model": models[i % len(models)],
            "engine": engine,
            "quant": quant,
            "gpus": count,
            **cycled(i),
        }
    grid_b = itertools.product(models, engines, quants, GPU_COUNTS)
    for i, (model, engine, quant, count) in enumerate(grid_b):
        yield {
            "model": model,
            "gpu": gpus[(i * 7) % len(gpus)],
            "engine": engine,
            "quant": quant,
            "gpus": count,
            **cycled(i),
        }
    for i, (model, gpu, count) in enumerate(itertools.product(models, gpus, (1, 8))):
        yield {"model": model, "gpu": gpu, "gpus": count, **cycled(i)}
    grid_d = itertools.product(
        WORKLOADS,
        PRIORITIES,
        QLORA,
        ("datacenter", "edge", "apple"),
        engines,
        ("h100-80gb-sxm", "apple-m2-ultra"),
        (4096, 32768),
    )
    for workload, priority, qlora, deploy, engine, gpu, context in grid_d:
        yield {
            "workload": workload,
            "priority": priority,
            "qlora": qlora,
            "deploy": deploy,
            "engine": engine,
            "gpu": gpu,
            "context": context,
        }


def _commands(params: dict[str, Any]) -> tuple[list[tuple[str, dict[str, Any]]], str | None]:
    """The commands the advisor prints for one request (chosen and runner-up, and their prepare steps)."""
    from pydantic import ValidationError

    from selector.advisor import advise
    from selector.inputs import AdviceRequest

    try:
        advice = advise(AdviceRequest.model_validate(params))
    except ValidationError:
        return [], "request rejected by AdviceRequest"
    except Exception as exc:
        return [], f"advise() raised {type(exc).__name__}"
    out = []
    for role, launch in (("chosen", advice.launch), ("runner-up", advice.runner_up_launch)):
        if launch is None:
            continue
        out.append(
            (
                role,
                {
                    "engine": launch.engine_id,
                    "kind": "launch",
                    "argv": list(launch.argv),
                    "env": dict(getattr(launch, "env", {}) or {}),
                    "files": dict(getattr(launch, "files", {}) or {}),
                },
            )
        )
        for step in getattr(launch, "prepare", ()) or ():
            out.append(
                (role, {"engine": launch.engine_id, "kind": "prepare", "argv": list(step), "env": {}, "files": {}})
            )
    return out, None


def _work(chunk: list[dict[str, Any]]) -> tuple[dict[str, Shape], Counter[str]]:
    shapes: dict[str, Shape] = {}
    skipped: Counter[str] = Counter()
    for params in chunk:
        commands, why = _commands(params)
        if why:
            skipped[why] += 1
        for role, cmd in commands:
            key = cmd["kind"] + ":" + shape_key(cmd["engine"], cmd["argv"], cmd["env"], cmd["files"])
            shape = shapes.get(key)
            if shape is None:
                shape = Shape(key, cmd["engine"], cmd["kind"], cmd["argv"], cmd["env"], cmd["files"], params)
                shapes[key] = shape
            shape.count += 1
            shape.roles.add(role)
    return shapes, skipped


def collect(processes: int = 2, limit: int | None = None) -> tuple[dict[str, Shape], Counter[str], int]:
    """Run the grid (in `processes` workers) and merge the shapes."""
    requests = list(itertools.islice(_requests(), limit))
    size = max(1, len(requests) // (processes * 8))
    chunks = [requests[i : i + size] for i in range(0, len(requests), size)]
    shapes: dict[str, Shape] = {}
    skipped: Counter[str] = Counter()
    with multiprocessing.get_context("fork").Pool(processes) as pool:
        for part, part_skipped in pool.imap_unordered(_work, chunks):
            skipped.update(part_skipped)
            for key, shape in part.items():
                mine = shapes.setdefault(key, shape)
                if mine is not shape:
                    mine.count += shape.count
                    mine.roles |= shape.roles
    return shapes, skipped, len(requests)
