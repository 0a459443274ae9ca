"""Honest name matching: forgiving where the query is close, never where it is not ('y' is not NF4)."""

import pytest

from catalog import GpuLookupError, find_engine, find_gpu, find_model, find_quant
from catalog.errors import NameLookupError
from catalog.matching import match_names, nearest, normalize, similarity

KEYS = {
    "nf4": ("nf4", "QLoRA NF4 (bitsandbytes)", "qlora"),
    "awq": ("awq", "AWQ 4-bit (W4A16)"),
    "gptq": ("gptq", "GPTQ 4-bit (W4A16)"),
    "int8": ("w8a8-int8", "SmoothQuant W8A8 (INT8)", "smoothquant", "int8"),
    "l4": ("l4-24gb", "L4 24GB", "L4"),
    "l40s": ("l40s-48gb", "L40S 48GB", "L40S"),
    "ollama": ("ollama", "Ollama"),
    "llama.cpp": ("llama.cpp", "llama.cpp (llama-server)", "llama-server"),
}


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("nf4", "nf4"),  # exact id
        ("QLoRA", "nf4"),  # exact alias, any case
        ("bitsandbytes", "nf4"),  # a long piece of the name
        ("smooth quant", "int8"),  # separators do not matter
        ("gpt", "gptq"),  # a prefix of three characters that is most of the name
        ("L4", "l4"),  # two characters, but an exact alias
        ("l40", "l40s"),
        ("llama server", "llama.cpp"),
    ],
)
def test_a_close_query_names_its_entry(query: str, expected: str) -> None:
    assert match_names(query, KEYS) == (expected, [])


@pytest.mark.parametrize("query", ["y", "x", "q", "nf", "aw", "ll", "b", "4", "%00", "\x00", "", "  "])
def test_one_or_two_letters_never_match_a_long_name(query: str) -> None:
    found, _ = match_names(query, KEYS)
    assert found is None
    assert nearest(query, KEYS) is None


@pytest.mark.parametrize(
    ("query", "why"),
    [
        ("lla", "a three-letter piece from inside 'ollama' is not 'ollama'"),
        ("bytes", "a short piece of a long name"),
        ("bit", "three letters from inside 'QLoRA NF4 (bitsandbytes)'"),
        ("q4", "two characters"),
    ],
)
def test_a_short_piece_of_a_name_is_not_a_match(query: str, why: str) -> None:
    assert match_names(query, KEYS)[0] is None, why


def test_several_genuine_matches_are_suggestions_best_first_not_a_pick() -> None:
    keys = {"a100": ("A100", "a100-80gb"), "a10g": ("A10G", "a10g-24gb"), "h100": ("H100",)}
    found, candidates = match_names("a10", keys)
    assert found is None and set(candidates) == {"a100", "a10g"}


def test_a_typo_gets_suggestions_and_a_clear_nearest_but_never_a_match() -> None:
    found, candidates = match_names("awg", KEYS)
    assert found is None and candidates[0] == "awq"
    assert nearest("exlama", {"exllamav2": ("exllamav2", "exllama"), "ollama": ("ollama",)}) == "exllamav2"
    # Two entries equally close: no nearest, whatever the order of the catalog.
    assert nearest("qwen2.5", {"7b": ("qwen2.5-7b",), "3b": ("qwen2.5-3b",)}) is None


def test_normalize_and_similarity() -> None:
    assert normalize("NVIDIA A800 40GB") == "a80040gb"
    assert normalize("Qwen/Qwen2.5-7B-Instruct") == "qwenqwen257binstruct"
    assert similarity("H1000", "H100") > 0.8 > similarity("y", "QLoRA NF4 (bitsandbytes)")
    assert similarity("", "anything") == 0.0


@pytest.mark.parametrize(
    ("lookup", "query", "expected"),
    [
        (find_gpu, "A800", "a800-40gb-sxm"),
        (find_gpu, "a800-40gb", "a800-40gb-sxm"),
        (find_gpu, "h100", "h100-80gb-sxm"),
        (find_gpu, "NVIDIA RTX 4090", "rtx-4090-24gb"),
        (find_gpu, "M2 Ultra", "apple-m2-ultra"),
        (find_model, "qwen2.5-7b", "qwen2.5-7b"),
        (find_model, "Qwen/Qwen2.5-7B-Instruct", "qwen2.5-7b"),
        (find_model, "Meta-Llama-3.1-8B-Instruct", "llama3.1-8b"),
        (find_quant, "AWQ", "awq"),
        (find_quant, "q4_k_m", "gguf-q4_k_m"),
        (find_quant, "smoothquant", "w8a8-int8"),
        (find_quant, "bitsandbytes", "nf4"),
        (find_engine, "trtllm", "tensorrt-llm"),
        (find_engine, "llama-server", "llama.cpp"),
        (find_engine, "TensorRT-LLM", "tensorrt-llm"),
    ],
)
def test_the_catalogs_forgiving_lookups_still_work(lookup: object, query: str, expected: str) -> None:
    assert lookup(query).id == expected  # type: ignore[operator]


@pytest.mark.parametrize(
    ("lookup", "query"),
    [(find_quant, "y"), (find_engine, "x"), (find_gpu, "nope"), (find_model, "\x00"), (find_engine, "lla")],
)
def test_the_catalogs_refuse_a_query_that_is_not_close(lookup: object, query: str) -> None:
    with pytest.raises((NameLookupError, GpuLookupError)):
        lookup(query)  # type: ignore[operator]
