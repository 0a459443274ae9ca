"""The command line: `python -m selector --gpu H100 --workload rag ...` prints the page's advice (or --json)."""

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from catalog import GpuLookupError
from selector.advisor import Advice, advise
from selector.errors import SelectorError
from selector.inputs import AdviceRequest

CHOICES: dict[str, list[str]] = {
    "workload": ["chat", "rag", "agent", "code", "batch"],
    "priority": ["latency", "throughput", "cost"],
    "ecosystem": ["international", "chinese", "hf"],
    "deploy": ["datacenter", "edge", "apple"],
    "build_engines": ["yes", "no"],
    "qlora": ["yes", "no"],
}


def build_parser() -> argparse.ArgumentParser:
    """One flag per URL parameter, with the same names (underscores or hyphens)."""
    parser = argparse.ArgumentParser(
        prog="python -m selector",
        description="Recommend an inference engine, quantization, KV cache, speculative decoding and a launch "
        "command for a GPU, a model and a workload.",
    )
    for name, field in AdviceRequest.model_fields.items():
        alias = field.alias or name
        flags = [f"--{alias}"] + ([f"--{alias.replace('_', '-')}"] if "_" in alias else [])
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
        parser.add_argument(*flags, **kwargs)
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    return parser


def _messages(exc: ValidationError) -> list[str]:
    out = []
    for error in exc.errors():
        loc = error.get("loc") or ("input",)
        reason = str(error.get("msg", "invalid value")).removeprefix("Value error, ")
        out.append(f"--{loc[0]}: {reason}")
    return out


def render_text(advice: Advice) -> str:
    """The advice as a person reads it in a terminal."""
    lines = [advice.summary(), ""]
    for warning in advice.warnings:
        lines.append(f"! {warning}")
    if advice.warnings:
        lines.append("")
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
    raw = {k: v for k, v in vars(args).items() if k != "json" and v is not None}
    try:
        request = AdviceRequest.model_validate(raw)
        advice = advise(request)
    except ValidationError as exc:
        for message in _messages(exc):
            print(f"error: {message}", file=sys.stderr)
        return 2
    except (SelectorError, GpuLookupError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    text = json.dumps(advice.to_json_dict(), indent=2) if args.json else render_text(advice)
    try:
        print(text)
    except BrokenPipeError:  # `| head` closed the pipe: not an error for the user
        sys.stderr.close()
    return 0
