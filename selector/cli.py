"""The command line: `python -m selector --gpu H100 --workload rag ...` prints the page's advice (or --json).

`--config PATH` reads a Hugging Face config.json into the custom-model flags (model=custom); any flag given on
the command line overrides what the file says.
"""

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, get_args

from pydantic import ValidationError

from catalog import GpuLookupError
from catalog.matching import forgiven_matches, forgiven_notes
from catalog.models import CUSTOM_MODEL, NativeFormat
from i18n import Translate, identity
from selector.advice import Advice
from selector.advisor import advise
from selector.errors import SelectorError
from selector.hfconfig import ConfigError, ParsedConfig, parse_config
from selector.inputs import AdviceRequest
from selector.memory import MemoryFit

CHOICES: dict[str, list[str]] = {
    "workload": ["chat", "rag", "agent", "code", "batch"],
    "priority": ["latency", "throughput", "cost"],
    "ecosystem": ["international", "chinese", "hf"],
    "deploy": ["datacenter", "edge", "apple"],
    "build_engines": ["yes", "no"],
    "qlora": ["yes", "no"],
    "tie_embeddings": ["yes", "no"],
    "native_format": list(get_args(NativeFormat)),
}


def build_parser() -> argparse.ArgumentParser:
    """One flag per URL parameter, with the same names: hyphens in --help, underscores accepted too."""
    parser = argparse.ArgumentParser(
        prog="python -m selector",
        description="Recommend an inference engine, quantization, KV cache, speculative decoding and a launch "
        "command for a GPU, a model and a workload.",
    )
    for name, field in AdviceRequest.model_fields.items():
        alias = field.alias or name
        flag = f"--{alias.replace('_', '-')}"
        default = getattr(AdviceRequest(), name)
        kwargs: dict[str, Any] = {
            "dest": alias,
            "default": None,
            "metavar": alias.upper(),
            "help": f"{field.title or alias} (default: {getattr(default, 'value', default)})",
        }
        if alias in CHOICES:
            kwargs["choices"] = CHOICES[alias]
            kwargs.pop("metavar")
        parser.add_argument(flag, **kwargs)
        if flag != f"--{alias}":  # the URL's spelling is accepted too, but --help lists one spelling per flag
            parser.add_argument(f"--{alias}", **{**kwargs, "help": argparse.SUPPRESS})
    parser.add_argument(
        "--config",
        metavar="PATH",
        help="a Hugging Face config.json: describes a custom model (sets --model custom and the custom-model "
        "flags); flags given on the command line override its values",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    return parser


def read_config(path: str) -> ParsedConfig:
    """A config.json file as custom-model fields; ConfigError says why it cannot be used (missing, unreadable...)."""
    file = Path(path)
    try:
        data = file.read_bytes()
    except FileNotFoundError as exc:
        raise ConfigError(f"cannot read '{path}': no such file") from exc
    except IsADirectoryError as exc:
        raise ConfigError(f"cannot read '{path}': it is a directory, not a config.json file") from exc
    except OSError as exc:
        raise ConfigError(f"cannot read '{path}': {exc.strerror or exc}") from exc
    return parse_config(data, name="" if file.stem == "config" else file.stem)


def _messages(exc: ValidationError) -> list[str]:
    out = []
    for error in exc.errors():
        loc = error.get("loc") or ("input",)
        reason = str(error.get("msg", "invalid value")).removeprefix("Value error, ")
        out.append(f"--{loc[0]}: {reason}")
    return out


def layout_text(m: MemoryFit, tr: Translate = identity) -> str:
    """The parallel layout as engineers say it: 'TP 8 · EP · DP attention', with pipeline stages, replicas, nodes."""
    parts = [f"TP {m.tensor_parallel}"]
    if m.pipeline_parallel > 1:
        parts.append(f"PP {m.pipeline_parallel}")
    if m.expert_parallel:
        parts.append("EP")
    if m.attention_data_parallel:
        parts.append(tr("DP attention"))
    text = " · ".join(parts)
    if m.replicas > 1:
        text += tr(" × {replicas} replicas").format(replicas=m.replicas)
    if m.nodes > 1:
        text += tr(" on {nodes} nodes of {gpus} GPUs").format(nodes=m.nodes, gpus=m.gpus_per_node)
    return text


def model_text(facts: Mapping[str, object]) -> str:
    """The model's facts in one line: parameters (active), experts, KV kind, sliding window."""
    total, active = facts.get("total_params_b"), facts.get("active_params_b")
    experts, per_token = facts.get("experts") or 0, facts.get("experts_per_token") or 0
    text = (
        f"{facts.get('name', facts.get('id', 'model'))}: {total:,.4g}B parameters"
        if isinstance(total, float | int)
        else ""
    )
    if experts and isinstance(active, float | int):
        text += f" ({active:,.4g}B active), {experts} experts, {per_token} per token"
    text += f"; {str(facts.get('kv_kind', '')).upper()} KV cache; {facts.get('layers')} layers"
    window = facts.get("sliding_window")
    if window:
        text += f"; sliding window of {window} tokens on {facts.get('sliding_window_layers')} layers"
    return text


def render_text(advice: Advice) -> str:
    """The advice as a person reads it in a terminal."""
    lines = [advice.summary(), ""]
    for warning in advice.warnings:
        lines.append(f"! {warning}")
    if advice.warnings:
        lines.append("")
    facts = advice.to_json_dict().get("model_facts")
    if isinstance(facts, Mapping):
        lines.append(f"Model:        {model_text(facts)}")
    lines.append(f"Engine:       {advice.engine_name}  (runner-up: {advice.runner_up_name}; {advice.switch_when})")
    lines.append(f"Quantization: {advice.quantization_name}")
    lines.append(
        f"KV cache:     {advice.kv_cache_dtype}; prefix caching on; offload "
        f"{f'{advice.kv_offload_gb} GiB' if advice.kv_offload_gb else 'off'}"
    )
    spec = advice.speculative
    lines.append(f"Speculative:  {spec.method}" + (f" ({spec.num_speculative_tokens} tokens)" if spec.enabled else ""))
    m = advice.memory
    lines.append(
        f"Memory:       weights {m.weights_gb:.1f} GB, KV {m.kv_bytes_per_token:,} bytes/token, "
        f"max {m.max_concurrent_sequences} sequences of {m.context_tokens} tokens, fits: {m.fits}"
    )
    lines.append(f"Layout:       {layout_text(m)}")
    lines += ["", "Why:"]
    for d in advice.reasons:
        handbook = f" [handbook: {d.handbook_choice}]" if d.handbook_choice else ""
        lines.append(f"- {d.topic}: {d.choice} ({d.rule_id}) {d.reason}{handbook}  Source: {d.source}")
    if advice.today_vs_handbook:
        lines += ["", "Today's engines vs the handbook:"] + [f"- {t}" for t in advice.today_vs_handbook]
    lines += ["", f"Launch ({advice.engine_name}):", advice.launch.shell]
    lines += [f"# {note}" for note in advice.launch.notes]
    if advice.runner_up_launch is not None:
        lines += ["", f"Runner-up ({advice.runner_up_name}):", advice.runner_up_launch.shell]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; 0 on advice, 2 on bad input (with the close matches)."""
    args = build_parser().parse_args(argv)
    raw: dict[str, object] = {k: v for k, v in vars(args).items() if k not in {"json", "config"} and v is not None}
    if args.config is not None:
        try:
            parsed = read_config(args.config)
        except ConfigError as exc:
            print(f"error: --config: {exc}", file=sys.stderr)
            return 2
        for note in parsed.notes:
            print(f"note: --config: {note}", file=sys.stderr)
        raw = {"model": CUSTOM_MODEL, **parsed.fields, **raw}  # the command line wins over the file
    try:
        with forgiven_matches() as forgiven:
            request = AdviceRequest.model_validate(raw)
        for note in forgiven_notes(forgiven):
            print(note, file=sys.stderr)
        advice = advise(request)
    except ValidationError as exc:
        for message in _messages(exc):
            print(f"error: {message}", file=sys.stderr)
        return 2
    except (SelectorError, GpuLookupError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    text = json.dumps(advice.to_json_dict(), indent=2) if args.json else render_text(advice)
    print(text)  # a reader that stops early (`| head`) ends the command quietly (commands.run_command)
    return 0
