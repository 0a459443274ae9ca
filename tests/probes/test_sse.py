"""The SSE reader fed bytes, no socket: every split, bulk parsing, CRLF, multi-line data, errors inside the stream."""

import json
from itertools import pairwise

import pytest

from probes.failures import RequestFailed
from probes.models import ErrorKind
from probes.sse import SseReader
from probes.timing import StreamTrace


def event(obj: object) -> bytes:
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


def chunk(content: str | None = None, finish: str | None = None, **delta: str) -> bytes:
    if content is not None:
        delta["content"] = content
    return event({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})


STREAM = b"".join(
    [
        chunk(role="assistant", content=""),  # role only: no output
        chunk(reasoning_content="hmm"),
        chunk(" alpha"),
        chunk(" beta"),
        chunk(" gamma"),
        chunk(finish="stop"),
        event({"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 4}}),
        b"data: [DONE]\n\n",
    ]
)


def reader(overlength_at: int = 100, chat: bool = True) -> tuple[SseReader, list[float]]:
    firsts: list[float] = []
    return SseReader(StreamTrace(sent_s=0.0), chat, overlength_at, firsts.append), firsts


def reads_of(data: bytes, cuts: list[int]) -> list[tuple[float, bytes]]:
    bounds = [0, *cuts, len(data)]
    return [(float(i + 1), data[a:b]) for i, (a, b) in enumerate(pairwise(bounds))]


def outcome(sse: SseReader) -> tuple[object, ...]:
    trace = sse.trace
    return (len(trace.chunk_s), trace.chunk_reasoning, trace.chunk_chars, sse.finish, sse.usage, sse.done)


EXPECTED = (4, [True, False, False, False], [3, 6, 5, 6], "stop", {"prompt_tokens": 7, "completion_tokens": 4}, True)


def test_every_split_reads_the_same_read_by_read_and_in_bulk() -> None:
    for cut in range(1, len(STREAM)):
        eager, firsts = reader()
        for now, data in reads_of(STREAM, [cut]):
            eager.feed(now, data)
        assert outcome(eager) == EXPECTED, cut
        assert len(firsts) == 1 and firsts[0] == eager.trace.chunk_s[0], cut
        bulk, _ = reader()
        bulk.feed_bulk(reads_of(STREAM, [cut]))
        assert outcome(bulk) == EXPECTED and bulk.trace.chunk_s == eager.trace.chunk_s, cut


def test_an_event_takes_the_arrival_of_the_read_that_completed_it() -> None:
    first_output = STREAM.index(b"hmm")
    first_end = STREAM.index(b"\n\n", first_output) + 2
    sse, firsts = reader()
    for now, data in reads_of(STREAM, [first_output, first_end]):
        sse.feed(now, data)
    assert firsts == [2.0]  # the reasoning chunk's event ends in the second read
    assert sse.trace.chunk_s[1:] == [3.0, 3.0, 3.0] and sse.trace.end_s == 3.0 and sse.last_event_s == 3.0


def test_crlf_line_ends_and_a_data_field_over_several_lines() -> None:
    crlf, _ = reader()
    crlf.feed(1.0, STREAM.replace(b"\n", b"\r\n"))
    assert outcome(crlf) == EXPECTED
    multi, _ = reader()
    multi.feed(1.0, b'data: {"choices": [{"delta":\ndata: {"content": "x"}}]}\n\ndata: [DONE]\n\n')
    assert len(multi.trace.chunk_s) == 1 and multi.done


def test_completions_text_and_continuous_usage() -> None:
    sse, _ = reader(chat=False)
    body = b"".join(
        event({"choices": [{"text": t, "finish_reason": None}], "usage": {"completion_tokens": n}})
        for n, t in ((2, "ab"), (4, "cd"))
    )
    sse.feed(1.0, body + event({"choices": [{"text": "", "finish_reason": "length"}]}))
    assert sse.trace.chunk_cum_tokens == [2, 4] and sse.produced() == 4 and sse.finish == "length"


def test_a_one_mib_line_split_into_many_reads_is_one_event() -> None:
    line = chunk("x" * (1 << 20))
    sse, _ = reader()
    for now, data in reads_of(line, list(range(1000, len(line), 64 << 10))):
        sse.feed(now, data)
    assert len(sse.trace.chunk_s) == 1 and sse.trace.chunk_chars == [1 << 20]


@pytest.mark.parametrize(
    ("data", "kind", "match"),
    [
        (b'data: {"choices": [\n\n', ErrorKind.MALFORMED_SSE, "not JSON"),
        (b"data: [1, 2]\n\n", ErrorKind.MALFORMED_SSE, "not an object"),
        (event({"error": {"message": "out of memory", "code": 500}}), ErrorKind.STREAM_ERROR, "out of memory"),
        (b'event: error\ndata: {"message": "bad"}\n\n', ErrorKind.STREAM_ERROR, "bad"),
        (chunk("a") * 4, ErrorKind.OVERLENGTH, r"past max_tokens \(4 > 3\)"),
    ],
)
def test_failures_inside_the_stream(data: bytes, kind: ErrorKind, match: str) -> None:
    for bulk in (False, True):
        sse, _ = reader(overlength_at=3)
        with pytest.raises(RequestFailed, match=match) as failed:
            sse.feed_bulk([(1.0, chunk("ok") + data)]) if bulk else sse.feed(1.0, chunk("ok") + data)
        assert failed.value.kind == kind
        assert len(sse.trace.chunk_s) >= 1  # what came before the failure is kept


def test_a_malformed_event_among_good_ones_in_bulk_is_found() -> None:
    sse, _ = reader()
    with pytest.raises(RequestFailed) as failed:
        sse.feed_bulk([(1.0, chunk("a")), (2.0, b"data: {oops\n\n"), (3.0, chunk("b"))])
    assert failed.value.kind == ErrorKind.MALFORMED_SSE and sse.trace.chunk_s == [1.0]
