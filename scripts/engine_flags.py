"""Prove the advisor's launch commands against the engines' own argument parsers (not part of `make test`).

    python scripts/engine_flags.py install   # pinned vLLM, SGLang, LMDeploy in their own venvs; llama.cpp source
    python scripts/engine_flags.py specs     # dump their real parsers (and read the others' source) into
                                             #   tests/selector/engine_specs/<engine>.json
    python scripts/engine_flags.py check     # every distinct command shape the advisor prints -> each
                                             #   engine's own parser; report + docs/engine-flags.md

`check` imports the project, so run it with the project's interpreter (.venv/bin/python). The engine
venvs live under ~/.cache/llm-serving-engines/<engine>-<version>/ (LLM_ENGINES_CACHE overrides it).
"""

import argparse
import datetime as dt
import json
import os
import shlex
import shutil
import subprocess
import sys
import tarfile
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(Path(__file__).resolve().parent)]

from engine_flags import report, source  # noqa: E402 - after the path set-up above

CACHE = Path(os.environ.get("LLM_ENGINES_CACHE", Path.home() / ".cache" / "llm-serving-engines"))
SPEC_DIR = ROOT / "tests" / "selector" / "engine_specs"
DOC = ROOT / "docs" / "engine-flags.md"
INSIDE = Path(__file__).resolve().parent / "engine_flags" / "inside.py"

# latest stable releases on PyPI as of 2026-12; their wheels install on a CPU-only machine (CUDA torch and all)
PINNED = {"vllm": "0.33.0", "sglang": "0.5.23", "lmdeploy": "0.18.0"}
# llama.cpp's source as vendored by this llama-cpp-python sdist (PyPI); its CHANGELOG names the llama.cpp commit
LLAMA_CPP_PYTHON = "0.3.36"
VENV_PYTHON = "python3.12"  # SGLang's and LMDeploy's wheels are cp312
SOURCE_DEFAULTS = {
    "tgi": Path("/work/.mirror/huggingface+text-generation-inference/repo"),
    "ollama": Path("/work/.mirror/ollama+ollama/repo"),
    "llama.cpp": CACHE / "src" / "llama.cpp",
    "tensorrt-llm": CACHE / "src" / "tensorrt-llm",
}
ORDER = ["vllm", "sglang", "tensorrt-llm", "lmdeploy", "tgi", "llama.cpp", "ollama"]


def venv(engine: str) -> Path:
    """The engine's virtual environment."""
    return CACHE / f"{engine}-{PINNED[engine]}"


def _run(cmd: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    print("+", shlex.join(cmd), flush=True)
    return subprocess.run(cmd, check=True, text=True, **kwargs)


def _du(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())


# ---------------------------------------------------------------- install


def install_engine(engine: str, python: str) -> dict[str, Any]:
    """Create the engine's venv and pip-install the pinned release with all its dependencies."""
    env_dir = venv(engine)
    if not (env_dir / "bin" / "python").exists():
        _run([python, "-m", "venv", str(env_dir)])
        _run([str(env_dir / "bin" / "python"), "-m", "pip", "install", "--quiet", "--upgrade", "pip"])
    package = f"{engine}=={PINNED[engine]}"
    _run([str(env_dir / "bin" / "python"), "-m", "pip", "install", "--no-cache-dir", "--progress-bar", "off", package])
    freeze = _run([str(env_dir / "bin" / "python"), "-m", "pip", "freeze"], capture_output=True).stdout.split()
    record = {
        "engine": engine,
        "package": package,
        "venv": str(env_dir),
        "python": _run([str(env_dir / "bin" / "python"), "-V"], capture_output=True).stdout.strip(),
        "how": f"python -m venv; pip install --no-cache-dir {package} (full dependency set from PyPI, "
        "CUDA torch wheels included; nothing needs a GPU to install)",
        "installed_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "packages": len(freeze),
        "torch": next((p for p in freeze if p.lower().startswith("torch==")), None),
        "bytes": _du(env_dir),
    }
    (env_dir / "install.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return record


def install_llama_cpp_source(python: str) -> dict[str, Any]:
    """llama.cpp's common/ sources from the llama-cpp-python sdist on PyPI, with the commit its CHANGELOG names."""
    download = CACHE / "downloads"
    download.mkdir(parents=True, exist_ok=True)
    name = f"llama_cpp_python-{LLAMA_CPP_PYTHON}"
    sdist = download / f"{name}.tar.gz"
    if not sdist.exists():
        pip = [python, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "-d", str(download)]
        _run([*pip, f"llama-cpp-python=={LLAMA_CPP_PYTHON}"])
    target = SOURCE_DEFAULTS["llama.cpp"]
    changelog = ""
    with tarfile.open(sdist) as tar:
        for member in tar.getmembers():
            inner = member.name.removeprefix(f"{name}/")
            if inner == "CHANGELOG.md":
                handle = tar.extractfile(member)
                changelog = handle.read().decode() if handle else ""
            prefix = "vendor/llama.cpp/"
            if member.isfile() and inner.startswith(prefix + "common/"):
                out = target / inner.removeprefix(prefix)
                out.parent.mkdir(parents=True, exist_ok=True)
                handle = tar.extractfile(member)
                out.write_bytes(handle.read() if handle else b"")
    section = changelog.split(f"## [{LLAMA_CPP_PYTHON}]", 1)[-1].split("\n## ", 1)[0]
    commit = section.split("ggml-org/llama.cpp@", 1)[1].split()[0] if "llama.cpp@" in section else None
    meta = {
        "repository": "ggml-org/llama.cpp",
        "commit": commit,
        "date": None,
        "tag": None,
        "version": f"llama.cpp@{commit} (vendored by llama-cpp-python {LLAMA_CPP_PYTHON}, PyPI)",
        "how": f"pip download --no-binary :all: llama-cpp-python=={LLAMA_CPP_PYTHON}; vendor/llama.cpp/common/ "
        "extracted (the llama.cpp repository is over the 500 MB snapshot limit here)",
    }
    (target / "SOURCE.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    return meta


def find_python(name: str) -> str:
    """An interpreter that runs: NAME on PATH, else a pyenv or Debian python of that version."""
    version = name.removeprefix("python")
    candidates = [shutil.which(name), *sorted(map(str, Path.home().glob(f".pyenv/versions/{version}*/bin/{name}")))]
    candidates.append(f"/usr/bin/{name}")
    for candidate in filter(None, candidates):
        if subprocess.run([candidate, "-V"], capture_output=True, check=False).returncode == 0:
            return candidate
    raise SystemExit(f"no working {name}: pass --python")


def cmd_install(args: argparse.Namespace) -> int:
    """Install the pinned engines and the llama.cpp source."""
    python = find_python(args.python)
    for engine in args.engines:
        record = install_engine(engine, python)
        print(f"{engine}: {record['package']} in {record['venv']} ({record['bytes'] / 1e9:.1f} GB, {record['torch']})")
    if not args.skip_sources:
        print("llama.cpp:", install_llama_cpp_source(sys.executable)["version"])
    print(f"disk used under {CACHE}: {_du(CACHE) / 1e9:.1f} GB")
    return 0


# ---------------------------------------------------------------- specs


def inside(engine: str, verb: str, payload: Any = None) -> Any:
    """Run scripts/engine_flags/inside.py in the engine's venv."""
    python = venv(engine) / "bin" / "python"
    if not python.exists():
        raise SystemExit(f"{engine} is not installed: run `python scripts/engine_flags.py install` first")
    proc = subprocess.run(
        [str(python), str(INSIDE), verb, engine],
        input=None if payload is None else json.dumps(payload),
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"{engine} {verb} failed:\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout)


def _stamp(spec: dict[str, Any], how: str) -> dict[str, Any]:
    head = {
        "engine": spec["engine"],
        "version": spec["version"],
        "generated_by": f"scripts/engine_flags.py specs ({how})",
        "generated_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }
    return {**head, **{k: v for k, v in spec.items() if k not in head}}


def installed_spec(engine: str) -> dict[str, Any]:
    """The spec dumped from the engine's real parser in its venv."""
    spec = inside(engine, "dump")
    record_file = venv(engine) / "install.json"
    record = json.loads(record_file.read_text()) if record_file.exists() else {}
    spec["source"] = {
        "kind": "pypi",
        "package": f"{engine}=={spec['version']}",
        "install": record.get("how"),
        "torch": record.get("torch"),
    }
    return _stamp(spec, f"dumped from the real parser in a venv with {engine}=={spec['version']}")


def cmd_specs(args: argparse.Namespace) -> int:
    """Write tests/selector/engine_specs/<engine>.json."""
    paths = dict(SOURCE_DEFAULTS)
    for item in args.from_source:
        engine, _, path = item.partition("=")
        paths[engine] = Path(path).expanduser()
    SPEC_DIR.mkdir(parents=True, exist_ok=True)
    for engine in args.engines:
        if engine in PINNED:
            spec = installed_spec(engine)
        else:
            spec = _stamp(source.spec_from_source(engine, paths[engine]), "read from source")
        out = SPEC_DIR / f"{engine}.json"
        out.write_text(json.dumps(spec, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"{engine}: {spec['version']} -> {out.relative_to(ROOT)} ({len(spec['options'])} options)")
    return 0


# ---------------------------------------------------------------- check


def _load_specs() -> dict[str, dict[str, Any]]:
    return {e: json.loads((SPEC_DIR / f"{e}.json").read_text()) for e in ORDER if (SPEC_DIR / f"{e}.json").exists()}


# launcher words allowed before an engine's command (checked by name only)
WRAPPERS = {"tensorrt-llm": ({"mpirun", "srun"}, "trtllm-llmapi-launch")}


def split_command(engine: str, argv: list[str], prefix: list[str]) -> tuple[list[str], list[str]] | str:
    """(wrapper words, arguments after the engine's command words), or why the command is not the engine's."""
    starts = [i for i in range(len(argv)) if argv[i : i + len(prefix)] == prefix]
    if not starts:
        return f"the engine's command words {prefix} are not in the command"
    i = starts[0]
    wrapper = argv[:i]
    if wrapper:
        firsts, last = WRAPPERS.get(engine, (set(), ""))
        if wrapper[0] not in firsts or wrapper[-1] != last:
            return f"unknown launcher words before {prefix}: {wrapper}"
    return wrapper, argv[i + len(prefix) :]


def _check_source_shape(engine: str, shape: Any, prefix: list[str]) -> str | None:
    """Parse one shape with the parser built from a source-read spec; the error, or None."""
    from tests.selector import flag_specs

    try:
        if engine == "ollama":
            flag_specs.check_ollama_env(shape.env)
            return None if shape.argv == prefix else f"command {shape.argv} is not {prefix}"
        split = split_command(engine, shape.argv, prefix)
        if isinstance(split, str):
            return split
        flag_specs.SPECS[engine][1]().parse_args(split[1])
        if engine == "tensorrt-llm":
            for name, content in shape.files.items():
                if name.endswith((".yml", ".yaml")):
                    flag_specs.check_trtllm_yaml(content)
    except flag_specs.Refused as exc:
        return str(exc)
    return None


def _check_engine(engine: str, group: list[Any], spec: dict[str, Any]) -> tuple[dict[int, str], dict[int, str]]:
    """Errors by shape index, and the shapes that were not checked (with why)."""
    prefix = spec["command"]
    errors: dict[int, str] = {}
    unchecked: dict[int, str] = {}
    items: list[dict[str, Any]] = []
    for i, shape in enumerate(group):
        if shape.kind == "prepare":
            if engine == "lmdeploy" and shape.argv[:2] == ["lmdeploy", "lite"]:
                items.append({"id": i, "argv": shape.argv[1:], "prefix": []})
            else:
                unchecked[i] = "a preparation step outside the engine's serve command"
            continue
        if engine not in PINNED:
            if err := _check_source_shape(engine, shape, prefix):
                errors[i] = err
            continue
        split = split_command(engine, shape.argv, prefix)
        if isinstance(split, str):
            errors[i] = split
        else:
            items.append({"id": i, "argv": split[1]})
    if items:
        for result in inside(engine, "parse", items):
            if not result["ok"]:
                parts = [result["error"], *result["problems"]]
                if result["abbreviations"]:
                    parts.append(f"abbreviations of registered flags: {result['abbreviations']}")
                errors[result["id"]] = "; ".join(p for p in parts if p)
    return errors, unchecked


def _row(engine: str, shape: Any, error: str) -> dict[str, Any]:
    env = " ".join(f"{k}={v}" for k, v in shape.env.items())
    return {
        "engine": engine,
        "count": shape.count,
        "argv": (env + " " if env else "") + shlex.join(shape.argv),
        "error": error,
        "example": json.dumps(shape.example, sort_keys=True),
    }


def cmd_check(args: argparse.Namespace) -> int:
    """Every distinct command shape -> the engine's own parser; print and write the report."""
    from engine_flags import shapes as shapes_mod

    specs = _load_specs()
    shapes, skipped, n_requests = shapes_mod.collect(args.processes, args.limit)
    by_engine: dict[str, list[Any]] = defaultdict(list)
    for shape in shapes.values():
        by_engine[shape.engine].append(shape)
    failures: list[dict[str, Any]] = []
    not_checked: list[dict[str, Any]] = []
    for engine in sorted(by_engine, key=lambda e: ORDER.index(e) if e in ORDER else 99):
        group = by_engine[engine]
        errors, unchecked = _check_engine(engine, group, specs[engine])
        failures += [_row(engine, group[i], err) for i, err in sorted(errors.items())]
        not_checked += [_row(engine, group[i], why) for i, why in sorted(unchecked.items())]
        print(f"{engine}: {len(group)} shapes, {len(errors)} failing, {len(unchecked)} not checked", flush=True)
    per_engine = dict(Counter(s.engine for s in shapes.values()))
    summary = {
        "requests": n_requests,
        "skipped_text": ", ".join(f"{n} {why}" for why, n in skipped.most_common()) or "none skipped",
        "commands": sum(s.count for s in shapes.values()),
        "shapes": len(shapes),
        "per_engine": ", ".join(f"{e} {n}" for e, n in sorted(per_engine.items())),
        "not_checked": not_checked,
    }
    rerun = [
        "python3 scripts/engine_flags.py install     # ~29 GB under ~/.cache/llm-serving-engines",
        "python3 scripts/engine_flags.py specs       # --from-source ENGINE=PATH: tgi, ollama, llama.cpp, tensorrt-llm",
        ".venv/bin/python scripts/engine_flags.py check",
    ]
    for f in failures:
        print(f"FAIL {f['engine']} ({f['count']}x): {f['argv']}\n     -> {f['error']}")
    for f in not_checked:
        print(f"NOT CHECKED {f['engine']} ({f['count']}x): {f['argv']}")
    print(json.dumps({k: v for k, v in summary.items() if k != "not_checked"}, indent=1))
    if args.report:
        DOC.write_text(report.markdown(specs, summary, failures, rerun), encoding="utf-8")
        print(f"wrote {DOC.relative_to(ROOT)}")
    return 1 if failures else 0


def main(argv: list[str] | None = None) -> int:
    """Command line."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="verb", required=True)
    p = sub.add_parser("install", help="install the pinned engines in their own venvs, and llama.cpp's source")
    p.add_argument("--engines", nargs="+", default=list(PINNED), choices=list(PINNED))
    p.add_argument("--python", default=VENV_PYTHON, help="interpreter for the venvs (default: python3.12)")
    p.add_argument("--skip-sources", action="store_true", help="do not download llama.cpp's source")
    p.set_defaults(run=cmd_install)
    p = sub.add_parser("specs", help="write tests/selector/engine_specs/<engine>.json")
    p.add_argument("--engines", nargs="+", default=ORDER, choices=ORDER)
    p.add_argument(
        "--from-source",
        action="append",
        default=[],
        metavar="ENGINE=PATH",
        help="a bare git mirror or directory of an engine's source (tgi, ollama, llama.cpp, tensorrt-llm)",
    )
    p.set_defaults(run=cmd_specs)
    p = sub.add_parser("check", help="feed every command shape the advisor prints to the engines' parsers")
    p.add_argument("--processes", type=int, default=2)
    p.add_argument("--limit", type=int, default=None, help="only the first N requests of the grid")
    p.add_argument("--no-report", dest="report", action="store_false", help="do not write docs/engine-flags.md")
    p.set_defaults(run=cmd_check)
    args = parser.parse_args(argv)
    return int(args.run(args))


if __name__ == "__main__":
    raise SystemExit(main())
