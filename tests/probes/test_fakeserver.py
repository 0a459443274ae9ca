"""The fake server itself: its timing record, keep-alive, its endpoints, `python -m fakeserver` and its old name."""

import json
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from fakeserver import Behaviour, serve_in_thread
from probes.prom import metrics_url_for, parse_metrics
from tests.support import ROOT, free_port, wait_http, wait_until


def http_request(sock: socket.socket, body: dict) -> bytes:
    payload = json.dumps(body).encode()
    sock.sendall(
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\n"
        b"content-length: %d\r\n\r\n%s" % (len(payload), payload)
    )
    data = b""
    while not data.endswith(b"0\r\n\r\n"):
        chunk = sock.recv(65536)
        assert chunk, "connection closed"
        data += chunk
    return data


def test_keep_alive_chunked_sse_and_the_timing_record() -> None:
    with serve_in_thread(defaults=Behaviour(ttft_ms=30, tpot_ms=10, tokens=5)) as server:
        with socket.create_connection(("127.0.0.1", server.port)) as sock:
            body = {
                "model": "fake",
                "messages": [{"role": "user", "content": "a b c"}],
                "stream": True,
                "stream_options": {"include_usage": True},
            }
            first = http_request(sock, body)
            second = http_request(sock, {**body, "model": "fake:tokens=2,role_chunk=0"})  # same connection
        records = server.records()
    assert b"transfer-encoding: chunked" in first and first.count(b'"content":" ') == 5
    assert b'"role":"assistant"' in first and b"data: [DONE]" in first and b'"completion_tokens": 5' in first
    assert second.count(b'"content":" ') == 2 and b'"role"' not in second
    rec = records[0]
    assert len(rec.token_s) == 5 and rec.chunk_tokens == [1] * 5
    # Each token is due at ttft + i * tpot after the request: never early; late only by what a busy core costs.
    offsets_ms = [(t - rec.received_s) * 1000 for t in rec.token_s]
    for i, offset_ms in enumerate(offsets_ms):
        assert 30 + 10 * i - 1 <= offset_ms < 30 + 10 * i + 250, offsets_ms


def send_only(sock: socket.socket, model: str) -> None:
    payload = json.dumps({"model": model, "messages": [{"role": "user", "content": "hi"}], "stream": True}).encode()
    sock.sendall(
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\ncontent-length: %d\r\n\r\n%s" % (len(payload), payload)
    )


def test_close_no_headers_holds_the_request_then_closes_without_a_byte() -> None:
    with serve_in_thread() as server:
        with socket.create_connection(("127.0.0.1", server.port)) as sock:
            sock.settimeout(10)
            start = time.perf_counter()
            send_only(sock, "fake:fault=close_no_headers,ttft_ms=80")
            got = sock.recv(65536)  # blocks until the server closes
            held_ms = (time.perf_counter() - start) * 1000
        records = server.records()
    assert got == b"" and held_ms >= 75
    assert server.counters.requests == 1 and records[0].fault == "close_no_headers" and records[0].token_s == []


def test_fault_every_hits_every_nth_request_only() -> None:
    with serve_in_thread(defaults=Behaviour(ttft_ms=1, tpot_ms=1, tokens=2)) as server:
        with socket.create_connection(("127.0.0.1", server.port)) as sock:
            body = {"model": "fake:fault=truncate,fault_every=2,fault_after=1", "messages": [], "stream": True}
            answers = [http_request(sock, body) for _ in range(4)]
        faults = [r.fault for r in server.records()]
    assert [b"[DONE]" in a for a in answers] == [True, False, True, False]
    assert faults == ["", "truncate", "", "truncate"]


def test_close_idle_connections_leaves_busy_ones_open() -> None:
    with (
        serve_in_thread(defaults=Behaviour(ttft_ms=1, tpot_ms=1, tokens=2)) as server,
        socket.create_connection(("127.0.0.1", server.port)) as idle,
        socket.create_connection(("127.0.0.1", server.port)) as busy,
    ):
        idle.settimeout(10)
        http_request(idle, {"model": "fake", "messages": [], "stream": True})
        send_only(busy, "fake:fault=no_headers")
        wait_until(lambda: len(server.records()) == 2 and sorted(c.busy for c in list(server.connections)) == [0, 1])
        server.close_idle_connections()
        assert idle.recv(1) == b""  # closed by the server
        wait_until(lambda: len(server.connections) == 1)
        assert next(iter(server.connections)).busy


def test_held_requests_wait_without_a_byte_until_released() -> None:
    with serve_in_thread(defaults=Behaviour(ttft_ms=10, tpot_ms=1, tokens=3)) as server:
        server.hold()
        with socket.create_connection(("127.0.0.1", server.port)) as sock:
            sock.settimeout(30)
            send_only(sock, "fake")
            wait_until(lambda: server.waiting() == 1)  # it waits in the queue
            sock.setblocking(False)
            with pytest.raises(BlockingIOError):
                sock.recv(1)  # nothing sent while held, not even the headers
            sock.setblocking(True)
            server.release()
            data = b""
            while not data.endswith(b"0\r\n\r\n"):
                data += sock.recv(65536)
        assert server.waiting() == 0
    assert data.count(b'"content":" ') == 3 and b"data: [DONE]" in data


def test_models_metrics_and_records_endpoints() -> None:
    with serve_in_thread(models=("fake", "other"), spec_acceptance=0.75) as server:
        base = f"http://127.0.0.1:{server.port}"
        models = json.loads(urllib.request.urlopen(f"{base}/v1/models").read())
        assert [m["id"] for m in models["data"]] == ["fake", "other"]
        text = urllib.request.urlopen(metrics_url_for(server.base_url)).read().decode()
        values, family = parse_metrics(text)
        assert family == "vllm" and values["running_requests"] == 0 and "spec_draft_tokens" in values
        assert json.loads(urllib.request.urlopen(f"{base}/fake/records").read()) == []


def test_prompts_are_recorded_only_when_asked() -> None:
    messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "one two  three"}]
    chat = {"model": "fake:tokens=1", "messages": messages, "stream": True}
    completion = {"model": "fake:tokens=1", "prompt": "four five", "stream": True}
    for asked in (False, True):
        with serve_in_thread(record_prompts=asked) as server:
            with socket.create_connection(("127.0.0.1", server.port)) as sock:
                http_request(sock, chat)
            base = f"http://127.0.0.1:{server.port}"
            request = urllib.request.Request(
                f"{base}/v1/completions", data=json.dumps(completion).encode(), method="POST"
            )
            urllib.request.urlopen(request).read()
            listed = json.loads(urllib.request.urlopen(f"{base}/fake/records").read())
            records = server.records()
        expected = ["be brief\none two  three", "four five"] if asked else [None, None]
        assert [r.prompt for r in records] == expected  # the text as the server read it (its token count splits it)
        assert [r["prompt"] for r in listed] == expected


def test_only_loopback() -> None:
    with pytest.raises(ValueError, match="loopback"):
        serve_in_thread(host="0.0.0.0").__enter__()


@pytest.mark.parametrize("module", ["fakeserver", "probes.fakeserver"])
def test_runs_as_a_module(module: str) -> None:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", module, "--port", str(port), "--tokens", "3"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        wait_http(f"http://127.0.0.1:{port}/v1/models", timeout_s=20, proc=proc)
    finally:
        proc.terminate()
        proc.wait(10)
