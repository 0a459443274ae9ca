"""Every rule id the advisor can emit is in rules.toml with a reason and a source, and no rule there is orphaned.

The ids are collected two ways: by running the advisor over a grid of inputs (every GPU x workload x priority x
deploy x ecosystem, a few models, sizes and loads, every pinned engine x quantization on one GPU of each kind, and
two GPUs older than the catalog's) and the architecture gates over every format x GPU; and by reading every string
literal in the selector's source that looks like a rule id.
"""

import ast
import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import selector.context
from catalog import Gpu, find_gpu, load_engines, load_gpus, load_quant_methods
from selector import Advice, AdviceRequest, advise, gate, load_rules
from selector.inputs import Deploy, Ecosystem, Priority, Workload, YesNo
from tests.support import ROOT

SOURCES = [*sorted((ROOT / "selector").rglob("*.py")), ROOT / "views" / "selector.py"]
RULE_ID = re.compile(r"[a-z0-9]+\.[a-z0-9_]+")
PLACEHOLDER = re.compile(r"\{[^{}]*\}")
BOOK = load_rules()
DEFINED = {item.id: item for item in BOOK.all_explained()}
PREFIXES = {rule_id.split(".")[0] for rule_id in DEFINED}


def _older_gpus() -> list[Gpu]:
    """A Turing and a Volta card: no Marlin, no FP8; the fallback rows and gates only they reach."""
    a100 = find_gpu("A100")
    common = {"native_fp8": False, "native_fp4": False, "marlin_kernels": False}
    t4 = {"id": "t4-16gb", "name": "T4", "arch": "Turing", "compute_capability": "7.5", "memory_gb": 16.0}
    v100 = {"id": "v100-32gb", "name": "V100", "arch": "Volta", "compute_capability": "7.0", "memory_gb": 32.0}
    return [a100.model_copy(update={**common, **t4}), a100.model_copy(update={**common, **v100})]


def _one_gpu_per_kind() -> list[str]:
    """One catalog GPU for each combination of the facts the rules and gates read."""
    kinds: dict[tuple[object, ...], str] = {}
    for gpu in load_gpus():
        key = (gpu.vendor, gpu.kind, gpu.compute_capability, gpu.native_fp8, gpu.native_fp4, gpu.marlin_kernels)
        kinds.setdefault(key, gpu.id)
    return list(kinds.values())


def _grid() -> Iterator[dict[str, object]]:
    gpus = [gpu.id for gpu in load_gpus()]
    shapes = itertools.product(gpus, Workload, Priority, Deploy, Ecosystem)
    for i, (gpu, workload, priority, deploy, ecosystem) in enumerate(shapes):
        build = YesNo.YES if i % 2 else YesNo.NO  # alternating: both answers meet every GPU, workload and priority
        yield {
            "gpu": gpu,
            "workload": workload,
            "priority": priority,
            "deploy": deploy,
            "ecosystem": ecosystem,
            "build_engines": build,
        }
    models = [
        "qwen2.5-0.5b",
        "qwen2.5-72b",
        "llama3.1-70b",
        "llama3.1-405b",
        "qwen3-30b-a3b",
        "deepseek-v3",
        "gpt-oss-120b",
    ]
    loads = [(1, 1, 4096), (2, 64, 8192), (8, 512, 32768)]  # (GPUs, concurrency, context)
    for gpu, model, (count, concurrency, context), priority in itertools.product(
        gpus, models, loads, [Priority.LATENCY, Priority.THROUGHPUT]
    ):
        yield {
            "gpu": gpu,
            "model": model,
            "gpus": count,
            "concurrency": concurrency,
            "context": context,
            "priority": priority,
            "workload": Workload.CODE,
        }
    engines = ["auto", *(e.id for e in load_engines() if e.launchable)]
    quants = ["auto", *(q.id for q in load_quant_methods())]
    for gpu, engine, quant in itertools.product(_one_gpu_per_kind(), engines, quants):
        yield {"gpu": gpu, "engine": engine, "quant": quant, "workload": Workload.CODE}
    for gpu, qlora in itertools.product(gpus, YesNo):
        yield {"gpu": gpu, "qlora": qlora, "workload": Workload.AGENT}


@dataclass
class Emitted:
    """What the grid showed: rule ids with where they came from, and every sentence a user reads."""

    ids: dict[str, str] = field(default_factory=dict)
    sentences: list[tuple[str, str]] = field(default_factory=list)  # (rule id, reason or source)
    notes: list[str] = field(default_factory=list)  # next steps and warnings

    def add(self, rule_id: str, where: str, reason: str, source: str) -> None:
        self.ids.setdefault(rule_id, where)
        self.sentences += [(rule_id, reason), (rule_id, source)]

    def add_advice(self, inputs: dict[str, object], advice: Advice) -> None:
        for d in advice.reasons:
            self.add(d.rule_id, f"{inputs} -> {d.topic}", d.reason, d.source)
        spec = advice.speculative
        self.add(spec.rule_id, f"{inputs} -> speculative", spec.reason, spec.source)
        self.notes += [spec.next_step, *spec.warnings, *advice.warnings]


@pytest.fixture(scope="module")
def emitted() -> Emitted:
    out = Emitted()
    for inputs in _grid():
        out.add_advice(inputs, advise(AdviceRequest.model_validate(inputs)))
    for older in _older_gpus():
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(selector.context, "find_gpu", lambda _name, gpu=older: gpu)
            for workload, priority, quant in itertools.product(Workload, Priority, ["auto", "awq", "fp8"]):
                inputs = {"workload": workload, "priority": priority, "quant": quant}
                out.add_advice({**inputs, "gpu": older.name}, advise(AdviceRequest.model_validate(inputs)))
    for gpu, method in itertools.product([*load_gpus(), *_older_gpus()], load_quant_methods()):
        checked = gate(method.id, gpu)
        out.add(checked.rule_id, f"gate({method.id}, {gpu.name})", checked.reason, checked.source)
    return out


def _string_literals(path: Path) -> Iterator[tuple[str, int]]:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.value, node.lineno


def _literal_rule_ids() -> dict[str, str]:
    """String literals in the selector's code that name a rule (a known prefix, a dot, a name)."""
    found: dict[str, str] = {}
    for path in SOURCES:
        for text, line in _string_literals(path):
            if RULE_ID.fullmatch(text) and text.split(".")[0] in PREFIXES:
                found.setdefault(text, f"{path.relative_to(ROOT)}:{line}")
    return found


def _has_words(template: str) -> bool:
    """Whether a reason or source says something itself, beyond the values filled into it."""
    return bool(PLACEHOLDER.sub("", template).strip(" ;:,.()"))


def test_every_rule_and_statement_has_a_unique_well_formed_id_a_reason_and_a_source() -> None:
    ids = [item.id for item in BOOK.all_explained()]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)
    for item in BOOK.all_explained():
        assert RULE_ID.fullmatch(item.id), item.id
        assert _has_words(item.reason), f"{item.id}: the reason is empty or only placeholders"
        assert _has_words(item.source), f"{item.id}: the source is empty or only placeholders"


def test_every_rule_id_the_advisor_emits_is_defined(emitted: Emitted) -> None:
    assert len(emitted.ids) > 40  # the grid reached the rules, not just the defaults
    missing = {rule_id: where for rule_id, where in emitted.ids.items() if rule_id not in DEFINED}
    assert not missing, f"rule ids emitted but not in rules.toml: {missing}"


def test_every_rule_id_named_in_the_code_is_defined() -> None:
    literals = _literal_rule_ids()
    assert literals  # the scan finds the ids the code names (spec.rag, spec.chat, ...)
    missing = {rule_id: where for rule_id, where in literals.items() if rule_id not in DEFINED}
    assert not missing, f"rule ids in the code but not in rules.toml: {missing}"


def test_no_rule_in_rules_toml_is_orphaned(emitted: Emitted) -> None:
    referenced = set(emitted.ids) | set(_literal_rule_ids())
    orphans = sorted(set(DEFINED) - referenced)
    assert not orphans, f"rules.toml defines rules the advisor never emits nor names: {orphans}"


def test_every_reason_and_source_shown_says_something_with_its_placeholders_filled(emitted: Emitted) -> None:
    empty = sorted({rule_id for rule_id, text in emitted.sentences if not text.strip()})
    assert not empty, f"empty reasons or sources shown for {empty}"
    unfilled = sorted({(rule_id, text) for rule_id, text in emitted.sentences if "{" in text or "}" in text})
    assert not unfilled, unfilled[:5]
    unfilled_notes = sorted({text for text in emitted.notes if "{" in text or "}" in text})
    assert not unfilled_notes, unfilled_notes[:5]
