"""Workloads: the handbook's eight fixed prompts, synthetic prompts, a shared prefix, code/JSON, a JSONL file."""

import json
import random
from dataclasses import dataclass
from pathlib import Path

from probes.config import RunSettings, WorkloadKind
from probes.errors import WorkloadError

MAX_FILE_PROMPTS = 100_000

# Eight fixed, different prompts in the spirit of the handbook's benchmark (section 2.1): varied tasks and lengths.
SEED_PROMPTS = (
    "Explain in plain words how a transformer language model turns a prompt into its next token.",
    "Write a Python function that returns the n-th Fibonacci number iteratively, with a short docstring.",
    "把下面这句话翻译成英文，并解释其中的成语：他做事总是画蛇添足，反而把事情弄得更糟。",
    "Summarise the trade-offs between renting cloud GPUs by the hour and buying servers for a small AI team.",
    "A train leaves at 09:40 and travels 210 km at 84 km/h. When does it arrive? Show the steps.",
    "List ten practical tips for keeping a production database fast, one line each.",
    "Write a short story of about one hundred words about a lighthouse keeper who finds a message in a bottle.",
    'Return a JSON object describing a fictional book with keys "title", "author", "year" and "genres".',
)

CODE_JSON_PROMPTS = (
    "Add type hints to this Python function and return only the code:\n\n"
    "def merge(a, b):\n    out = dict(a)\n    for k, v in b.items():\n        if k in out and isinstance(out[k], dict)"
    " and isinstance(v, dict):\n            out[k] = merge(out[k], v)\n        else:\n            out[k] = v\n"
    "    return out\n",
    "Convert this CSV to a JSON array of objects, nothing else:\n\nname,gpu,price_per_hour\nalpha,A800,15\n"
    "beta,H100,28\ngamma,L40S,9\ndelta,A100,12\n",
    "Rename the variable `tmp` to `total` everywhere in this JavaScript and return the code:\n\n"
    "function sum(xs) {\n  let tmp = 0;\n  for (const x of xs) {\n    tmp += x;\n  }\n  return tmp;\n}\n",
    'Reformat this JSON with two-space indentation and sorted keys:\n\n{"z": 1, "a": {"y": [1, 2, 3], "b": null},'
    ' "m": "text", "c": true}',
    "Write a SQL query that returns the ten most expensive GPUs from a table gpus(name text, price_per_hour"
    " numeric), then the same query with an OFFSET of 10.",
    "Translate this Python loop into a list comprehension and return only the code:\n\nresult = []\n"
    "for item in items:\n    if item.enabled:\n        result.append(item.name.upper())\n",
    "Fill in this JSON schema for a user record with fields id (integer), email (string, format email),"
    ' created_at (string, date-time):\n\n{"type": "object", "properties": {}, "required": []}',
    "Add a docstring and a unit test (pytest) for this function:\n\ndef clamp(x, lo, hi):\n"
    "    return max(lo, min(x, hi))\n",
)

SHARED_PREFIX_QUESTIONS = (
    "What does the policy say about refunds?",
    "Summarise section 3 in two sentences.",
    "Which rule applies to weekend shifts?",
    "List every deadline mentioned.",
    "Who approves exceptions?",
    "What happens when a rule is broken twice?",
    "Give one example of an allowed request.",
    "Which terms are defined in the glossary?",
)

# Short, common English words: close to one token each in most tokenizers.
VOCABULARY = (
    "the",
    "of",
    "and",
    "to",
    "in",
    "is",
    "was",
    "for",
    "on",
    "that",
    "with",
    "as",
    "by",
    "at",
    "from",
    "his",
    "her",
    "an",
    "be",
    "this",
    "are",
    "or",
    "had",
    "not",
    "but",
    "which",
    "have",
    "one",
    "you",
    "were",
    "all",
    "we",
    "when",
    "there",
    "can",
    "more",
    "if",
    "no",
    "out",
    "so",
    "said",
    "what",
    "up",
    "its",
    "about",
    "into",
    "than",
    "them",
    "only",
    "other",
    "new",
    "some",
    "could",
    "time",
    "these",
    "two",
    "may",
    "then",
    "do",
    "first",
    "any",
    "my",
    "now",
    "such",
    "like",
    "our",
    "over",
    "man",
    "me",
    "even",
    "most",
    "made",
    "after",
    "also",
    "did",
    "many",
    "before",
    "must",
    "through",
    "back",
    "years",
    "where",
    "much",
    "your",
    "way",
    "well",
    "down",
    "should",
    "because",
    "each",
    "just",
    "those",
    "people",
)


@dataclass(frozen=True)
class Prompt:
    """One prompt: an optional system message and the user's text."""

    user: str
    system: str | None = None

    def messages(self) -> list[dict[str, str]]:
        """Chat messages."""
        msgs = [{"role": "system", "content": self.system}] if self.system else []
        return [*msgs, {"role": "user", "content": self.user}]

    def text(self) -> str:
        """One completion prompt."""
        return f"{self.system}\n\n{self.user}" if self.system else self.user


def _words(rng: random.Random, count: int) -> str:
    return " ".join(rng.choice(VOCABULARY) for _ in range(count))


def synthetic_prompts(input_tokens: int, count: int, seed: int) -> list[Prompt]:
    """Distinct prompts of about input_tokens tokens (one common word each), unique from their first word."""
    rng = random.Random(seed)
    head = "Continue this text:"
    body = max(1, input_tokens - len(head.split()) - 1)
    return [Prompt(f"{i:06d} {head} {_words(rng, body)}") for i in range(count)]


def shared_prefix_prompts(prefix_tokens: int, count: int, seed: int) -> list[Prompt]:
    """One long shared system prompt, varied questions: the prefix cache should cut TTFT after the first."""
    rng = random.Random(seed)
    system = "You answer questions about this policy document.\n\n" + _words(rng, prefix_tokens)
    return [Prompt(f"{SHARED_PREFIX_QUESTIONS[i % len(SHARED_PREFIX_QUESTIONS)]} (#{i})", system) for i in range(count)]


def file_prompts(path: str) -> list[Prompt]:
    """Prompts from a JSONL file: {"prompt": ...} or {"system": ..., "prompt": ...} or {"messages": [...]}."""
    file = Path(path)
    try:
        lines = file.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise WorkloadError(f"cannot read the prompt file {file}: {exc}") from exc
    prompts: list[Prompt] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as exc:
            raise WorkloadError(f"{file.name} line {number}: not JSON ({exc})") from exc
        prompts.append(_row_prompt(row, file.name, number))
        if len(prompts) >= MAX_FILE_PROMPTS:
            break
    if not prompts:
        raise WorkloadError(f"{file.name} has no prompts (one JSON object per line, with a 'prompt' key)")
    return prompts


def _row_prompt(row: object, name: str, number: int) -> Prompt:
    if isinstance(row, str) and row.strip():
        return Prompt(row)
    if isinstance(row, dict):
        if isinstance(row.get("prompt"), str) and row["prompt"].strip():
            system = row.get("system")
            return Prompt(row["prompt"], system if isinstance(system, str) and system else None)
        messages = row.get("messages")
        if isinstance(messages, list) and messages:
            system = next(
                (m.get("content") for m in messages if isinstance(m, dict) and m.get("role") == "system"), None
            )
            users = [m.get("content") for m in messages if isinstance(m, dict) and m.get("role") != "system"]
            texts = [u for u in users if isinstance(u, str)]
            if texts and len(texts) == len(users):
                return Prompt("\n\n".join(texts), system if isinstance(system, str) else None)
    raise WorkloadError(f'{name} line {number}: expected {{"prompt": "..."}} or {{"messages": [...]}}')


def build_prompts(settings: RunSettings, count: int) -> list[Prompt]:
    """The prompt pool of a run; request i uses pool[i % len(pool)]."""
    count = max(1, count)
    kind = settings.workload
    if kind in (WorkloadKind.SEED, WorkloadKind.TRACE, WorkloadKind.SESSIONS):  # their warm-up: the seed prompts
        return [Prompt(p) for p in SEED_PROMPTS]
    if kind == WorkloadKind.CODE_JSON:
        return [Prompt(p) for p in CODE_JSON_PROMPTS]
    if kind == WorkloadKind.SYNTHETIC:
        return synthetic_prompts(settings.input_tokens, min(count, 4096), settings.seed)
    if kind == WorkloadKind.SHARED_PREFIX:
        return shared_prefix_prompts(settings.shared_prefix_tokens, min(count, 4096), settings.seed)
    if kind == WorkloadKind.FILE:
        if not settings.prompt_file:
            raise WorkloadError("the file workload needs a prompt file (JSONL)")
        return file_prompts(settings.prompt_file)
    raise WorkloadError(f"unknown workload {kind}")
