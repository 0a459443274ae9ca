"""Why a request failed: exceptions and HTTP statuses mapped to error kinds, with the message to keep."""

import ssl
from dataclasses import dataclass

import httpx2
import openai

from probes.http11 import NO_RESPONSE, ClosedWithoutResponse
from probes.models import ErrorKind

MAX_CAUSES = 8


class RequestFailed(Exception):
    """A request that failed for a reason the probe itself saw (in the stream or its framing), with its kind."""

    def __init__(self, kind: ErrorKind, message: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class Failure:
    """A failed request's kind and message, and what the HTTP answer said about it."""

    kind: ErrorKind
    message: str
    http_status: int | None = None
    retry_after_s: float | None = None
    request_id: str | None = None


def causes_of(exc: BaseException) -> list[BaseException]:
    """The exception and its causes (explicit or implicit), outermost first."""
    causes: list[BaseException] = []
    cur: BaseException | None = exc
    while cur is not None and len(causes) < MAX_CAUSES:
        causes.append(cur)
        cur = cur.__cause__ or cur.__context__
    return causes


def closed_without_response(exc: BaseException) -> ClosedWithoutResponse | None:
    """The lean transport's close-without-response behind exc, if that is what it was."""
    return next((c for c in causes_of(exc) if isinstance(c, ClosedWithoutResponse)), None)


def classify_error(exc: BaseException) -> tuple[ErrorKind, str]:
    """The error kind of a connection-level failure and its message (every cause's text, once)."""
    causes = causes_of(exc)
    text = "; ".join(dict.fromkeys(str(c) for c in causes if str(c)))
    if any(isinstance(c, ssl.SSLError) for c in causes) or "CERTIFICATE" in text.upper():
        return ErrorKind.TLS, text or "TLS error"
    if any(isinstance(c, httpx2.ConnectTimeout) for c in causes):
        return ErrorKind.CONNECT_TIMEOUT, text or "connect timeout"
    if any(isinstance(c, httpx2.ConnectError) for c in causes):
        return ErrorKind.CONNECT, text or "connection failed"
    if isinstance(exc, openai.APITimeoutError):
        return ErrorKind.CONNECT_TIMEOUT, text or "timeout"
    if any(_no_response(c) for c in causes):
        return ErrorKind.CLOSED_WITHOUT_RESPONSE, text
    if any(isinstance(c, (httpx2.ReadError, httpx2.WriteError)) for c in causes):
        return ErrorKind.STREAM_RESET, text or "connection reset"
    if any(isinstance(c, httpx2.RemoteProtocolError) for c in causes):
        return ErrorKind.STREAM_TRUNCATED, text or "the server closed the connection early"
    if isinstance(exc, openai.APIConnectionError):
        return ErrorKind.CONNECT, text or "connection error"
    return ErrorKind.CLIENT_ERROR, f"{type(exc).__name__}: {exc}"


def _no_response(exc: BaseException) -> bool:
    # the lean transport's own error, or httpcore's (an injected httpx2 transport) with the same words
    return isinstance(exc, ClosedWithoutResponse) or (
        isinstance(exc, httpx2.RemoteProtocolError) and str(exc).startswith(NO_RESPONSE)
    )


def status_kind(status: int) -> ErrorKind:
    """The error kind of an HTTP status."""
    if status in (401, 403):
        return ErrorKind.AUTH
    if status == 404:
        return ErrorKind.NOT_FOUND
    if status == 429:
        return ErrorKind.RATE_LIMITED
    if status >= 500:
        return ErrorKind.SERVER_ERROR
    return ErrorKind.HTTP_ERROR


def retry_after_s(value: str | None) -> float | None:
    """A Retry-After header in seconds (None when absent or an HTTP date)."""
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        return None


def failure_of(exc: Exception) -> Failure:
    """What an exception out of one request means: its kind, message and the HTTP answer's details."""
    if isinstance(exc, RequestFailed):
        return Failure(exc.kind, str(exc))
    if isinstance(exc, openai.APIStatusError):
        headers = exc.response.headers
        return Failure(
            status_kind(exc.status_code),
            f"HTTP {exc.status_code}: {exc.message}",
            http_status=exc.status_code,
            retry_after_s=retry_after_s(headers.get("retry-after")),
            request_id=headers.get("x-request-id"),
        )
    if isinstance(exc, (openai.APIConnectionError, httpx2.HTTPError, OSError)):
        return Failure(*classify_error(exc))
    return Failure(ErrorKind.CLIENT_ERROR, f"{type(exc).__name__}: {exc}")  # a probe never dies of one request
