"""The openai SDK client on the lean transport: building it, request bodies, and the raw streamed POST."""

import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx2
from openai import AsyncOpenAI
from openai._constants import RAW_RESPONSE_HEADER  # the SDK's own marker for an unread streamed response

from probes.config import ApiKind, RunSettings
from probes.transport import LeanTransport
from probes.workloads import Prompt

NO_KEY = "EMPTY"  # what OpenAI-compatible servers without auth expect when the SDK insists on a key
SPARE_CONNECTIONS = 4  # beyond the highest concurrency: the metrics scrape and the preflight
_RAW_STREAM_OPTIONS: Any = {"headers": {RAW_RESPONSE_HEADER: "stream"}}


def make_http(
    settings: RunSettings, max_connections: int, transport: httpx2.AsyncBaseTransport | None = None
) -> httpx2.AsyncClient:
    """The HTTP client under the SDK: the lean transport (or the one given), no read timeout, no proxy from env.

    The probe's own watchdog times the stream (TTFT and stall timeouts).
    """
    timeouts = settings.timeouts
    timeout = httpx2.Timeout(connect=timeouts.connect_s, read=None, write=timeouts.ttft_s, pool=None)
    pool = max_connections + SPARE_CONNECTIONS
    limits = httpx2.Limits(max_connections=pool, max_keepalive_connections=pool)
    return httpx2.AsyncClient(
        transport=transport or LeanTransport(), timeout=timeout, limits=limits, trust_env=False, follow_redirects=False
    )


def make_client(settings: RunSettings, http: httpx2.AsyncClient) -> AsyncOpenAI:
    """An AsyncOpenAI client on that HTTP client, with the SDK's automatic retries off."""
    key = settings.api_key.get_secret_value() if settings.api_key else ""
    return AsyncOpenAI(
        base_url=settings.base_url, api_key=key or NO_KEY, max_retries=0, timeout=http.timeout, http_client=http
    )


async def close_quietly(client: AsyncOpenAI) -> None:
    """Close the client, ignoring errors from connections the server already dropped."""
    with contextlib.suppress(Exception):
        await client.close()


def scrub(text: str, settings: RunSettings) -> str:
    """Remove the API key from a message (a server might echo it)."""
    key = settings.api_key.get_secret_value() if settings.api_key else ""
    return text.replace(key, "***") if key else text


def request_body(
    settings: RunSettings, prompt: Prompt | list[dict[str, str]], *, max_tokens: int | None = None
) -> dict[str, Any]:
    """The JSON body of one streamed request: a prompt, or a conversation's chat messages (sessions).

    `max_tokens` replaces the run's (a trace's output length, a session variant's answers).
    """
    body: dict[str, Any] = {
        "model": settings.model,
        "max_tokens": max_tokens or settings.max_tokens,
        "temperature": settings.temperature,
        "stream": True,
    }
    if settings.include_usage:
        options: dict[str, Any] = {"include_usage": True}
        if settings.continuous_usage_stats:
            options["continuous_usage_stats"] = True
        body["stream_options"] = options
    if settings.ignore_eos:
        body["ignore_eos"] = True
    if isinstance(prompt, list):
        body["messages"] = prompt
    elif settings.api == ApiKind.CHAT:
        body["messages"] = prompt.messages()
    else:
        body["prompt"] = prompt.text()
    return body


def encode_body(body: dict[str, Any]) -> bytes:
    """The request body as JSON bytes, prepared ahead of sending."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()


def api_path(settings: RunSettings) -> str:
    """The endpoint of the settings' API, relative to the base URL."""
    return "/chat/completions" if settings.api == ApiKind.CHAT else "/completions"


@contextlib.asynccontextmanager
async def open_stream(client: AsyncOpenAI, path: str, body: dict[str, Any] | bytes) -> AsyncIterator[httpx2.Response]:
    """POST through the SDK and hand back the raw, unread httpx2 response.

    The SDK still does auth, headers and status errors (openai.APIStatusError, no retries); there is no model object
    per chunk and none of create()'s per-request type transforms. A body given as bytes (JSON prepared ahead) is
    sent as it is.
    """
    content = body if isinstance(body, bytes) else encode_body(body)
    http = await client.post(path, cast_to=httpx2.Response, content=content, stream=True, options=_RAW_STREAM_OPTIONS)
    try:
        yield http
    finally:
        await http.aclose()
