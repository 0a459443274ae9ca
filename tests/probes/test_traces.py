"""Trace replay groundwork: the three parsers, slicing, built-in traces, streaming memory, shared-prefix prompts."""

import json
import math
import statistics
import tracemalloc
from pathlib import Path

import pytest

from probes.errors import ProbeError, WorkloadError
from probes.trace_prompts import CALIBRATION_WORDS, Calibration, TracePromptBuilder
from probes.traces import (
    BLOCK_TOKENS,
    BUILTIN_TRACES,
    TraceError,
    TraceFormat,
    TraceRequest,
    check_trace,
    read_trace,
    resolve_trace,
    sniff_format,
)


def write(tmp_path: Path, text: str, name: str = "trace.txt", encoding: str = "utf-8") -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode(encoding))
    return path


# ---- good files ----------------------------------------------------------------------------------------------------

MOONCAKE = (
    '{"timestamp": 1000, "input_length": 600, "output_length": 20, "hash_ids": [0, 1]}\n'
    "\n"
    '{"timestamp": 1250, "input_length": 700.0, "output_length": 5, "hash_ids": [0, 2]}\n'
    '{"timestamp": 1250, "input_length": 30, "output_length": 1}\n'
    '{"timestamp": 4000.5, "input_length": 2000, "output_length": 300, "hash_ids": [], "extra": "kept out"}\n'
)


def test_mooncake_lines_become_requests_with_their_line_numbers_and_hash_ids(tmp_path: Path) -> None:
    path = write(tmp_path, MOONCAKE)
    got = list(read_trace(path, "mooncake"))
    assert [r.line for r in got] == [1, 3, 4, 5]  # the blank line 2 is skipped but counted
    assert [r.arrival_s for r in got] == pytest.approx([0.0, 0.25, 0.25, 3.0005])
    assert [(r.input_tokens, r.output_tokens) for r in got] == [(600, 20), (700, 5), (30, 1), (2000, 300)]
    assert [r.hash_ids for r in got] == [(0, 1), (0, 2), (), ()]
    summary = check_trace(path, TraceFormat.MOONCAKE)
    assert summary.requests == summary.requests_in_file == 4
    assert summary.trace_duration_s == summary.duration_s == pytest.approx(3.0005)
    assert summary.input_tokens_median == 650 and summary.input_tokens_max == 2000
    assert summary.output_tokens_mean == pytest.approx(326 / 4) and summary.requests_with_hash_ids == 2
    assert summary.request_rate_rps == pytest.approx(3 / 3.0005)


AZURE = (
    "TIMESTAMP,ContextTokens,GeneratedTokens\r\n"
    "2023-11-16 23:59:59.9799600,4808,10\r\n"
    "2023-11-16 23:59:59.9799601,3180,8\r\n"  # 100 ns later: the 7th digit counts
    "2023-11-17 00:00:00.0319600,110,27\r\n"  # across midnight
    "2023-11-17 00:00:01,7,1\r\n"  # no fraction
)


def test_azure_timestamps_keep_all_seven_fractional_digits_across_midnight(tmp_path: Path) -> None:
    got = list(read_trace(write(tmp_path, AZURE), "azure"))
    assert [r.line for r in got] == [2, 3, 4, 5]
    assert got[1].arrival_s == pytest.approx(1e-7, abs=1e-12)
    assert got[2].arrival_s == pytest.approx(0.052, abs=1e-12)
    assert got[3].arrival_s == pytest.approx(1.02004, abs=1e-12)
    assert (got[0].input_tokens, got[0].output_tokens, got[0].hash_ids) == (4808, 10, ())


def test_azure_accepts_iso_t_a_utc_offset_and_any_column_order(tmp_path: Path) -> None:
    text = (
        "GeneratedTokens,TIMESTAMP,ContextTokens\n"
        "5,2024-05-10T00:00:00.5+00:00,100\n"
        "6,2024-05-10 02:00:01.5+02:00,200\n"  # one second later in UTC
        "7,2024-05-10 00:00:02Z,300\n"
    )
    got = list(read_trace(write(tmp_path, text), "azure"))
    assert [r.arrival_s for r in got] == pytest.approx([0.0, 1.0, 1.5])
    assert [(r.input_tokens, r.output_tokens) for r in got] == [(100, 5), (200, 6), (300, 7)]


def test_plain_csv_with_bom_extra_column_and_blank_lines(tmp_path: Path) -> None:
    text = "note,output_tokens,timestamp_s,input_tokens\nx,10,2.5,100\n\n,20,3.0,200\ny,30,12,300.0\n"
    path = write(tmp_path, "\ufeff" + text)
    got = list(read_trace(path, "csv"))
    assert [(r.line, r.arrival_s, r.input_tokens, r.output_tokens) for r in got] == [
        (2, 0.0, 100, 10),
        (4, 0.5, 200, 20),
        (5, 9.5, 300, 30),
    ]
    assert check_trace(path, "CSV").requests == 3  # the format name is case-insensitive


# ---- malformed files ---------------------------------------------------------------------------------------------

MALFORMED = [
    pytest.param(
        "mooncake",
        '{"timestamp": 0, "input_length": 10, "output_length": 2}\n'
        "not json\n"
        "[1, 2]\n"
        '{"timestamp": 5, "input_length": 10}\n'
        '{"timestamp": "soon", "input_length": 10, "output_length": 2}\n'
        '{"timestamp": 6, "input_length": 0, "output_length": 2}\n'
        '{"timestamp": 7, "input_length": 10, "output_length": 1.5}\n'
        '{"timestamp": 8, "input_length": true, "output_length": 2}\n'
        '{"timestamp": 9, "input_length": 10, "output_length": 2, "hash_ids": [1, "2"]}\n'
        '{"timestamp": 9, "input_length": 10, "output_length": 2, "hash_ids": [-1]}\n'
        '{"timestamp": -1, "input_length": 10, "output_length": 2}\n'
        '{"timestamp": 10, "input_length": 10, "output_length": -3}\n',
        [
            "line 2: not JSON",
            "line 3: not a JSON object",
            "line 4: missing output_length",
            "line 5: timestamp is not a number of milliseconds ('soon')",
            "line 6: input_length is not a whole number ≥ 1 (0)",
            "line 7: output_length is not a whole number ≥ 1 (1.5)",
            "line 8: input_length is not a whole number ≥ 1 (True)",
            "line 9: hash_ids is not a list of whole numbers ≥ 0",
            "line 10: hash_ids is not a list of whole numbers ≥ 0",
            "line 11: goes back in time (earlier than line 1)",
            "line 12: output_length is not a whole number ≥ 1 (-3)",
        ],
        id="mooncake",
    ),
    pytest.param(
        "azure",
        "TIMESTAMP,ContextTokens,GeneratedTokens\n"
        "2023-11-16 18:17:03.9799600,4808,10\n"
        "yesterday,10,2\n"
        "2023-13-16 18:17:04.0000000,10,2\n"
        "2023-11-16 18:17:04.0000000,abc,2\n"
        "2023-11-16 18:17:04.0000000,10,0\n"
        "2023-11-16 18:17:04.0000000,10\n"
        "2023-11-16 18:17:03.0000000,10,2\n",
        [
            "line 3: TIMESTAMP is not a date and time like 2023-11-16 18:17:03.9799600 ('yesterday')",
            "line 4: TIMESTAMP is not a date and time",
            "line 5: ContextTokens is not a whole number ≥ 1 ('abc')",
            "line 6: GeneratedTokens is not a whole number ≥ 1 ('0')",
            "line 7: expected 3 fields, found 2",
            "line 8: goes back in time (earlier than line 2)",
        ],
        id="azure",
    ),
    pytest.param(
        "csv",
        "timestamp_s,input_tokens,output_tokens\n0,10,2\nnan,10,2\n1,-5,2\n2,10,x\n3,10,2,9\n",
        [
            "line 3: timestamp_s is not a number ('nan')",
            "line 4: input_tokens is not a whole number ≥ 1 ('-5')",
            "line 5: output_tokens is not a whole number ≥ 1 ('x')",
            "line 6: expected 3 fields, found 4",
        ],
        id="csv",
    ),
    pytest.param(
        "csv", "0,10,2\n1,10,2\n", ["line 1: the csv header must name timestamp_s,input_tokens"], id="no-header"
    ),
    pytest.param("azure", "", ["line 1: the azure header must name TIMESTAMP"], id="empty"),
    pytest.param("mooncake", b"\xff\xfe garbage\n", ["line 1: not JSON"], id="not-utf8"),
]


@pytest.mark.parametrize(("fmt", "text", "expected"), MALFORMED)
def test_check_lists_every_malformed_line_with_its_number(tmp_path: Path, fmt: str, text, expected) -> None:
    path = tmp_path / "bad"
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    with pytest.raises(TraceError) as info:
        check_trace(path, fmt)
    err = info.value
    assert isinstance(err, WorkloadError) and isinstance(err, ProbeError)  # shown at the page edge like the others
    assert err.problem_count == len(expected) == len(err.problems)
    for problem, start in zip(err.problems, expected, strict=True):
        assert problem.startswith(start), (problem, start)
    assert str(err).startswith("bad: ") and expected[0].split(":")[0] in str(err)


@pytest.mark.parametrize(("fmt", "text", "expected"), MALFORMED[:3])
def test_read_trace_yields_the_good_lines_before_the_first_bad_one_then_raises(
    tmp_path: Path, fmt: str, text: str, expected
) -> None:
    path = write(tmp_path, text)
    got: list[TraceRequest] = []
    with pytest.raises(TraceError, match=expected[0].split(":")[0] + ":"):
        got.extend(read_trace(path, fmt))
    assert len(got) == 1  # only what came before the first bad line: check_trace is the gate that catches all


def test_only_the_first_problems_are_listed_with_a_count_of_the_rest(tmp_path: Path) -> None:
    path = write(tmp_path, "timestamp_s,input_tokens,output_tokens\n" + "0,x,1\n" * 30)
    with pytest.raises(TraceError, match=r"30 malformed lines \(and 20 more\)") as info:
        check_trace(path, "csv", max_problems=10)
    assert info.value.problem_count == 30 and len(info.value.problems) == 10
    assert info.value.problems[-1].startswith("line 11: input_tokens")


def test_unreadable_unknown_and_empty_traces_are_refused(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="cannot read the trace"):
        check_trace(tmp_path / "missing.jsonl", "mooncake")
    with pytest.raises(TraceError, match="unknown trace format 'parquet'"):
        check_trace(tmp_path / "missing.jsonl", "parquet")
    with pytest.raises(TraceError, match="has no request"):
        check_trace(write(tmp_path, "\n\n"), "mooncake")
    with pytest.raises(TraceError, match="has no request"):
        check_trace(write(tmp_path, "timestamp_s,input_tokens,output_tokens\n"), "csv")


# ---- slicing -----------------------------------------------------------------------------------------------------


@pytest.fixture
def ten_s(tmp_path: Path) -> Path:
    """Requests at 0.5, 1.5, ... 9.5 s (offsets 0..9 from the first), input length 100 + offset."""
    rows = "".join(f"{t + 0.5},{100 + t},{t + 1}\n" for t in range(10))
    return write(tmp_path, "timestamp_s,input_tokens,output_tokens\n" + rows, "ten.csv")


@pytest.mark.parametrize(
    ("kw", "offsets", "arrivals"),
    [
        ({}, list(range(10)), list(range(10))),
        ({"start_s": 3}, [3, 4, 5, 6, 7, 8, 9], [0, 1, 2, 3, 4, 5, 6]),
        ({"start_s": 2.5, "duration_s": 3}, [3, 4, 5], [0, 1, 2]),  # [2.5, 5.5)
        ({"start_s": 3, "duration_s": 3}, [3, 4, 5], [0, 1, 2]),  # [3, 6): the end is open
        ({"start_s": 1, "limit": 2}, [1, 2], [0, 1]),
        ({"start_s": 4, "speed": 10}, [4, 5, 6, 7, 8, 9], [0, 0.1, 0.2, 0.3, 0.4, 0.5]),
        ({"duration_s": 4, "speed": 0.5, "limit": 3}, [0, 1, 2], [0, 2, 4]),
    ],
)
def test_slices_keep_offsets_in_the_window_and_time_from_the_first_kept(ten_s: Path, kw, offsets, arrivals) -> None:
    got = list(read_trace(ten_s, "csv", **kw))
    assert [r.input_tokens - 100 for r in got] == offsets
    assert [r.arrival_s for r in got] == pytest.approx(arrivals)
    summary = check_trace(ten_s, "csv", **kw)
    assert summary.requests == len(got) and summary.requests_in_file == 10
    assert summary.duration_s == pytest.approx(arrivals[-1]) and summary.trace_duration_s == 9
    assert summary.input_tokens_median == statistics.median(r.input_tokens for r in got)


def test_an_empty_slice_and_absurd_slice_settings_are_refused(ten_s: Path) -> None:
    with pytest.raises(
        TraceError, match=r"no request of ten.csv starts between 20 s and 30 s of the trace, which spans 9.0 s"
    ):
        check_trace(ten_s, "csv", start_s=20, duration_s=10)
    for kw in ({"start_s": -1}, {"duration_s": 0}, {"limit": 0}, {"speed": 0}, {"speed": math.inf}):
        with pytest.raises(TraceError):
            check_trace(ten_s, "csv", **kw)
        with pytest.raises(TraceError):
            next(read_trace(ten_s, "csv", **kw))


def test_read_trace_stops_reading_once_the_slice_is_complete(tmp_path: Path) -> None:
    text = "timestamp_s,input_tokens,output_tokens\n0,10,1\n1,10,1\n2,10,1\nbroken line after the window\n"
    path = write(tmp_path, text)
    assert len(list(read_trace(path, "csv", duration_s=2))) == 2  # never reaches line 5
    assert len(list(read_trace(path, "csv", limit=3))) == 3
    with pytest.raises(TraceError, match="line 5"):
        check_trace(path, "csv", duration_s=2)  # the check still reads the whole file


# ---- built-in traces and resolving names ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "rows", "span_s", "input_median", "output_median"),
    [("azure-code", 8819, 3435.948056, 1469, 13), ("azure-conv", 19366, 3501.721937, 1020, 129)],
)
def test_built_in_traces_resolve_by_name_and_parse_whole(name, rows, span_s, input_median, output_median) -> None:
    path, fmt = resolve_trace(name)
    assert fmt == TraceFormat.AZURE and path == BUILTIN_TRACES[name] and path.is_file()
    assert resolve_trace(name, "azure") == (path, fmt)
    summary = check_trace(path, fmt)
    assert summary.requests == summary.requests_in_file == rows
    assert summary.trace_duration_s == pytest.approx(span_s, abs=1e-9)
    assert (summary.input_tokens_median, summary.output_tokens_median) == (input_median, output_median)
    assert summary.requests_with_hash_ids == 0
    first = next(read_trace(path, fmt))
    assert first.line == 2 and first.arrival_s == 0
    attribution = (path.parent / "ATTRIBUTION.md").read_text(encoding="utf-8")
    assert "CC-BY 4.0" in attribution and "probes/traces.py" in attribution


def test_azure_conv_at_ten_times_speed_fits_in_six_minutes() -> None:
    summary = check_trace(*resolve_trace("azure-conv"), speed=10)
    assert summary.duration_s == pytest.approx(350.1721937)


def test_resolve_paths_and_sniff_formats(tmp_path: Path) -> None:
    moon = write(tmp_path, MOONCAKE, "m.jsonl")
    azure = write(tmp_path, AZURE, "a.csv")
    plain = write(tmp_path, "timestamp_s,input_tokens,output_tokens\n0,1,1\n", "p.csv")
    assert resolve_trace(str(moon)) == (moon, TraceFormat.MOONCAKE)
    assert resolve_trace(azure) == (azure, TraceFormat.AZURE)
    assert resolve_trace(plain, None) == (plain, TraceFormat.CSV)
    assert resolve_trace(plain, "azure") == (plain, TraceFormat.AZURE)  # a given format is taken as given
    assert sniff_format(moon) == TraceFormat.MOONCAKE
    with pytest.raises(TraceError, match="cannot tell the format"):
        resolve_trace(write(tmp_path, "a,b,c\n", "odd.csv"))
    with pytest.raises(TraceError, match=r"no trace file 'nowhere\.csv'.*azure-code, azure-conv"):
        resolve_trace("nowhere.csv", "csv")
    with pytest.raises(TraceError, match="no trace file"):
        resolve_trace(tmp_path, "csv")  # a directory
    with pytest.raises(TraceError, match="is in the azure format, not mooncake"):
        resolve_trace("azure-code", "mooncake")


# ---- streaming ---------------------------------------------------------------------------------------------------


def test_a_ten_thousand_line_trace_is_streamed_with_flat_memory(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    with path.open("w") as out:
        for i in range(10_000):
            ids = list(range(i * 40, i * 40 + 40))
            out.write(json.dumps({"timestamp": i * 10, "input_length": 20_000, "output_length": 50, "hash_ids": ids}))
            out.write("\n")
    assert path.stat().st_size > 3_000_000  # loading it whole would break the limit below by itself
    tracemalloc.start()
    try:
        summary = check_trace(path, "mooncake")
        _, check_peak = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        count = sum(1 for _ in read_trace(path, "mooncake", speed=2))
        _, read_peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert summary.requests == count == 10_000 and summary.duration_s == pytest.approx(99.99)
    assert check_peak < 2_000_000 and read_peak < 2_000_000, (check_peak, read_peak)


# ---- prompts -----------------------------------------------------------------------------------------------------


def req(line: int, input_tokens: int, *ids: int) -> TraceRequest:
    return TraceRequest(line=line, arrival_s=0.0, input_tokens=input_tokens, output_tokens=10, hash_ids=ids)


def common_words(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a.split(" "), b.split(" "), strict=False):
        if x != y:
            break
        n += 1
    return n


def test_equal_hash_ids_give_equal_leading_blocks_and_unique_filler() -> None:
    builder = TracePromptBuilder()
    a, b = builder.prompt(req(1, 1100, 7, 8)), builder.prompt(req(2, 1100, 7, 8))
    assert len(a.split(" ")) == len(b.split(" ")) == 1100
    assert common_words(a, b) == 2 * BLOCK_TOKENS  # the blocks, and not one word of filler
    assert a.split(" ")[1024] != b.split(" ")[1024]
    assert builder.prompt(req(1, 1100, 7, 8)) == a  # deterministic
    assert TracePromptBuilder().prompt(req(1, 1100, 7, 8)) == a  # across builders of one seed
    assert common_words(TracePromptBuilder(seed=1).prompt(req(1, 1100, 7, 8)), a) < 2  # a new seed: a new text


def test_different_hash_ids_differ_from_the_first_word() -> None:
    builder = TracePromptBuilder()
    assert common_words(builder.prompt(req(1, 1024, 1, 2)), builder.prompt(req(2, 1024, 3, 2))) == 0
    assert common_words(builder.prompt(req(1, 1024, 10, 2)), builder.prompt(req(1, 1024, 1, 2))) == 0
    # [1, 2, 3] and [1, 2, 9] share exactly two blocks, byte for byte
    a, b = builder.prompt(req(1, 3 * 512, 1, 2, 3)), builder.prompt(req(2, 3 * 512, 1, 2, 9))
    assert common_words(a, b) == 2 * BLOCK_TOKENS
    shared = " ".join(a.split(" ")[: 2 * BLOCK_TOKENS]) + " "
    assert a.startswith(shared) and b.startswith(shared) and a[len(shared)] != b[len(shared)]


def test_a_block_is_the_same_text_wherever_it_stands_and_whatever_the_cache() -> None:
    small = TracePromptBuilder(cache_blocks=1)
    alone = small.prompt(req(1, 512, 5))
    after = small.prompt(req(2, 1024, 4, 5))
    assert after.endswith(" " + alone)
    assert TracePromptBuilder(cache_blocks=1000).prompt(req(2, 1024, 4, 5)) == after


def test_prompts_are_cut_to_the_input_length_or_padded_with_filler() -> None:
    builder = TracePromptBuilder()
    full = builder.prompt(req(1, 3 * 512, 1, 2, 3))
    cut = builder.prompt(req(2, 700, 1, 2, 3))  # the second block is cut, the third dropped
    assert full.startswith(cut + " ") and len(cut.split(" ")) == 700
    assert builder.prompt(req(3, 1, 1, 2)) == "2"  # one word: the first of block 1
    plain_a, plain_b = builder.prompt(req(4, 300)), builder.prompt(req(5, 300))
    assert len(plain_a.split(" ")) == 300 and common_words(plain_a, plain_b) == 0
    assert plain_a.split(" ")[0] == "9" and full.split(" ")[0] == "2"  # lines odd, blocks even: never equal


def test_one_point_calibration_fits_tokens_per_word_through_the_known_overhead() -> None:
    builder = TracePromptBuilder()
    cal = builder.calibrate(100, 130)
    assert cal == Calibration(1.3, 0.0) and builder.tokens_per_word == 1.3
    assert cal.words_for(1300) == 1000 and builder.block_words == round(512 / 1.3)
    assert len(builder.prompt(req(1, 1300)).split(" ")) == 1000
    with_overhead = TracePromptBuilder(overhead_tokens=30)
    assert with_overhead.calibrate(100, 130) == Calibration(1.0, 30.0)
    assert with_overhead.calibration.words_for(530) == 500 and with_overhead.calibration.tokens_for(500) == 530


def test_two_point_calibration_gives_slope_and_intercept() -> None:
    builder = TracePromptBuilder()
    cal = builder.calibrate(64, 100, (512, 660))  # 1.25 tokens per word plus a 20-token chat template
    assert cal.tokens_per_word == pytest.approx(1.25) and cal.overhead_tokens == pytest.approx(20)
    assert cal.words_for(1000) == 784 and builder.block_words == 410
    assert Calibration.fit([(10, 12), (10, 14)]).tokens_per_word == pytest.approx(
        1.3
    )  # one size, repeated: averaged slope


@pytest.mark.parametrize("points", [[(0, 10)], [(10, 0)], [(100, 5000)], [(100, 10)], []])
def test_calibration_refuses_counts_a_server_could_not_mean(points) -> None:
    with pytest.raises(TraceError):
        Calibration.fit(points)


def server_count(text: str, template_tokens: int = 23) -> int:
    """A stand-in tokenizer: words of the vocabulary cost one token, numbers one per three digits, plus a template."""
    return template_tokens + sum(math.ceil(len(w) / 3) if w.isdigit() else 1 for w in text.split(" "))


def test_calibrated_prompts_land_within_five_percent_of_the_trace() -> None:
    builder = TracePromptBuilder(seed=3)
    points = [(w, server_count(builder.calibration_prompt(w))) for w in CALIBRATION_WORDS]
    assert [len(builder.calibration_prompt(w).split(" ")) for w in CALIBRATION_WORDS] == list(CALIBRATION_WORDS)
    cal = builder.calibrate(*points[0], *points[1:])
    assert cal.overhead_tokens == pytest.approx(23) and cal.tokens_per_word == pytest.approx(1)
    path, fmt = resolve_trace("azure-conv")
    ratios = []
    for r in read_trace(path, fmt, limit=500):
        ids = tuple(range(r.line % 7, r.line % 7 + r.input_tokens // 512))  # some Mooncake-like blocks too
        ratios.append(server_count(builder.prompt(req(r.line, r.input_tokens, *ids))) / r.input_tokens)
    assert abs(statistics.median(ratios) - 1) < 0.05
    assert sum(abs(x - 1) < 0.05 for x in ratios) / len(ratios) > 0.9
