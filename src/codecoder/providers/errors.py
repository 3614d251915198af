"""The one place where a provider failure becomes a `ProviderError` (STYLE.md).

Every failure a provider can meet lands on one kind, with a one-line message fit for the
user (the server's own words when it gave any, cut to one line):

    ProviderError.kind
    ├── auth            401 / 403: the key is wrong, revoked or lacks access
    ├── rate_limit      429 (retried; an exhausted quota is not)
    ├── overloaded      503 / 529, Anthropic `overloaded_error` (retried)
    ├── server          other 5xx, 408 / 409, `api_error` in a stream (retried)
    ├── network         connect / read / write failures and timeouts (retried while nothing
    │                   of the reply reached us); a stream cut mid-way (not retried)
    ├── bad_response    a reply we cannot read: not an event stream, not JSON, an event
    │                   past 16 MiB, a compressed body that inflates past 128 MiB
    ├── context_length  the prompt does not fit the model's window (compaction hooks in)
    ├── bad_request     any other 4xx
    └── config          a missing key or an unknown provider (raised by the registry)

`retryable` says whether a retry may help; the HTTP layer retries only while nothing of
the reply has been handed on (see `providers.http`).
"""

from __future__ import annotations

from typing import Any, cast

import msgspec

from codecoder.kernel.ports import ProviderError, ProviderErrorKind
from codecoder.providers import pool

_MAX_MESSAGE = 300

# Phrases servers use for "the prompt is too long", lower-cased (OpenAI, Anthropic, vLLM,
# llama.cpp, OpenRouter, DeepSeek, Groq wordings).
_CONTEXT_PHRASES = (
    "context_length_exceeded",
    "prompt is too long",
    "maximum context length",
    "context length",
    "context window",
    "exceed_context_size",
    "exceeds the available context",
    "input is too long",
    "too many tokens",
    "reduce the length of the messages",
)

_STREAM_ERROR_KINDS: dict[str, tuple[ProviderErrorKind, bool]] = {
    "overloaded_error": ("overloaded", True),
    "api_error": ("server", True),
    "server_error": ("server", True),
    "internal_server_error": ("server", True),
    "rate_limit_error": ("rate_limit", True),
    "rate_limit_exceeded": ("rate_limit", True),
    "insufficient_quota": ("rate_limit", False),
    "authentication_error": ("auth", False),
    "permission_error": ("auth", False),
    "invalid_api_key": ("auth", False),
    "context_length_exceeded": ("context_length", False),
    "request_too_large": ("context_length", False),
    "invalid_request_error": ("bad_request", False),
    "invalid_prompt": ("bad_request", False),
    "not_found_error": ("bad_request", False),
}


def one_line(text: str) -> str:
    """Collapse whitespace and cut, so a message never spans lines or screens."""
    line = " ".join(text.split())
    return line if len(line) <= _MAX_MESSAGE else line[: _MAX_MESSAGE - 1] + "…"


def is_context_length(*texts: str | None) -> bool:
    joined = " ".join(text for text in texts if text).lower()
    return any(phrase in joined for phrase in _CONTEXT_PHRASES)


def error_details(body: bytes) -> tuple[str, str]:
    """(type-or-code, message) from an error body in any of the shapes servers use:
    `{"error": {"type"|"code", "message"}}` (OpenAI, Anthropic, OpenRouter),
    `{"error": "text"}` (Ollama), `{"message": …}`; else the body's first line."""
    try:
        data = msgspec.json.decode(body)
    except msgspec.DecodeError:
        text = body.decode("utf-8", "replace").strip()
        return "", one_line(text.splitlines()[0]) if text else ""
    if isinstance(data, dict):
        error: Any = cast(dict[str, Any], data).get("error", data)
        if isinstance(error, str):
            return "", one_line(error)
        if isinstance(error, dict):
            return _code_of(error), one_line(str(error.get("message") or ""))
    return "", one_line(str(data))


def _code_of(error: dict[str, Any]) -> str:
    for key in ("code", "type"):
        value = error.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def from_status(status: int, body: bytes) -> ProviderError:
    """An HTTP error answer (status >= 400) as a ProviderError."""
    code, detail = error_details(body)
    kind, retryable = _status_kind(status, code, detail)
    label = _STATUS_WORDS.get(kind, "request failed")
    message = f"{label} (HTTP {status})" + (f": {detail}" if detail else "")
    return ProviderError(kind, message, retryable=retryable)


_STATUS_WORDS: dict[str, str] = {
    "auth": "authentication failed",
    "rate_limit": "rate limited",
    "overloaded": "server overloaded",
    "server": "server error",
    "context_length": "prompt too long for the model's context window",
    "bad_request": "request rejected",
}


def _status_kind(status: int, code: str, detail: str) -> tuple[ProviderErrorKind, bool]:
    if status in (401, 403):
        return "auth", False
    if status == 429:
        return ("rate_limit", False) if code == "insufficient_quota" else ("rate_limit", True)
    if status in (503, 529) or code == "overloaded_error":
        return "overloaded", True
    if status >= 500 or status in (408, 409):
        return "server", True
    if status == 413 or is_context_length(code, detail):
        return "context_length", False
    return "bad_request", False


def from_stream_error(error: object) -> ProviderError:
    """An error delivered inside the event stream (Anthropic `error` event, OpenAI
    `{"error": …}` chunk, Responses `error` / `response.failed`)."""
    if not isinstance(error, dict):
        return ProviderError("server", f"stream error: {one_line(str(error))}", retryable=True)
    fields = cast(dict[str, Any], error)
    code = _code_of(fields)
    detail = one_line(str(fields.get("message") or code or "unknown error"))
    if is_context_length(code, detail):
        return ProviderError("context_length", f"prompt too long: {detail}")
    kind, retryable = _STREAM_ERROR_KINDS.get(code, ("server", True))
    return ProviderError(kind, f"{code or 'error'}: {detail}", retryable=retryable)


def bad_response(what: str) -> ProviderError:
    return ProviderError("bad_response", one_line(what))


def stream_incomplete() -> ProviderError:
    """The body ended (cleanly, from the server's side) before the reply's final event."""
    return ProviderError(
        "network", "the reply stream ended before the reply was complete", retryable=True
    )


def from_exception(exc: pool.TransportError, url: str) -> ProviderError:
    """A transport failure. Retryable while nothing reached the client, except what a
    retry cannot mend: a bad URL or header, a certificate that does not verify."""
    detail = one_line(str(exc)) or type(exc).__name__
    if isinstance(exc, pool.BadURL):
        return ProviderError("config", detail)
    if isinstance(exc, pool.BodyTooLarge):
        return bad_response(detail)
    if isinstance(exc, pool.TLSFailed):
        return ProviderError("network", f"cannot connect to {url}: {detail}")
    if isinstance(exc, pool.ConnectTimedOut):
        message = f"timed out connecting to {url}"
    elif isinstance(exc, pool.ConnectRefused):
        message = detail  # "connection refused by host:port": the URL adds nothing
    elif isinstance(exc, pool.ConnectFailed):
        message = f"cannot connect to {url}: {detail}"
    elif isinstance(exc, pool.ReadTimedOut):
        message = f"timed out waiting for {url}"
    elif isinstance(exc, pool.ConnectionLost):
        message = f"connection lost: {detail}"
    else:
        message = f"network error: {detail}"
    return ProviderError("network", message, retryable=True)


def with_label(
    error: ProviderError, label: str, *, cut: bool = False, tries: int = 1
) -> ProviderError:
    """The final form of an error: its message prefixed with the provider's name and, after
    retries, how many tries were made. `cut` marks a failure after part of the reply was
    delivered: never retryable."""
    message = f"{label}: {error.message}"
    if cut and error.kind == "network":
        message = f"{label}: the reply was cut off mid-stream ({error.message})"
    if tries > 1:
        message += f" (gave up after {tries} tries)"
    return ProviderError(error.kind, message, retryable=error.retryable and not cut)
