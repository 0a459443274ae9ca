"""Separate prefill and decode pools: whether they could pay (rules.toml [disaggregation]), the xPyD layout, recipes.

The verdict only says whether two pools are worth estimating; the estimate (perf/disagg.py) decides by output
tokens/s per GPU within the SLO. Every flag in a recipe was checked against the engine's own parser or source, named
in `checked_against` (tests/selector/test_disagg_recipes.py parses them with tests/selector/engine_specs/).
"""

import json
import shlex
from dataclasses import dataclass, field

from catalog.models import ModelSpec
from i18n import DEFAULT_LANGUAGE, N_, Language
from selector.rules import Statement, load_rules

PAYS_IDS = ("disagg.long_prompts_tight_tpot", "disagg.interference", "disagg.moe_multi_node")
KEEPS_ONE_IDS = ("disagg.short_prompts", "disagg.too_few_gpus")


@dataclass(frozen=True)
class Reason:
    """One rule that applied: its id, its sentence in the asked language and its source."""

    id: str
    text: str
    source: str
    pays: bool


@dataclass(frozen=True)
class Verdict:
    """Whether separate pools could pay here, and every reason that applied (both kinds)."""

    could_pay: bool
    reasons: tuple[Reason, ...]


def _reason(rule: Statement, values: dict[str, object], pays: bool, language: Language) -> Reason:
    return Reason(rule.id, rule.reason_for(values, language), rule.source_for(values), pays)


def verdict(
    *,
    model: ModelSpec,
    input_tokens: int,
    tpot_ms: float,
    gpus: int,
    copy_gpus: int,
    gpus_per_node: int,
    interference_ratio: float | None = None,
    language: Language = DEFAULT_LANGUAGE,
) -> Verdict:
    """The rules of rules.toml [disaggregation] that apply to this deployment.

    Two pools could pay when one rule says so and none keeps one pool: too few GPUs always keeps one; short prompts
    keep one unless the model is a mixture of experts across nodes.
    """
    book = load_rules().disaggregation
    reasons: list[Reason] = []
    if gpus < max(book.min_gpus, 2 * copy_gpus):
        reasons.append(_reason(book.too_few_gpus, {"gpus": gpus, "copy": copy_gpus}, False, language))
        return Verdict(False, tuple(reasons))
    if input_tokens >= book.long_prompt_tokens and tpot_ms <= book.tight_tpot_ms:
        values = {"input": input_tokens, "tpot": f"{tpot_ms:g}"}
        reasons.append(_reason(book.long_prompts_tight_tpot, values, True, language))
    if interference_ratio is not None and interference_ratio > book.interference_ratio:
        values = {"ratio": f"{interference_ratio:.2f}", "limit": f"{book.interference_ratio:g}"}
        reasons.append(_reason(book.interference, values, True, language))
    multi_node_moe = model.is_moe and gpus > gpus_per_node
    if multi_node_moe:
        reasons.append(_reason(book.moe_multi_node, {"model": model.name, "gpus": gpus}, True, language))
    if input_tokens < book.short_prompt_tokens and not multi_node_moe:
        reasons.append(_reason(book.short_prompts, {"input": input_tokens}, False, language))
    could = any(r.pays for r in reasons) and not any(r.id == "disagg.short_prompts" for r in reasons)
    return Verdict(could, tuple(reasons))


def xpyd(prefill_replicas: int, prefill_gpus: int, decode_replicas: int, decode_gpus: int) -> str:
    """'4P1D (prefill 4 x 1 GPU, decode 1 x 4 GPUs)': the layout as the engines' docs name it."""
    return (
        f"{prefill_replicas}P{decode_replicas}D (prefill {prefill_replicas} x {prefill_gpus} GPU, "
        f"decode {decode_replicas} x {decode_gpus} GPU)"
    )


@dataclass(frozen=True)
class Recipe:
    """One engine's disaggregated launch: commands in order, files to write first, what they were checked against."""

    engine: str
    title: str
    commands: tuple[str, ...]
    checked_against: str
    files: dict[str, str] = field(default_factory=dict)


def _join(words: list[str]) -> str:
    return " ".join(shlex.quote(w) for w in words)


PREFILL_PORT, DECODE_PORT, ROUTER_PORT, BOOTSTRAP_PORT = 8100, 8200, 8000, 8998
"""Ports of the first prefill and decode server (each next replica takes the next port), the router's and SGLang's
bootstrap port; any free ports will do."""


NIXL_BOTH = json.dumps({"kv_connector": "NixlConnector", "kv_role": "kv_both"}, separators=(",", ":"))
"""vLLM's KV-transfer config for a server that both sends and takes KV blocks over NIXL (every stack below uses it)."""


def _vllm(path: str, p: tuple[int, int], d: tuple[int, int]) -> Recipe:
    commands = []
    for role, (replicas, tp), port in (("prefill", p, PREFILL_PORT), ("decode", d, DECODE_PORT)):
        for i in range(replicas):
            words = ["vllm", "serve", path, "--port", str(port + i), "--tensor-parallel-size", str(tp)]
            commands.append(f"# {role} {i + 1}/{replicas}\n" + _join([*words, "--kv-transfer-config", NIXL_BOTH]))
    return Recipe(
        engine="vllm",
        title=N_(
            "vLLM with the NIXL KV connector (every server kv_both; a proxy or llm-d/Dynamo routes prefill first)"
        ),
        commands=tuple(commands),
        checked_against="vllm 0.33.0 (`vllm serve` parser, tests/selector/engine_specs/vllm.json); connector "
        "name and kv_role from vllm-project/vllm docs/features/nixl_connector_usage.md",
    )


def _sglang(path: str, p: tuple[int, int], d: tuple[int, int]) -> Recipe:
    commands = []
    router = ["python", "-m", "sglang_router.launch_router", "--pd-disaggregation"]
    for role, (replicas, tp), port in (("prefill", p, PREFILL_PORT), ("decode", d, DECODE_PORT)):
        for i in range(replicas):
            words = ["python", "-m", "sglang.launch_server", "--model-path", path, "--port", str(port + i)]
            words += ["--tp-size", str(tp), "--disaggregation-mode", role, "--disaggregation-transfer-backend", "nixl"]
            if role == "prefill":
                words += ["--disaggregation-bootstrap-port", str(BOOTSTRAP_PORT + i)]
                router += ["--prefill", f"http://PREFILL_HOST_{i + 1}:{port + i}", str(BOOTSTRAP_PORT + i)]
            else:
                router += ["--decode", f"http://DECODE_HOST_{i + 1}:{port + i}"]
            commands.append(f"# {role} {i + 1}/{replicas}\n" + _join(words))
    commands.append("# router\n" + _join([*router, "--host", "0.0.0.0", "--port", str(ROUTER_PORT)]))
    return Recipe(
        engine="sglang",
        title=N_("SGLang prefill and decode servers with sglang_router --pd-disaggregation"),
        commands=tuple(commands),
        checked_against="sglang 0.5.23 (ServerArgs parser, tests/selector/engine_specs/sglang.json: "
        "--disaggregation-mode prefill|decode, --disaggregation-transfer-backend nixl, "
        "--disaggregation-bootstrap-port); the router's flags from sgl-project/sglang's PD tests "
        "(python -m sglang_router.launch_router --pd-disaggregation --prefill URL BOOTSTRAP_PORT --decode URL), "
        "not from a dumped parser",
    )


def _trtllm(path: str, p: tuple[int, int], d: tuple[int, int]) -> Recipe:
    commands = []
    urls: dict[str, list[str]] = {"context": [], "generation": []}
    for role, (replicas, tp), port in (("context", p, PREFILL_PORT), ("generation", d, DECODE_PORT)):
        for i in range(replicas):
            words = ["trtllm-serve", path, "--host", "0.0.0.0", "--port", str(port + i), "--tp_size", str(tp)]
            words += ["--extra_llm_api_options", f"{role}.yml"]
            commands.append(f"# {role} {i + 1}/{replicas}\n" + _join(words))
            urls[role].append(f"{role.upper()}_HOST_{i + 1}:{port + i}")
    commands.append("# orchestrator\n" + _join(["trtllm-serve", "disaggregated", "-c", "disagg_config.yaml"]))
    transceiver = "cache_transceiver_config:\n  backend: DEFAULT\n"
    config = f"hostname: 0.0.0.0\nport: {ROUTER_PORT}\n"
    for role in ("context", "generation"):
        config += f"{role}_servers:\n  num_instances: {len(urls[role])}\n  urls:\n"
        config += "".join(f'    - "{u}"\n' for u in urls[role])
    return Recipe(
        engine="tensorrt-llm",
        title=N_("TensorRT-LLM context and generation servers with trtllm-serve disaggregated"),
        commands=tuple(commands),
        files={"context.yml": transceiver, "generation.yml": transceiver, "disagg_config.yaml": config},
        checked_against="NVIDIA/TensorRT-LLM at 00209af1 (tests/selector/engine_specs/tensorrt-llm.json: "
        "--tp_size, --extra_llm_api_options); cache_transceiver_config (backend DEFAULT = NIXL) from "
        "tensorrt_llm/llmapi/llm_args.py; `trtllm-serve disaggregated -c` and the context_servers / "
        "generation_servers file from docs/source/features/disagg-serving.md",
    )


def _dynamo(path: str, p: tuple[int, int], d: tuple[int, int]) -> Recipe:
    commands = [
        "# frontend: etcd and NATS must be reachable first (Dynamo's discovery and event planes; its docs start them "
        "with docker compose)\n" + _join(["python", "-m", "dynamo.frontend", "--http-port", str(ROUTER_PORT)])
    ]
    for role, (replicas, tp) in (("prefill", p), ("decode", d)):
        for i in range(replicas):
            words = ["python", "-m", "dynamo.vllm", "--model", path, "--tensor-parallel-size", str(tp)]
            words += ["--disaggregation-mode", role, "--kv-transfer-config", NIXL_BOTH]
            commands.append(f"# {role} {i + 1}/{replicas}\n" + _join(words))
    return Recipe(
        engine="dynamo",
        title=N_(
            "NVIDIA Dynamo with its vLLM workers (one worker per host; two on one host each need their own "
            "DYN_SYSTEM_PORT and VLLM_NIXL_SIDE_CHANNEL_PORT)"
        ),
        commands=tuple(commands),
        checked_against="ai-dynamo/dynamo 1.2.0 (pyproject.toml at 004df25a, which pins vllm 0.20.1): "
        "components/src/dynamo/frontend/frontend_args.py (--http-port); components/src/dynamo/vllm/backend_args.py "
        "(--disaggregation-mode prefill|decode; --is-prefill-worker is deprecated); components/src/dynamo/vllm/args.py "
        "(vLLM's engine flags pass through; a prefill worker must be given --kv-transfer-config); "
        "examples/backends/vllm/launch/disagg.sh. The vLLM flags also parse with vllm 0.33.0's parser "
        "(tests/selector/engine_specs/vllm.json)",
    )


LLMD_CHART_VERSION = "v0.4.12"  # llm-d-incubation/llm-d-modelservice, tag llm-d-modelservice-v0.4.12 (3051935e)
LLMD_IMAGE = "ghcr.io/llm-d/llm-d-cuda:latest"  # the image the chart's own examples/values-pd.yaml runs


def _llmd_role(replicas: int, tp: int) -> str:
    """One ModelService role (decode or prefill) of the chart's values: vLLM with NIXL, GPUs from the parallelism."""
    return (
        f"  create: true\n  replicas: {replicas}\n  parallelism:\n    tensor: {tp}\n  containers:\n"
        f'  - name: "vllm"\n    image: "{LLMD_IMAGE}"\n    modelCommand: vllmServe\n'
        f"    args:\n      - \"--kv-transfer-config\"\n      - '{NIXL_BOTH}'\n"
        "    env:\n      - name: VLLM_NIXL_SIDE_CHANNEL_HOST\n        valueFrom:\n"
        "          fieldRef:\n            fieldPath: status.podIP\n"
        '      - name: VLLM_NIXL_SIDE_CHANNEL_PORT\n        value: "5600"\n'
        '      - name: UCX_TLS\n        value: "cuda_ipc,cuda_copy,tcp"\n    mountModelVolume: true\n'
    )


def _llmd(path: str, p: tuple[int, int], d: tuple[int, int]) -> Recipe:
    values = (
        f'multinode: false\nmodelArtifacts:\n  name: {path}\n  uri: "hf://{path}"\n'
        f"routing:\n  servicePort: {ROUTER_PORT}\n"
        f"decode:\n{_llmd_role(*d)}prefill:\n{_llmd_role(*p)}"
    )
    chart = "llm-d-modelservice/llm-d-modelservice"
    commands = (
        "# the llm-d ModelService chart (prefill and decode Deployments; the llm-d router, its inference scheduler, "
        "sends each request to a prefill pod, then a decode pod)\n"
        + _join(["helm", "repo", "add", "llm-d-modelservice", "https://llm-d-incubation.github.io/llm-d-modelservice/"])
        + "\n"
        + _join(["helm", "install", "pd", chart, "--version", LLMD_CHART_VERSION, "-f", "values-pd.yaml"]),
    )
    return Recipe(
        engine="llm-d",
        title=N_("llm-d on Kubernetes: its ModelService Helm chart with a prefill and a decode role"),
        commands=commands,
        files={"values-pd.yaml": values},
        checked_against=f"llm-d-incubation/llm-d-modelservice {LLMD_CHART_VERSION} (3051935e): "
        "charts/llm-d-modelservice/values.yaml (modelArtifacts.uri, decode/prefill replicas, parallelism.tensor: "
        "the GPU count and --tensor-parallel-size follow from it), examples/values-pd.yaml (image, vllmServe, "
        "the NIXL env and kv_both) and examples/README.md (helm repo add, helm install -f)",
    )


def recipes(model: ModelSpec, quant_repo: str, prefill: tuple[int, int], decode: tuple[int, int]) -> list[Recipe]:
    """Launch recipes for the xPyD layout: `prefill` and `decode` are (replicas, GPUs per replica)."""
    path = quant_repo or model.hf_repo or model.id
    return [
        _vllm(path, prefill, decode),
        _sglang(path, prefill, decode),
        _trtllm(path, prefill, decode),
        _dynamo(path, prefill, decode),
        _llmd(path, prefill, decode),
    ]
