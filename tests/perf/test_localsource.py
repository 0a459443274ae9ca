"""Reading a results page that may not be shipped into a local CSV: offline from a saved copy, online by URL."""

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from perf.fitset import LOCAL_POINTS_ENV, _published, read_points
from perf.localsource import main

SAVED = Path(__file__).parent / "data" / "saved_results_page.html"
ARGS = ["--publisher", "Vendor blog", "--engine", "vllm", "--engine-version", "0.9.1", "--licence", "all rights"]


def test_a_saved_page_is_read_offline_with_separators_and_unknown_gpus_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "local.csv"
    assert main(["--saved", str(SAVED), "--out", str(out), "--gpus", "8", "--quant", "fp8", *ARGS]) == 0
    points = read_points(out)
    assert len(points) == 1, "the unknown GPU and the row without a measurement are left out"
    point = points[0]
    assert (point.model, point.gpu, point.engine_version) == ("llama3.1-70b", "mi300x-192gb", "0.9.1")
    assert (point.input_tokens, point.concurrency, point.output_tok_s, point.ttft_ms) == (1024, 64, 2345.6, 812.0)
    assert point.shape.gpus == 8 and point.publisher == "Vendor blog"
    err = capsys.readouterr().err
    assert "XPU-9000" in err and "no measurement" in err


def test_the_fit_reads_the_local_csv_only_when_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "local.csv"
    assert main(["--saved", str(SAVED), "--out", str(out), *ARGS]) == 0
    shipped = len(_published())
    monkeypatch.setenv(LOCAL_POINTS_ENV, str(out))
    assert len(_published()) == shipped + 1


def test_a_page_without_a_usable_row_writes_nothing_and_says_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "empty.html"
    page.write_text("<table><tr><th>Model</th><th>Score</th></tr><tr><td>x</td><td>1</td></tr></table>")
    out = tmp_path / "local.csv"
    assert main(["--saved", str(page), "--out", str(out), *ARGS]) == 1
    assert not out.exists()
    assert "no table row could be placed" in capsys.readouterr().err


@pytest.fixture
def page_url() -> Iterator[str]:
    body = SAVED.read_bytes()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/results.html"
    server.shutdown()
    thread.join()


def test_the_same_page_is_read_online_by_url(page_url: str, tmp_path: Path) -> None:
    out = tmp_path / "local.csv"
    assert main(["--url", page_url, "--out", str(out), *ARGS]) == 0
    [point] = read_points(out)
    assert point.gpu == "mi300x-192gb"
    assert "127.0.0.1" in out.read_text()


def test_an_unreachable_url_is_an_error_naming_the_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--url", "http://127.0.0.1:9/none", "--out", str(tmp_path / "x.csv"), *ARGS]) == 2
    assert "--url" in capsys.readouterr().err
