"""Option specs read out of engines' source code, for the engines that cannot be installed here.

TensorRT-LLM: click decorators of `trtllm-serve` (tensorrt_llm/commands/serve.py) and the LLM API
fields its YAML options file sets (tensorrt_llm/llmapi/llm_args.py). TGI: the clap `Args` struct of
launcher/src/main.rs. llama.cpp: the `common_arg(...)` registrations in common/arg.cpp that
`llama-server` sees. Ollama: the OLLAMA_* variables of envconfig/config.go.
"""

import json
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Option = dict[str, Any]


@dataclass(frozen=True)
class SourceTree:
    """A source tree: a bare git mirror (read at HEAD) or a plain directory with an optional SOURCE.json."""

    path: Path

    @property
    def is_git(self) -> bool:
        """A bare git directory (as the fetch tool leaves it) or a work tree with .git."""
        return ((self.path / "HEAD").is_file() and (self.path / "objects").is_dir()) or (self.path / ".git").exists()

    def _git(self, *args: str) -> str:
        git_dir = self.path / ".git" if (self.path / ".git").exists() else self.path
        return subprocess.run(
            ["git", f"--git-dir={git_dir}", *args], check=True, capture_output=True, text=True
        ).stdout.strip()

    def read(self, name: str) -> str:
        """The text of one file."""
        if self.is_git:
            return self._git("show", f"HEAD:{name}")
        return (self.path / name).read_text(encoding="utf-8")

    def provenance(self, repository: str) -> dict[str, Any]:
        """Repository, commit, commit date and release tag of the tree."""
        if self.is_git:
            commit, date = self._git("log", "-1", "--format=%H%n%cI").splitlines()
            exact = self._git("tag", "--points-at", "HEAD").split()
            try:
                nearest = self._git("describe", "--tags", "--abbrev=0")
            except subprocess.CalledProcessError:
                nearest = None
            return {
                "kind": "git",
                "repository": repository,
                "commit": commit,
                "date": date,
                "tag": exact[0] if exact else None,
                "nearest_tag": nearest,
            }
        meta = self.path / "SOURCE.json"
        info: dict[str, Any] = json.loads(meta.read_text(encoding="utf-8")) if meta.is_file() else {}
        return {"kind": "source-files", "repository": repository, **info}


# ---------------------------------------------------------------- small lexing helpers


def _balanced(text: str, start: int, open_ch: str = "(", close_ch: str = ")", comment: str = "//") -> int:
    """Index just past the bracket that closes the one at `start`, skipping literals and line comments."""
    depth, i, quote = 0, start, ""
    while i < len(text):
        ch = text[i]
        if not quote and text.startswith(comment, i):
            newline = text.find("\n", i)
            i = len(text) if newline < 0 else newline
            continue
        if quote:
            if ch == "\\":
                i += 2
                continue
            if ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch == open_ch:
            depth += 1
        elif ch == close_ch:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise ValueError(f"unbalanced {open_ch} at {start}")


def _split_top(text: str) -> list[str]:
    """Split call arguments on top-level commas."""
    parts, depth, quote, current = [], 0, "", []
    i = 0
    while i < len(text):
        ch = text[i]
        if quote:
            current.append(ch)
            if ch == "\\" and i + 1 < len(text):
                current.append(text[i + 1])
                i += 2
                continue
            if ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
            current.append(ch)
        elif ch in "([{":
            depth += 1
            current.append(ch)
        elif ch in ")]}":
            depth -= 1
            current.append(ch)
        elif ch == "," and depth == 0:
            parts.append("".join(current).strip())
            current = []
        else:
            current.append(ch)
        i += 1
    if "".join(current).strip():
        parts.append("".join(current).strip())
    return parts


_STRING = re.compile(r"""^(?:"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)')$""")


def _string(expr: str) -> str | None:
    m = _STRING.match(expr.strip())
    return None if m is None else (m.group(1) if m.group(1) is not None else m.group(2))


def _strings_in(expr: str) -> list[str]:
    return [a or b for a, b in re.findall(r""""((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)'""", expr)]


def _option(
    strings: list[str],
    dest: str,
    action: str = "store",
    value_type: str = "str",
    **extra: Any,
) -> Option:
    return {
        "option_strings": strings,
        "dest": dest,
        "action": action,
        "nargs": extra.pop("nargs", None),
        "choices": extra.pop("choices", None),
        "type": value_type,
        "type_name": extra.pop("type_name", value_type),
        "required": extra.pop("required", False),
        "negative_option_strings": extra.pop("negative_option_strings", []),
        **extra,
    }


# ---------------------------------------------------------------- TensorRT-LLM (click)


def _click_type(expr: str) -> tuple[str, list[str] | None, str | None]:
    """(value type, choices, dynamic-choices expression) of a click `type=` expression."""
    expr = expr.strip()
    if expr in {"int", "click.INT"}:
        return "int", None, None
    if expr in {"float", "click.FLOAT"}:
        return "float", None, None
    m = re.match(r"(?:click\.Choice|ChoiceWithAlias)\((.*)\)$", expr, re.S)
    if m:
        args = _split_top(m.group(1))
        if args and args[0].startswith("["):
            choices = _strings_in(args[0])
            if len(args) > 1 and args[1].startswith("{"):
                choices += _strings_in(args[1])[0::2]  # alias keys
            return "str", choices, None
        return "str", None, args[0] if args else expr
    return "str", None, None


def extract_click_command(text: str, command: str) -> list[Option]:
    """The options and arguments of one `@click.command(name)` function, from its decorators."""
    start = text.index(f'@click.command("{command}")')
    end = text.index("\ndef ", start)
    block = text[start:end]
    options: list[Option] = []
    for m in re.finditer(r"@click\.(option|argument)\(", block):
        call = block[m.end() - 1 : _balanced(block, m.end() - 1, comment="#")]
        args = _split_top(call[1:-1])
        names = [s for s in (_string(a) for a in args) if s is not None]
        kwargs = dict(a.split("=", 1) for a in args if re.match(r"^\w+=", a))
        kwargs = {k.strip(): v.strip() for k, v in kwargs.items()}
        if m.group(1) == "argument":
            options.append(_option([], names[0], "store", _click_type(kwargs.get("type", "str"))[0]))
            continue
        flags = [n for n in names if n.startswith("-")]
        explicit = [n for n in names if not n.startswith("-")]
        negatives: list[str] = []
        if any("/" in f for f in flags):  # "--x/--no-x"
            pos, neg = flags[0].split("/", 1)
            flags, negatives = [pos, neg], [neg]
        longs = [f for f in flags if f.startswith("--")]
        dest = explicit[0] if explicit else (longs or flags)[0].lstrip("-").replace("-", "_").lower()
        value_type, choices, dynamic = _click_type(kwargs.get("type", "str"))
        if negatives:
            action = "boolean_optional"
        elif kwargs.get("is_flag") == "True":
            action = "store_true"
        elif kwargs.get("multiple") == "True":
            action = "append"
        else:
            action = "store"
        extra: dict[str, Any] = {"choices": choices, "negative_option_strings": negatives}
        if dynamic:
            extra["choices_dynamic"] = dynamic
        options.append(_option(flags, dest, action, value_type, **extra))
    return options


def extract_pydantic_classes(text: str) -> dict[str, dict[str, Any]]:
    """Class name -> {"bases": [...], "fields": {name: annotation}, "literals": {name: [values]}}."""
    classes: dict[str, dict[str, Any]] = {}
    current: dict[str, Any] | None = None
    for line in text.splitlines():
        head = re.match(r"^class (\w+)\(([^)]*)\):", line)
        if head:
            current = {"bases": [b.strip() for b in head.group(2).split(",")], "fields": {}, "literals": {}}
            classes[head.group(1)] = current
            continue
        if current is None:
            continue
        if line and not line[0].isspace() and not line.startswith(("#", "@")):
            current = None
            continue
        field = re.match(r"^    (\w+): (.+?)(?: = (.*))?$", line)
        if field and not field.group(1).startswith("_"):
            current["fields"][field.group(1)] = field.group(2).strip()
            lit = re.search(r"Literal\[([^\]]*)\]", field.group(2))
            if lit:
                current["literals"][field.group(1)] = _strings_in(lit.group(1))
            categorical = re.search(r"TelemetryField\.categorical\(([^)]*)\)", line)
            if categorical:
                current["literals"].setdefault(f"{field.group(1)}#categories", _strings_in(categorical.group(1)))
    return classes


def _fields(classes: dict[str, dict[str, Any]], name: str) -> dict[str, str]:
    """Fields of a class and of its bases found in the same file."""
    info = classes.get(name)
    if info is None:
        return {}
    out: dict[str, str] = {}
    for base in info["bases"]:
        out.update(_fields(classes, base))
    out.update(info["fields"])
    return out


def trtllm_yaml_keys(text: str) -> dict[str, Any]:
    """The keys an extra_llm_api_options / --config YAML may set, for the parts the advisor writes."""
    classes = extract_pydantic_classes(text)
    decoding = {}
    for name, info in classes.items():
        literal = info["literals"].get("decoding_type")
        if literal:
            decoding[literal[0]] = sorted(_fields(classes, name))
    kv = classes.get("KvCacheConfig", {"literals": {}})
    return {
        "top_level": sorted(_fields(classes, "TorchLlmArgs") or _fields(classes, "BaseLlmArgs")),
        "kv_cache_config": sorted(_fields(classes, "KvCacheConfig")),
        "kv_cache_config.dtype_categories": kv["literals"].get("dtype#categories", []),
        "speculative_config": decoding,
    }


def tensorrt_llm_spec(tree: SourceTree) -> dict[str, Any]:
    """`trtllm-serve` options and the LLM API YAML keys."""
    serve = tree.read("tensorrt_llm/commands/serve.py")
    return {
        "engine": "tensorrt-llm",
        "command": ["trtllm-serve"],
        "parser": {"prog": "trtllm-serve", "allow_abbrev": False, "built_with": "click decorators of `serve`"},
        "options": extract_click_command(serve, "serve"),
        "yaml": trtllm_yaml_keys(tree.read("tensorrt_llm/llmapi/llm_args.py")),
        "files": ["tensorrt_llm/commands/serve.py", "tensorrt_llm/llmapi/llm_args.py"],
    }


# ---------------------------------------------------------------- TGI (clap)

_RUST_INT = {"usize", "u8", "u16", "u32", "u64", "i32", "i64", "isize"}
_RUST_FLOAT = {"f32", "f64"}


def _kebab(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "-", name).lower()


def extract_value_enums(text: str) -> dict[str, list[str]]:
    """Enum name -> the values clap accepts for a `#[derive(ValueEnum)]` enum."""
    out: dict[str, list[str]] = {}
    for m in re.finditer(r"#\[derive\([^\]]*ValueEnum[^\]]*\)\][^{]*?enum (\w+) \{", text):
        body = text[m.end() : _balanced(text, m.end() - 1, "{", "}") - 1]
        values, rename = [], None
        for line in body.splitlines():
            line = line.strip()
            if line.startswith("//"):
                continue
            name = re.search(r'#\[(?:clap|value)\((?:name|rename)\s*=\s*"([^"]+)"', line)
            if name:
                rename = name.group(1)
                continue
            variant = re.match(r"^(\w+)\s*,?$", line)
            if variant:
                values.append(rename or _kebab(variant.group(1)))
                rename = None
        out[m.group(1)] = values
    return out


def extract_clap_struct(text: str, struct: str = "Args") -> list[Option]:
    """The options of a clap derive struct."""
    m = re.search(rf"struct {struct} \{{", text)
    if m is None:
        raise ValueError(f"struct {struct} not found")
    body = text[m.end() : _balanced(text, m.end() - 1, "{", "}") - 1]
    enums = extract_value_enums(text)
    options: list[Option] = []
    attrs: list[str] = []
    for raw in body.splitlines():
        line = raw.strip()
        if line.startswith("#[clap(") or line.startswith("#[arg("):
            attrs.append(line[line.index("(") + 1 : line.rindex(")")])
            continue
        field = re.match(r"^(?:pub\s+)?(\w+):\s*(.+?),?$", line)
        if not field or line.startswith("//"):
            continue
        name, rust_type = field.group(1), field.group(2).rstrip(",")
        attr = ", ".join(attrs)
        attrs = []
        long_m = re.search(r'\blong\s*=\s*"([^"]+)"', attr)
        short_m = re.search(r"\bshort\s*=\s*'(.)'", attr)
        strings = []
        if long_m or re.search(r"\blong\b", attr):
            strings.append("--" + (long_m.group(1) if long_m else name.replace("_", "-")))
        if short_m or re.search(r"\bshort\b", attr):
            strings.append("-" + (short_m.group(1) if short_m else name[0]))
        if not strings:
            options.append(_option([], name, "store", "str", type_name=rust_type))
            continue
        inner = re.sub(r"^(Option|Vec)<(.+)>$", r"\2", rust_type)
        action = "append" if rust_type.startswith("Vec<") else "store"
        if rust_type == "bool":
            action = "store_true"
        value_type = "int" if inner in _RUST_INT else "float" if inner in _RUST_FLOAT else "str"
        extra: dict[str, Any] = {"choices": enums.get(inner), "type_name": rust_type}
        if "value_delimiter" in attr:
            extra["list_separator"] = ","
        if re.search(r"\benv\b", attr):
            extra["env"] = name.upper()
        options.append(_option(strings, name, action, value_type, **extra))
    return options


def tgi_spec(tree: SourceTree) -> dict[str, Any]:
    """`text-generation-launcher` options."""
    text = tree.read("launcher/src/main.rs")
    return {
        "engine": "tgi",
        "command": ["text-generation-launcher"],
        "parser": {"prog": "text-generation-launcher", "allow_abbrev": False, "built_with": "clap derive `Args`"},
        "options": extract_clap_struct(text),
        "files": ["launcher/src/main.rs"],
    }


# ---------------------------------------------------------------- llama.cpp


def _cpp_strings(expr: str) -> list[str]:
    return re.findall(r'"((?:[^"\\]|\\.)*)"', expr)


def _ggml_type_names(text: str) -> list[str]:
    m = re.search(r"kv_cache_types\s*=\s*\{([^}]*)\}", text)
    return [] if m is None else [t.lower() for t in re.findall(r"GGML_TYPE_(\w+)", m.group(1))]


def _spec_types(speculative_cpp: str) -> list[str]:
    m = re.search(r"common_speculative_type_from_name_map\s*=\s*\{(.*?)\n\};", speculative_cpp, re.S)
    return [] if m is None else re.findall(r'\{\s*"([^"]+)"\s*,', m.group(1))


def extract_common_args(text: str, example: str, speculative_cpp: str = "") -> list[Option]:
    """`common_arg` registrations of common/arg.cpp that a given llama_example (LLAMA_EXAMPLE_SERVER) accepts."""
    kv_types = _ggml_type_names(text)
    spec_types = _spec_types(speculative_cpp)
    options: list[Option] = []
    for m in re.finditer(r"add_opt\(common_arg\(", text):
        open_paren = m.end() - 1
        close = _balanced(text, open_paren)
        call = text[open_paren + 1 : close - 1]
        outer_end = _balanced(text, m.start() + len("add_opt"))
        chain = text[close : outer_end - 1]
        args = _split_top(call)
        lists = [a for a in args if a.startswith("{")]
        flags = _cpp_strings(lists[0]) if lists else []
        negatives = _cpp_strings(lists[1]) if len(lists) > 1 and not args[1].startswith('"') else []
        lam = next((a for a in args if a.startswith("[")), "")
        sig = re.match(r"\[[^\]]*\]\s*\(([^)]*)\)", lam)
        params = [p.strip() for p in (sig.group(1).split(",") if sig else [])][1:]
        examples = set(re.findall(r"LLAMA_EXAMPLE_\w+", "".join(re.findall(r"\.set_examples\(\{([^}]*)\}", chain))))
        excludes = set(re.findall(r"LLAMA_EXAMPLE_\w+", "".join(re.findall(r"\.set_excludes\(\{([^}]*)\}", chain))))
        if (examples and example not in examples and "LLAMA_EXAMPLE_COMMON" not in examples) or example in excludes:
            continue
        if ".set_preset_only()" in chain:
            continue
        if not flags:
            continue
        hint_exprs = [a for a in args[1:] if not a.startswith(("{", "["))]
        help_text = " ".join(_cpp_strings(hint_exprs[-1])) if hint_exprs else ""
        hint = _cpp_strings(hint_exprs[0])[0] if len(hint_exprs) > 1 and _cpp_strings(hint_exprs[0]) else ""
        removed = "arg_removed(" in lam or help_text.startswith("the argument has been removed")
        env = re.search(r'\.set_env\("([^"]+)"\)', chain)
        dest = next((f for f in flags if f.startswith("--")), flags[0] if flags else "").lstrip("-").replace("-", "_")
        extra: dict[str, Any] = {"env": env.group(1) if env else None}
        if removed:
            extra["removed"] = help_text
        if not params:
            action, value_type = "store_true", "str"
        elif params[0].startswith("bool"):
            action, value_type = "boolean_optional", "str"
            extra["negative_option_strings"] = negatives
            flags = flags + negatives
        else:
            action = "store"
            value_type = "int" if params[0].startswith("int") else "str"
            if len(params) == 2:
                extra["nargs"] = 2
            choices = re.fullmatch(r"\[([\w|-]+)\]", hint)
            if choices:
                extra["choices"] = choices.group(1).split("|")
                if "is_truthy(" in lam:  # the handler also takes common_arg_utils' truthy/falsey/auto spellings
                    extra["accepted_values"] = sorted(
                        set(extra["choices"]) | {"on", "enabled", "true", "1", "off", "disabled", "false", "0", "-1"}
                    )
            if "kv_cache_type_from_str(" in lam and kv_types:
                extra["choices"] = kv_types
            if "common_speculative_types_from_names(" in lam and spec_types:
                extra["choices"] = spec_types
                extra["list_separator"] = ","
        options.append(_option(flags, dest, action, value_type, **extra))
    return options


def llama_cpp_spec(tree: SourceTree) -> dict[str, Any]:
    """`llama-server` options."""
    text = tree.read("common/arg.cpp")
    try:
        speculative = tree.read("common/speculative.cpp")
    except (OSError, subprocess.CalledProcessError):
        speculative = ""
    options = extract_common_args(text, "LLAMA_EXAMPLE_SERVER", speculative)
    return {
        "engine": "llama.cpp",
        "command": ["llama-server"],
        "parser": {
            "prog": "llama-server",
            "allow_abbrev": False,
            "built_with": "common_arg registrations in common/arg.cpp for LLAMA_EXAMPLE_SERVER",
        },
        "options": options,
        "registries": {
            "kv_cache_type": _ggml_type_names(text),
            "speculative_type": _spec_types(speculative),
        },
        "files": ["common/arg.cpp", "common/speculative.cpp"],
    }


# ---------------------------------------------------------------- Ollama


def ollama_spec(tree: SourceTree) -> dict[str, Any]:
    """OLLAMA_* variables `ollama serve` reads, with their kinds, and the KV cache types it supports."""
    config = tree.read("envconfig/config.go")
    kinds: dict[str, str] = {}
    for kind, name in re.findall(r"\b(BoolWithDefault|Bool|Uint64|Uint|String)\(\"(OLLAMA_\w+)\"", config):
        kinds.setdefault(name, {"BoolWithDefault": "bool", "Uint64": "uint"}.get(kind, kind.lower()))
    for name in re.findall(r"Var\(\"(OLLAMA_\w+)\"\)", config):
        kinds.setdefault(name, "string")
    for name in re.findall(r"\"(OLLAMA_\w+)\":\s*\{", config):
        kinds.setdefault(name, "string")
    try:
        ggml = tree.read("fs/ggml/ggml.go")
    except (OSError, subprocess.CalledProcessError):
        ggml = ""
    supports = re.search(r"func \(f GGML\) SupportsKVCacheType\(.*?\n\}", ggml, re.S)
    kv_types = sorted(set(_strings_in(supports.group(0))) - {""}) if supports else []
    env: list[dict[str, Any]] = [{"name": n, "kind": k} for n, k in sorted(kinds.items())]
    for item in env:
        if item["name"] == "OLLAMA_KV_CACHE_TYPE" and kv_types:
            item["values"] = kv_types
    return {
        "engine": "ollama",
        "command": ["ollama", "serve"],
        "parser": {"prog": "ollama serve", "built_with": "envconfig/config.go"},
        "options": [],
        "env": env,
        "registries": {"kv_cache_type": kv_types},
        "files": ["envconfig/config.go", "fs/ggml/ggml.go"],
    }


EXTRACTORS = {
    "tensorrt-llm": ("NVIDIA/TensorRT-LLM", tensorrt_llm_spec),
    "tgi": ("huggingface/text-generation-inference", tgi_spec),
    "llama.cpp": ("ggml-org/llama.cpp", llama_cpp_spec),
    "ollama": ("ollama/ollama", ollama_spec),
}


def spec_from_source(engine: str, path: Path) -> dict[str, Any]:
    """The spec of one source-checked engine, with where its source came from."""
    repository, extractor = EXTRACTORS[engine]
    tree = SourceTree(path)
    spec = extractor(tree)
    spec["source"] = tree.provenance(repository)
    source = spec["source"]
    if source.get("tag"):
        version = source["tag"]
    elif source.get("version"):
        version = source["version"]
    elif source.get("nearest_tag"):
        version = f"{source['nearest_tag']}+{source['commit'][:9]} (untagged commit after {source['nearest_tag']})"
    else:
        version = source.get("commit")
    spec["version"] = version
    return spec
