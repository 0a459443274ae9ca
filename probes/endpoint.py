"""The endpoint before a run: list its models (/v1/models) and test the connection with one tiny request."""

import asyncio
import time
from collections.abc import Coroutine
from typing import Any, TypeVar
from urllib.parse import urlsplit

import httpx2
import openai
from pydantic import BaseModel, ConfigDict, SecretStr

from i18n import Translate, identity
from probes.client import classify_error, close_quietly, make_client, make_http, send_request
from probes.config import ApiKind, RunSettings, Timeouts, redact_url
from probes.errors import EndpointResponseError, EndpointUnreachableError, ProbeSettingsError
from probes.models import CONNECTION_KINDS
from probes.safety import host_refusal, parse_allowed_hosts
from probes.wording import (
    CANNOT_CONNECT,
    CONNECT_TIMEOUT,
    MODELS_HTTP,
    MODELS_HTTP_AUTH,
    MODELS_LATE,
    NOT_A_MODEL_LIST,
    note_text,
)
from probes.workloads import Prompt
from settings import get_settings

T = TypeVar("T")
CHECK_PROMPT = Prompt("Say OK.")


class ConnectionReport(BaseModel):
    """The result of a connection test, ready to show."""

    model_config = ConfigDict(frozen=True)

    ok: bool
    endpoint: str
    message: str
    models: list[str] | None = None  # None: the server does not list its models
    models_ms: float | None = None
    ttft_ms: float | None = None
    http_status: int | None = None


def _settings(
    base_url: str, api_key: str | SecretStr | None, model: str, timeouts: Timeouts | None, api: ApiKind = ApiKind.CHAT
) -> RunSettings:
    key = SecretStr(api_key) if isinstance(api_key, str) else api_key
    try:
        settings = RunSettings(
            base_url=base_url,
            api_key=key,
            model=model or "-",
            api=api,
            max_tokens=1,
            timeouts=timeouts or Timeouts(connect_s=5.0, ttft_s=30.0, stall_s=30.0),
            requests_per_level=1,
            concurrency=(1,),
        )
    except ValueError as exc:
        raise ProbeSettingsError(f"invalid endpoint: {exc}") from exc
    refusal = host_refusal(
        urlsplit(settings.base_url).hostname or "", parse_allowed_hosts(get_settings().probe_allowed_hosts)
    )
    if refusal:
        raise ProbeSettingsError(refusal)
    return settings


async def list_models(
    base_url: str,
    api_key: str | SecretStr | None = None,
    *,
    timeouts: Timeouts | None = None,
    transport: httpx2.AsyncBaseTransport | None = None,
) -> list[str]:
    """Model ids from /v1/models; EndpointUnreachableError or EndpointResponseError when that fails."""
    settings = _settings(base_url, api_key, "-", timeouts)
    http = make_http(settings, 1, transport)
    client = make_client(settings, http)
    try:
        page = await asyncio.wait_for(client.models.list(), settings.timeouts.ttft_s)
        return sorted(m.id for m in page.data)
    except openai.APIStatusError as exc:
        template = MODELS_HTTP_AUTH if exc.status_code in (401, 403) else MODELS_HTTP
        raise EndpointResponseError(template.format(endpoint=settings.endpoint, status=exc.status_code)) from None
    except (TimeoutError, openai.APITimeoutError) as exc:
        kind, _ = classify_error(exc)
        if kind in CONNECTION_KINDS and not isinstance(exc, TimeoutError):
            raise EndpointUnreachableError(
                CANNOT_CONNECT.format(endpoint=settings.endpoint, reason=CONNECT_TIMEOUT)
            ) from None
        raise EndpointResponseError(MODELS_LATE.format(endpoint=settings.endpoint)) from None
    except (openai.APIConnectionError, httpx2.HTTPError, OSError) as exc:
        kind, message = classify_error(exc)
        if kind in CONNECTION_KINDS:
            raise EndpointUnreachableError(CANNOT_CONNECT.format(endpoint=settings.endpoint, reason=message)) from None
        raise EndpointResponseError(f"{settings.endpoint}: {message}") from None
    except (openai.APIResponseValidationError, ValueError, TypeError) as exc:
        raise EndpointResponseError(NOT_A_MODEL_LIST.format(endpoint=settings.endpoint, error=exc)) from None
    finally:
        await close_quietly(client)


async def check_connection(
    base_url: str,
    api_key: str | SecretStr | None = None,
    model: str | None = None,
    *,
    api: ApiKind = ApiKind.CHAT,
    timeouts: Timeouts | None = None,
    transport: httpx2.AsyncBaseTransport | None = None,
    tr: Translate = identity,
) -> ConnectionReport:
    """List the models and, with a model, send one streamed 1-token request; never raises for a bad endpoint.

    The report's message is worded by tr (English by default: the CLI prints it).
    """
    endpoint = redact_url(base_url)
    models: list[str] | None = None
    models_ms: float | None = None
    notes: list[str] = []
    start = time.perf_counter()
    try:
        models = await list_models(base_url, api_key, timeouts=timeouts, transport=transport)
        models_ms = (time.perf_counter() - start) * 1000
    except EndpointUnreachableError as exc:
        return ConnectionReport(ok=False, endpoint=endpoint, message=note_text(str(exc), tr))
    except EndpointResponseError as exc:
        notes.append(tr("no model list ({reason})").format(reason=note_text(str(exc), tr)))
    if not model:
        ok = models is not None
        message = (
            tr("reachable; {count} model(s) served").format(count=len(models))
            if models is not None
            else "; ".join(notes)
        )
        return ConnectionReport(ok=ok, endpoint=endpoint, message=message, models=models, models_ms=models_ms)
    if models is not None and model not in models:
        shown = ", ".join(models[:10]) or tr("none")
        return ConnectionReport(
            ok=False,
            endpoint=endpoint,
            models=models,
            models_ms=models_ms,
            message=tr("model {model} is not served here; served: {served}").format(model=repr(model), served=shown),
        )
    settings = _settings(base_url, api_key, model, timeouts, api)
    return await _test_request(settings, transport, endpoint, models, models_ms, notes, tr)


async def _test_request(
    settings: RunSettings,
    transport: httpx2.AsyncBaseTransport | None,
    endpoint: str,
    models: list[str] | None,
    models_ms: float | None,
    notes: list[str],
    tr: Translate,
) -> ConnectionReport:
    """One streamed 1-token request to the model: check_connection's report, with what the model list gave."""
    http = make_http(settings, 1, transport)
    client = make_client(settings, http)
    try:
        sample = await send_request(
            client, settings, CHECK_PROMPT, level_index=0, concurrency=1, index=0, level_start_s=time.perf_counter()
        )
    finally:
        await close_quietly(client)
    if sample.ok:
        message = (
            tr("OK: first token after {ttft} ms").format(ttft=f"{sample.ttft_ms:.0f}")
            if sample.ttft_ms is not None
            else tr("OK")
        )
        return ConnectionReport(
            ok=True,
            endpoint=endpoint,
            message="; ".join([message, *notes]),
            models=models,
            models_ms=models_ms,
            ttft_ms=sample.ttft_ms,
            http_status=sample.http_status,
        )
    return ConnectionReport(
        ok=False,
        endpoint=endpoint,
        models=models,
        models_ms=models_ms,
        http_status=sample.http_status,
        message=tr("a test request failed ({kind}): {error}").format(kind=sample.error_kind, error=sample.error),
    )


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine from synchronous code (a page script), on a fresh event loop in this thread."""
    return asyncio.run(coro)
