"""Runs inside one engine's own virtual environment: dumps its real argument parser, or parses argv lists with it.

Standard library plus the installed engine only; the project is not importable here.

    python inside.py dump vllm          -> the parser and registries as JSON on stdout
    python inside.py parse vllm < in    -> in: [{"id": ..., "argv": [...]}]; out: [{"id", "ok", "error", ...}]
"""

import argparse
import contextlib
import enum
import importlib.metadata
import importlib.util
import io
import json
import os
import platform
import shutil
import sys
import typing
from collections.abc import Callable
from typing import Any

os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
# no GPU here: vLLM picks its CPU platform (as its CPU build does); the parser is the one `vllm serve` builds
os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")


class Refused(Exception):
    """The engine's parser called error()."""


def _raise(self: argparse.ArgumentParser, message: str) -> typing.NoReturn:
    raise Refused(message)


def _patch_errors(parser: argparse.ArgumentParser) -> None:
    """Make parser.error raise instead of printing usage and exiting (for the parser's class and subclasses)."""
    for cls in type(parser).__mro__:
        if isinstance(cls, type) and issubclass(cls, argparse.ArgumentParser) and "error" in vars(cls):
            cls.error = _raise  # type: ignore[method-assign]


def _literal_values(tp: object) -> list[str]:
    """Flatten a (nested) typing.Literal into its string values."""
    out: list[str] = []
    for arg in typing.get_args(tp):
        if typing.get_origin(arg) is typing.Literal or typing.get_args(arg):
            out += _literal_values(arg)
        else:
            out.append(str(arg))
    return out


def _kind(action: argparse.Action) -> str:
    names = [c.__name__ for c in type(action).__mro__]
    table = [
        ("BooleanOptionalAction", "boolean_optional"),
        ("_StoreTrueAction", "store_true"),
        ("_StoreFalseAction", "store_false"),
        ("_StoreConstAction", "store_const"),
        ("_AppendConstAction", "append_const"),
        ("_AppendAction", "append"),
        ("_ExtendAction", "extend"),
        ("_CountAction", "count"),
        ("_HelpAction", "help"),
        ("_VersionAction", "version"),
        ("_SubParsersAction", "subparsers"),
        ("_StoreAction", "store"),
    ]
    for cls_name, kind in table:
        if cls_name in names:
            return kind
    # a custom action: it takes a value unless nargs says 0
    return "store_true" if action.nargs == 0 else "store"


def _type_of(action: argparse.Action) -> tuple[str, str]:
    """(kind, name) of an action's value type: int, float, json or str, probed by calling the type."""
    fn = action.type
    if fn is None or not callable(fn):
        return "str", "str"
    name = getattr(fn, "__name__", None) or type(fn).__name__
    if fn is int:
        return "int", name
    if fn is float:
        return "float", name
    probes: list[tuple[str, str, Callable[[object], bool]]] = [
        ("json", '{"k": 1}', lambda v: isinstance(v, dict)),
        ("int", "7", lambda v: isinstance(v, int) and not isinstance(v, bool)),
        ("float", "0.5", lambda v: isinstance(v, float)),
    ]
    for kind, sample, test in probes:
        try:
            with contextlib.redirect_stderr(io.StringIO()):
                value = fn(sample)
        except Exception:
            continue
        if test(value):
            if kind == "int":
                try:
                    fn("0.5")
                except Exception:
                    return "int", name
                return "float", name
            return kind, name
    return "str", name


def _jsonable(values: object) -> list[object] | None:
    if values is None:
        return None
    try:
        out = list(values)  # type: ignore[call-overload]
    except TypeError:
        return None
    return [v if isinstance(v, (int, float, str, bool)) or v is None else str(v) for v in out]


def describe(parser: argparse.ArgumentParser) -> list[dict[str, Any]]:
    """Every option and positional of a parser, as plain data."""
    out = []
    for action in parser._actions:
        kind = _kind(action)
        if kind in {"help", "version", "subparsers"}:
            continue
        value_kind, type_name = _type_of(action)
        out.append(
            {
                "option_strings": list(action.option_strings),
                "dest": action.dest,
                "action": kind,
                "nargs": action.nargs,
                "choices": _jsonable(action.choices),
                "type": value_kind,
                "type_name": type_name,
                "required": bool(action.required),
                "negative_option_strings": _negatives(action) if kind == "boolean_optional" else [],
            }
        )
    return out


def _negatives(action: argparse.Action) -> list[str]:
    """The switch-off spellings of a BooleanOptionalAction (--no-x, or vLLM's --disable-x beside --enable-x)."""
    strings = action.option_strings
    enables = {s[len("--enable-") :] for s in strings if s.startswith("--enable-")}
    return [s for s in strings if s.startswith("--no-") or (s.startswith("--disable-") and s[10:] in enables)]


def _version(dist: str) -> str:
    return importlib.metadata.version(dist)


def _entry_points(dist: str) -> list[str]:
    return sorted(ep.name for ep in importlib.metadata.distribution(dist).entry_points if ep.group == "console_scripts")


# ---------------------------------------------------------------- vLLM


def _vllm_parser() -> tuple[argparse.ArgumentParser, argparse.ArgumentParser, Callable[[argparse.Namespace], None]]:
    from vllm.entrypoints.cli import serve  # type: ignore[import-not-found]
    from vllm.utils.argparse_utils import FlexibleArgumentParser  # type: ignore[import-not-found]

    top = FlexibleArgumentParser(prog="vllm")
    sub = top.add_subparsers(required=False, dest="subparser")
    command = serve.cmd_init()[0]
    serve_parser = command.subparser_init(sub)
    _patch_errors(top)
    _patch_errors(serve_parser)
    return top, serve_parser, command.validate


def _vllm_registries() -> dict[str, Any]:
    from vllm.config import cache, speculative  # type: ignore[import-not-found]
    from vllm.model_executor.layers import quantization  # type: ignore[import-not-found]

    spec_cls = speculative.SpeculativeConfig
    fields = getattr(spec_cls, "__dataclass_fields__", None) or getattr(spec_cls, "model_fields", {})
    return {
        "quantization": list(quantization.QUANTIZATION_METHODS),
        "quantization_deprecated": list(getattr(quantization, "DEPRECATED_QUANTIZATION_METHODS", [])),
        "kv_cache_dtype": list(getattr(cache, "KV_CACHE_DTYPES", _literal_values(cache.CacheDType))),
        "kv_offloading_backend": _literal_values(getattr(cache, "KVOffloadingBackend", typing.Literal[()])),
        "speculative_config_keys": sorted(k for k in fields if not k.startswith("_")),
        "speculative_methods": _literal_values(speculative.SpeculativeMethod),
    }


# ---------------------------------------------------------------- SGLang


def _sglang_parser() -> tuple[argparse.ArgumentParser, argparse.ArgumentParser, Callable[[argparse.Namespace], None]]:
    from sglang.srt.server_args import ServerArgs  # type: ignore[import-not-found]

    parser = argparse.ArgumentParser(prog="sglang serve")  # as sglang.srt.server_args.prepare_server_args builds it
    ServerArgs.add_cli_args(parser)
    _patch_errors(parser)
    return parser, parser, lambda _args: None


def _sglang_registries() -> dict[str, Any]:
    from sglang.srt import server_args  # type: ignore[import-not-found]
    from sglang.srt.speculative import spec_info  # type: ignore[import-not-found]

    names = [a.name for a in spec_info.SpeculativeAlgorithm if a.name != "NONE"]
    aliases = sorted(getattr(spec_info, "_RESERVED_ALIASES", ()))  # spellings from_string maps to EAGLE
    return {
        "quantization": list(server_args.QUANTIZATION_CHOICES),
        "speculative_algorithm": names + [a for a in aliases if a not in names],
    }


# ---------------------------------------------------------------- LMDeploy


def _lmdeploy_parser() -> tuple[argparse.ArgumentParser, argparse.ArgumentParser, Callable[[argparse.Namespace], None]]:
    from lmdeploy.cli.cli import CLI  # type: ignore[import-not-found]
    from lmdeploy.cli.lite import SubCliLite  # type: ignore[import-not-found]
    from lmdeploy.cli.serve import SubCliServe  # type: ignore[import-not-found]

    CLI.add_parsers()  # as lmdeploy.cli.entrypoint.run builds it
    SubCliServe.add_parsers()
    SubCliLite.add_parsers()
    api_server = SubCliServe.subparsers.choices["api_server"]
    _patch_errors(CLI.parser)
    _patch_errors(api_server)
    return CLI.parser, api_server, lambda _args: None


def _lmdeploy_registries() -> dict[str, Any]:
    from lmdeploy.messages import QuantPolicy  # type: ignore[import-not-found]

    policies = {p.name.lower(): int(p.value) for p in QuantPolicy}
    return {
        "quant_policy": sorted(set(policies.values())),
        "quant_policy_names": policies,
    }


ENGINES: dict[str, dict[str, Any]] = {
    "vllm": {
        "dist": "vllm",
        "command": ["vllm", "serve"],
        "parser": _vllm_parser,
        "registries": _vllm_registries,
        "prefix": ["serve"],
        "built_with": "vllm.entrypoints.cli.serve.ServeSubcommand.subparser_init on FlexibleArgumentParser('vllm') "
        "(make_arg_parser: FrontendArgs + AsyncEngineArgs), as `vllm serve` builds it; "
        "VLLM_TARGET_DEVICE=cpu (no GPU on this machine)",
    },
    "sglang": {
        "dist": "sglang",
        "command": ["python", "-m", "sglang.launch_server"],
        "parser": _sglang_parser,
        "registries": _sglang_registries,
        "prefix": [],
        "built_with": "sglang.srt.server_args.ServerArgs.add_cli_args on argparse.ArgumentParser, "
        "as sglang.srt.server_args.prepare_server_args builds it",
    },
    "lmdeploy": {
        "dist": "lmdeploy",
        "command": ["lmdeploy", "serve", "api_server"],
        "parser": _lmdeploy_parser,
        "registries": _lmdeploy_registries,
        "prefix": ["serve", "api_server"],
        "built_with": "lmdeploy.cli CLI + SubCliServe.add_parsers(), the `serve api_server` subparser, "
        "as lmdeploy.cli.entrypoint.run builds it",
    },
}


def dump(engine: str) -> dict[str, Any]:
    """The engine's serve parser and registries."""
    info = ENGINES[engine]
    with contextlib.redirect_stdout(io.StringIO()):
        _top, parser, _validate = info["parser"]()
        registries = info["registries"]()
    options = describe(parser)
    # values a parser takes as free text but the engine checks against a registry after parsing
    checked_later = {
        "vllm": {"quantization": "quantization", "kv_cache_dtype": "kv_cache_dtype"},
        "sglang": {"speculative_algorithm": "speculative_algorithm"},
    }.get(engine, {})
    for option in options:
        if option["dest"] in checked_later and not option["choices"]:
            option["registry_choices"] = registries[checked_later[option["dest"]]]
        if engine == "vllm" and option["dest"] == "speculative_config":
            option["json_keys"] = registries["speculative_config_keys"]
            option["json_methods"] = registries["speculative_methods"]
    # LMDeploy's --quant-policy takes its values through a type function, not argparse choices
    if engine == "lmdeploy":
        for option in options:
            if option["dest"] == "quant_policy":
                names = registries["quant_policy_names"]
                option["accepted_values"] = sorted({str(v) for v in names.values()} | set(names) | {"fp8_e4m3"})
    return {
        "engine": engine,
        "version": _version(info["dist"]),
        "command": info["command"],
        "entry_points": _entry_points(info["dist"]),
        "parser": {
            "prog": parser.prog,
            "allow_abbrev": parser.allow_abbrev,
            "built_with": info["built_with"],
        },
        "python": platform.python_version(),
        "options": options,
        "registries": registries,
    }


def _option_strings(parser: argparse.ArgumentParser) -> set[str]:
    """Option strings of a parser and of every subparser below it."""
    out: set[str] = set()
    for action in parser._actions:
        out.update(action.option_strings)
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                out |= _option_strings(sub)
    return out


def _registry_problems(engine: str, args: argparse.Namespace, registries: dict[str, Any]) -> list[str]:
    problems = []
    quant = getattr(args, "quantization", None)
    if quant is not None and "quantization" in registries and quant not in registries["quantization"]:
        problems.append(f"quantization {quant!r} is not in the engine's registry")
    algo = getattr(args, "speculative_algorithm", None)
    if engine == "sglang" and algo is not None and algo.upper() not in registries["speculative_algorithm"]:
        problems.append(f"speculative_algorithm {algo!r} is not a SpeculativeAlgorithm")
    if engine == "vllm":
        kv = getattr(args, "kv_cache_dtype", None)
        if kv is not None and kv not in registries["kv_cache_dtype"]:
            problems.append(f"kv_cache_dtype {kv!r} is not in vLLM's CacheDType")
        spec = getattr(args, "speculative_config", None)
        if isinstance(spec, dict):
            unknown = sorted(set(spec) - set(registries["speculative_config_keys"]))
            if unknown:
                problems.append(f"--speculative-config keys {unknown} are not SpeculativeConfig fields")
            method = spec.get("method")
            if method is not None and method not in registries["speculative_methods"]:
                problems.append(f"--speculative-config method {method!r} is not a SpeculativeMethod")
    return problems


def _command_present(engine: str) -> str | None:
    """Whether the first words of the printed command exist in this venv."""
    info = ENGINES[engine]
    words = info["command"]
    if words[0] == "python" and words[1] == "-m":
        return None if importlib.util.find_spec(words[2]) else f"module {words[2]} not found"
    exe = shutil.which(words[0], path=os.path.dirname(sys.executable))
    return None if exe else f"executable {words[0]} not found in the venv"


def parse(engine: str, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Feed each argv to the engine's real parser; report the parser's own error or registry problems."""
    info = ENGINES[engine]
    with contextlib.redirect_stdout(io.StringIO()):
        top, serve_parser, validate = info["parser"]()
        registries = info["registries"]()
    known = _option_strings(serve_parser)
    known_all = _option_strings(top)
    missing_command = _command_present(engine)
    results = []
    for item in items:
        argv = list(item["argv"])
        prefix = item.get("prefix", info["prefix"])  # [] for other subcommands (lmdeploy lite ...)
        registered = known if prefix == info["prefix"] else known_all
        result: dict[str, Any] = {"id": item["id"], "ok": True, "error": None, "problems": [], "abbreviations": []}
        if missing_command and prefix == info["prefix"]:
            result["problems"].append(missing_command)
        # argparse's prefix matching (allow_abbrev) accepts these, but the engine registers no such spelling
        result["abbreviations"] = [
            name
            for name in (w.split("=", 1)[0] for w in argv if w.startswith("--"))
            if name not in registered and any(r.startswith(name) for r in registered)
        ]
        try:
            with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
                args = top.parse_args([*prefix, *argv])
                validate(args)
        except Refused as exc:
            result.update(ok=False, error=str(exc))
        except SystemExit as exc:
            result.update(ok=False, error=f"SystemExit({exc.code})")
        except Exception as exc:
            result.update(ok=False, error=f"{type(exc).__name__}: {exc}")
        else:
            result["problems"] += _registry_problems(engine, args, registries)
        if result["problems"] or result["abbreviations"]:
            result["ok"] = False
        results.append(result)
    return results


def main() -> None:
    """Command line: dump ENGINE | parse ENGINE (JSON list on stdin)."""
    verb, engine = sys.argv[1], sys.argv[2]
    if verb == "dump":
        out: object = dump(engine)
    elif verb == "parse":
        out = parse(engine, json.load(sys.stdin))
    else:
        raise SystemExit(f"unknown verb {verb}")
    json.dump(out, sys.stdout, default=lambda o: o.value if isinstance(o, enum.Enum) else str(o))


if __name__ == "__main__":
    main()
