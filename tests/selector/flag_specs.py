"""Each engine's command-line flags as argparse parsers, built from the specs in engine_specs/*.json.

The specs are generated, not typed: `python scripts/engine_flags.py specs` dumps the real argument
parsers of pinned vLLM, SGLang and LMDeploy releases installed in their own virtual environments,
and reads TensorRT-LLM's click options, TGI's clap struct, llama.cpp's common_arg registrations and
Ollama's OLLAMA_* variables out of their source. Each JSON file records the engine version (or source
commit), how it was generated and when. See docs/engine-flags.md.

The parsers refuse abbreviations (allow_abbrev=False): a printed flag must be one the engine registers.
"""

import argparse
import json
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

SPEC_DIR = Path(__file__).parent / "engine_specs"
SPEC_FILES = {
    "vllm": "vllm.json",
    "sglang": "sglang.json",
    "tensorrt-llm": "tensorrt-llm.json",
    "lmdeploy": "lmdeploy.json",
    "tgi": "tgi.json",
    "llama.cpp": "llama.cpp.json",
    "ollama": "ollama.json",
}


class Refused(Exception):
    """A flag, value, variable or YAML key the engine's spec does not have."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise Refused(message)


@cache
def load_spec(engine: str) -> dict[str, Any]:
    """The generated spec of one engine (vllm, sglang, tensorrt-llm, lmdeploy, tgi, llama.cpp, ollama)."""
    return json.loads((SPEC_DIR / SPEC_FILES[engine]).read_text(encoding="utf-8"))


def _base_type(kind: str) -> Callable[[str], Any]:
    return {"int": int, "float": float, "json": json.loads}.get(kind, str)


def _value_type(option: dict[str, Any]) -> tuple[Callable[[str], Any], list[Any] | None]:
    """A type function for one option, and the choices argparse should enforce."""
    base = _base_type(option["type"])
    choices = option.get("choices") or option.get("registry_choices")
    accepted = option.get("accepted_values")
    separator = option.get("list_separator")
    keys, methods = option.get("json_keys"), option.get("json_methods")
    name = option["option_strings"][0]

    if keys is not None:

        def json_value(text: str) -> dict[str, Any]:
            value = json.loads(text)
            unknown = sorted(set(value) - set(keys))
            if unknown:
                raise argparse.ArgumentTypeError(f"{name}: unknown keys {unknown}")
            if methods is not None and "method" in value and value["method"] not in methods:
                raise argparse.ArgumentTypeError(f"{name}: unknown method {value['method']!r}")
            return value

        return json_value, None
    if accepted is not None or (separator and choices):
        allowed = [str(v) for v in (accepted or choices or [])]

        def checked(text: str) -> Any:
            parts = text.split(separator) if separator else [text]
            bad = [p for p in parts if p not in allowed]
            if bad:
                raise argparse.ArgumentTypeError(f"{name}: invalid choice {bad} (choose from {allowed})")
            return text if separator else base(text)

        return checked, None
    if choices is not None:
        choices = [base(c) if isinstance(c, str) and base is not str else c for c in choices]
    return base, choices


class _Removed(argparse.Action):
    def __call__(self, parser: argparse.ArgumentParser, *_args: Any, **_kwargs: Any) -> None:
        raise Refused(f"{'/'.join(self.option_strings)} was removed: {self.help}")


def build_parser(spec: dict[str, Any]) -> argparse.ArgumentParser:
    """An argparse parser with the spec's option strings, choices, nargs and actions."""
    parser = _Parser(prog=spec["parser"]["prog"], add_help=False, allow_abbrev=False)
    taken: set[str] = set()
    for option in spec["options"]:
        strings = [s for s in option["option_strings"] if s not in taken]
        if option["option_strings"] and not strings:
            continue
        taken.update(strings)
        dest, action, nargs = option["dest"], option["action"], option["nargs"]
        if not option["option_strings"]:
            type_fn, choices = _value_type({**option, "option_strings": [dest]})
            parser.add_argument(dest, nargs=nargs, type=type_fn, choices=choices)
        elif option.get("removed"):
            value_nargs = 0 if action in {"store_true", "store_false", "boolean_optional"} else (nargs or 1)
            parser.add_argument(*strings, dest=dest, action=_Removed, nargs=value_nargs, help=option["removed"])
        elif action == "boolean_optional":
            negatives = set(option.get("negative_option_strings") or [])
            positive = [s for s in strings if s not in negatives]
            negative = [s for s in strings if s in negatives]
            if positive:
                parser.add_argument(*positive, dest=dest, action="store_true", default=None)
            if negative:
                parser.add_argument(*negative, dest=dest, action="store_false", default=None)
        elif action in {"store_true", "store_const", "append_const", "count"}:
            parser.add_argument(*strings, dest=dest, action="count" if action == "count" else "store_true")
        elif action == "store_false":
            parser.add_argument(*strings, dest=dest, action="store_false")
        else:
            type_fn, choices = _value_type(option)
            kind = {"append": "append", "extend": "extend"}.get(action, "store")
            parser.add_argument(*strings, dest=dest, action=kind, nargs=nargs, type=type_fn, choices=choices)
    return parser


def _factory(engine: str) -> Callable[[], argparse.ArgumentParser]:
    def make() -> argparse.ArgumentParser:
        return build_parser(load_spec(engine))

    make.__name__ = engine
    make.__doc__ = f"{engine}'s parser, built from engine_specs/{SPEC_FILES[engine]}."
    return make


vllm = _factory("vllm")
sglang = _factory("sglang")
trtllm = _factory("tensorrt-llm")
lmdeploy = _factory("lmdeploy")
tgi = _factory("tgi")
llama_server = _factory("llama.cpp")

# engine id -> (the words that start its command, the parser for the rest)
SPECS: dict[str, tuple[list[str], Callable[[], argparse.ArgumentParser]]] = {
    engine: (load_spec(engine)["command"], factory)
    for engine, factory in {
        "vllm": vllm,
        "sglang": sglang,
        "tensorrt-llm": trtllm,
        "lmdeploy": lmdeploy,
        "tgi": tgi,
        "llama.cpp": llama_server,
    }.items()
}

OLLAMA_ENV_SPEC: dict[str, dict[str, Any]] = {item["name"]: item for item in load_spec("ollama")["env"]}
OLLAMA_ENV = set(OLLAMA_ENV_SPEC)
_GO_BOOLS = {"1", "t", "T", "TRUE", "true", "True", "0", "f", "F", "FALSE", "false", "False"}


def check_ollama_env(env: dict[str, str]) -> None:
    """Refuse an OLLAMA_* variable `ollama serve` does not read, or a value of the wrong kind."""
    for name, value in env.items():
        item = OLLAMA_ENV_SPEC.get(name)
        if item is None:
            raise Refused(f"{name} is not an Ollama environment variable")
        if item["kind"] == "uint" and not value.isdigit():
            raise Refused(f"{name}={value}: not an unsigned integer")
        if item["kind"] == "bool" and value not in _GO_BOOLS:
            raise Refused(f"{name}={value}: not a Go boolean")
        if "values" in item and value not in item["values"]:
            raise Refused(f"{name}={value}: not one of {item['values']}")


def flat_yaml(text: str) -> dict[str, str]:
    """Flatten simple two-space-indented `key: value` YAML (what the advisor writes) into dotted keys."""
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


def check_trtllm_yaml(text: str) -> dict[str, str]:
    """Refuse a key of a trtllm-serve --config / --extra_llm_api_options YAML the LLM API does not have."""
    keys = load_spec("tensorrt-llm")["yaml"]
    flat = flat_yaml(text)
    decoding = flat.get("speculative_config.decoding_type")
    problems = []
    if decoding is not None and decoding not in keys["speculative_config"]:
        problems.append(
            f"speculative_config.decoding_type {decoding!r} is not one of {sorted(keys['speculative_config'])}"
        )
    for path, value in flat.items():
        top, _, rest = path.partition(".")
        if top not in keys["top_level"]:
            problems.append(f"{top} is not an LLM API argument")
        elif top == "kv_cache_config" and rest.split(".")[0] not in keys["kv_cache_config"]:
            problems.append(f"{path} is not a KvCacheConfig field")
        elif (
            top == "speculative_config"
            and decoding in keys["speculative_config"]
            and rest.split(".")[0] not in keys["speculative_config"][decoding]
        ):
            problems.append(f"{path} is not a field of the {decoding} decoding config")
        if path == "kv_cache_config.dtype" and value not in keys["kv_cache_config.dtype_categories"]:
            problems.append(f"kv_cache_config.dtype {value!r} is not one of {keys['kv_cache_config.dtype_categories']}")
    if problems:
        raise Refused("; ".join(problems))
    return flat
