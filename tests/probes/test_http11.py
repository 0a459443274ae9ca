"""The HTTP/1.1 response parser fed bytes, no socket: every split of a read, chunked and sized bodies, truncation."""

from itertools import pairwise

import httpx2
import pytest

from probes.http11 import MAX_HEAD_BYTES, NO_RESPONSE, ResponseParser

SSE_EVENTS = [b'data: {"n":%d}\n\n' % i for i in range(5)] + [b"data: [DONE]\n\n"]


def chunked(*pieces: bytes, extension: bytes = b"") -> bytes:
    return b"".join(b"%x%s\r\n%s\r\n" % (len(p), extension, p) for p in pieces) + b"0\r\n\r\n"


def response(body: bytes, *headers: bytes, status: bytes = b"200 OK") -> bytes:
    return b"HTTP/1.1 " + status + b"\r\n" + b"".join(h + b"\r\n" for h in headers) + b"\r\n" + body


CHUNKED_SSE = response(
    chunked(*SSE_EVENTS, extension=b";ext=1"),
    b"content-type: text/event-stream",
    b"Transfer-Encoding: chunked",
    b"x-request-id: r-1",
)


def feed(wire: bytes, cuts: list[int], head_request: bool = False) -> ResponseParser:
    """Feed wire as reads split at the cut positions, the i-th read arriving at time i."""
    parser = ResponseParser(head_request)
    bounds = [0, *cuts, len(wire)]
    for i, (a, b) in enumerate(pairwise(bounds)):
        parser.feed(wire[a:b], float(i))
    return parser


def body_of(parser: ResponseParser) -> bytes:
    return b"".join(piece for _, piece in parser.pieces)


def test_a_chunked_sse_body_split_at_every_byte_position_reads_the_same() -> None:
    whole = feed(CHUNKED_SSE, [])
    assert whole.head is not None and whole.head.status == 200 and whole.body_done and whole.keep_alive
    assert (b"x-request-id", b"r-1") in whole.head.headers and whole.head.version == b"HTTP/1.1"
    assert body_of(whole) == b"".join(SSE_EVENTS) and whole.data_lines == len(SSE_EVENTS)
    for cut in range(1, len(CHUNKED_SSE)):
        parser = feed(CHUNKED_SSE, [cut])
        assert parser.head == whole.head, cut
        assert body_of(parser) == b"".join(SSE_EVENTS), cut
        assert parser.body_done and parser.keep_alive, cut
        assert parser.data_lines == len(SSE_EVENTS), cut  # counted per read: a split "data:" is not counted twice
    byte_by_byte = feed(CHUNKED_SSE, list(range(1, len(CHUNKED_SSE))))
    assert body_of(byte_by_byte) == b"".join(SSE_EVENTS) and byte_by_byte.body_done
    assert byte_by_byte.data_lines == len(SSE_EVENTS)


def test_each_piece_carries_the_arrival_of_its_read_and_the_head_its_own() -> None:
    head_end = CHUNKED_SSE.index(b"\r\n\r\n") + 4
    first_chunk_end = CHUNKED_SSE.index(b"\r\n", head_end + 10) + 2  # size line, then the first event's chunk
    parser = feed(CHUNKED_SSE, [head_end - 2, head_end, first_chunk_end])
    assert parser.head_s == 1.0  # the read that completed the head
    times = [t for t, _ in parser.pieces]
    assert times[0] == 2.0 and times[-1] == 3.0
    assert parser.last_data_s == 3.0


def test_a_one_mib_line_in_one_chunk_is_read_whole_however_it_is_split() -> None:
    line = b"data: " + b"x" * (1 << 20) + b"\n\n"
    wire = response(chunked(line, b"data: [DONE]\n\n"), b"transfer-encoding: chunked")
    for cuts in ([], [100], [len(wire) // 2], list(range(64 << 10, len(wire), 64 << 10))):
        parser = feed(wire, cuts)
        assert body_of(parser) == line + b"data: [DONE]\n\n" and parser.body_done


def test_content_length_bodies_split_anywhere() -> None:
    body = b'{"error": {"message": "slow down"}}'
    wire = response(body, b"content-type: application/json", b"content-length: %d" % len(body), status=b"429 Too Many")
    for cut in range(1, len(wire)):
        parser = feed(wire, [cut])
        assert parser.head is not None and parser.head.status == 429
        assert body_of(parser) == body and parser.body_done and parser.keep_alive, cut
    empty = feed(response(b"", b"content-length: 0"), [])
    assert empty.body_done and body_of(empty) == b""


def test_bytes_past_the_end_of_a_body_spoil_the_connection() -> None:
    extra = feed(response(b"abc" + b"GARBAGE", b"content-length: 3"), [])
    assert body_of(extra) == b"abc" and extra.body_done and not extra.keep_alive
    after_chunks = feed(CHUNKED_SSE + b"HTTP/1.1 200 OK\r\n", [])
    assert after_chunks.body_done and not after_chunks.keep_alive


def test_a_truncated_chunked_stream_is_an_error_at_the_close() -> None:
    cut = CHUNKED_SSE.index(b"[DONE]")
    parser = feed(CHUNKED_SSE[:cut], [])
    assert not parser.body_done
    error = parser.closed(None)
    assert isinstance(error, httpx2.RemoteProtocolError) and "complete message body" in str(error)
    reset = feed(CHUNKED_SSE[:cut], []).closed(ConnectionResetError("reset by peer"))
    assert isinstance(reset, httpx2.ReadError) and isinstance(reset.__cause__, ConnectionResetError)
    assert feed(CHUNKED_SSE, []).closed(None) is None  # a complete body: the close means nothing


def test_a_close_before_any_byte_and_one_inside_the_head_differ() -> None:
    nothing = ResponseParser().closed(None)
    assert isinstance(nothing, httpx2.RemoteProtocolError) and str(nothing) == NO_RESPONSE
    half = feed(b"HTTP/1.1 200 OK\r\ncontent-ty", [])
    assert half.got_bytes and half.head is None
    assert "middle of the response head" in str(half.closed(None))


def test_a_body_without_length_ends_with_the_connection() -> None:
    parser = feed(response(b"data: a\n\n", b"content-type: text/event-stream"), [20])
    assert not parser.body_done and not parser.keep_alive
    assert parser.closed(None) is None and parser.body_done and body_of(parser) == b"data: a\n\n"


def test_interim_answers_head_requests_and_bodiless_statuses() -> None:
    wire = b"HTTP/1.1 100 Continue\r\n\r\n" + response(b"ok", b"content-length: 2")
    for cut in range(1, len(wire)):
        parser = feed(wire, [cut])
        assert parser.head is not None and parser.head.status == 200 and body_of(parser) == b"ok", cut
    head = feed(response(b"", b"content-length: 99"), [], head_request=True)
    assert head.body_done and body_of(head) == b""
    assert feed(response(b"", status=b"204 No Content"), []).body_done
    old = feed(b"HTTP/1.0 200 OK\r\ncontent-length: 2\r\n\r\nok", [])
    assert body_of(old) == b"ok" and not old.keep_alive
    closing = feed(response(b"ok", b"content-length: 2", b"Connection: close"), [])
    assert not closing.keep_alive


@pytest.mark.parametrize(
    ("wire", "match"),
    [
        (b"HTTP/1.1 abc OK\r\n\r\n", "bad status line"),
        (response(b"zz\r\nxx\r\n", b"transfer-encoding: chunked"), "bad chunk size"),
        (response(b"-5\r\nxx\r\n", b"transfer-encoding: chunked"), "bad chunk size"),
        (response(b"5;x\r\nhello\r\nzz;ext\r\n", b"transfer-encoding: chunked"), "bad chunk size"),
        (response(b"xx", b"content-length: -2"), "bad content-length"),
        (b"HTTP/1.1 200 OK\r\n" + b"x-pad: " + b"a" * MAX_HEAD_BYTES, "head too large"),
        (response(b"1" * (100 << 10), b"transfer-encoding: chunked"), "framing line too long"),
    ],
)
def test_malformed_framing_raises(wire: bytes, match: str) -> None:
    with pytest.raises(httpx2.RemoteProtocolError, match=match):
        feed(wire, [])
