"""One mapping place: statuses, bodies, stream errors and transport failures."""

from __future__ import annotations

import pytest

from codecoder.providers import errors, pool

OPENAI_CONTEXT = (
    b'{"error": {"message": "This model\'s maximum context length is 128000 tokens. However, '
    b'your messages resulted in 130000 tokens.", "type": "invalid_request_error", '
    b'"param": "messages", "code": "context_length_exceeded"}}'
)
ANTHROPIC_CONTEXT = (
    b'{"type": "error", "error": {"type": "invalid_request_error", '
    b'"message": "prompt is too long: 208310 tokens > 200000 maximum"}}'
)
LLAMA_CPP_CONTEXT = (
    b'{"error": {"code": 400, "message": "the request exceeds the available context size, '
    b'try increasing it", "type": "exceed_context_size_error"}}'
)


@pytest.mark.parametrize(
    ("status", "body", "kind", "retryable"),
    [
        (401, b'{"error": {"message": "Incorrect API key provided"}}', "auth", False),
        (403, b"forbidden", "auth", False),
        (429, b'{"error": {"message": "Rate limit reached"}}', "rate_limit", True),
        (
            429,
            b'{"error": {"code": "insufficient_quota", "message": "quota"}}',
            "rate_limit",
            False,
        ),
        (529, b'{"type": "error", "error": {"type": "overloaded_error"}}', "overloaded", True),
        (503, b"<html>Service Unavailable</html>", "overloaded", True),
        (500, b'{"error": "boom"}', "server", True),
        (502, b"<html><body>Bad Gateway</body></html>", "server", True),
        (400, OPENAI_CONTEXT, "context_length", False),
        (400, ANTHROPIC_CONTEXT, "context_length", False),
        (400, LLAMA_CPP_CONTEXT, "context_length", False),
        (413, b'{"error": {"type": "request_too_large"}}', "context_length", False),
        (400, b'{"error": {"message": "Unknown parameter: foo"}}', "bad_request", False),
        (404, b'{"error": "model \\"qwen\\" not found"}', "bad_request", False),
    ],
)
def test_status_mapping(status: int, body: bytes, kind: str, retryable: bool) -> None:
    error = errors.from_status(status, body)
    assert (error.kind, error.retryable) == (kind, retryable)
    assert f"HTTP {status}" in error.message and "\n" not in error.message


def test_the_servers_own_words_are_kept_on_one_line() -> None:
    error = errors.from_status(400, b'{"error": "model \\"qwen\\" not found,\\n try pulling"}')
    assert error.message == 'request rejected (HTTP 400): model "qwen" not found, try pulling'
    long = errors.from_status(500, b"x" * 5000)
    assert len(long.message) < 400


def test_an_html_body_gives_its_first_line() -> None:
    error = errors.from_status(502, b"<html>\n<body>Bad Gateway</body>\n</html>")
    assert error.message == "server error (HTTP 502): <html>"


@pytest.mark.parametrize(
    ("error", "kind", "retryable"),
    [
        ({"type": "overloaded_error", "message": "Overloaded"}, "overloaded", True),
        ({"type": "api_error", "message": "Internal"}, "server", True),
        ({"code": "rate_limit_exceeded", "message": "slow down"}, "rate_limit", True),
        ({"code": "context_length_exceeded", "message": "too long"}, "context_length", False),
        (
            {"type": "invalid_request_error", "message": "prompt is too long"},
            "context_length",
            False,
        ),
        ({"code": "invalid_prompt", "message": "flagged"}, "bad_request", False),
        ("a bare string", "server", True),
    ],
)
def test_stream_error_mapping(error: object, kind: str, retryable: bool) -> None:
    mapped = errors.from_stream_error(error)
    assert (mapped.kind, mapped.retryable) == (kind, retryable)


@pytest.mark.parametrize(
    ("exc", "start"),
    [
        (pool.ConnectFailed("h:80: Connection refused"), "cannot connect to http://h"),
        (
            pool.ConnectRefused("connection refused by h:80", loopback=False),
            "connection refused by h:80",
        ),
        (pool.ConnectTimedOut("timed out"), "timed out connecting to http://h"),
        (pool.ReadTimedOut("timed out"), "timed out waiting for http://h"),
        (pool.ConnectionLost("peer closed connection"), "connection lost"),
        (pool.TransportError("reset"), "network error"),
    ],
)
def test_transport_failures_are_retryable_network_errors(
    exc: pool.TransportError, start: str
) -> None:
    error = errors.from_exception(exc, "http://h")
    assert error.kind == "network" and error.retryable
    assert error.message.startswith(start)


def test_what_a_retry_cannot_mend_is_final() -> None:
    untrusted = errors.from_exception(pool.TLSFailed("h: certificate not trusted"), "https://h")
    assert (untrusted.kind, untrusted.retryable) == ("network", False)
    assert "certificate not trusted" in untrusted.message
    bad = errors.from_exception(pool.BadURL("bad URL 'h'"), "h")
    assert (bad.kind, bad.retryable) == ("config", False)
    bomb = errors.from_exception(pool.BodyTooLarge("inflates past 128 MiB"), "h")
    assert (bomb.kind, bomb.retryable) == ("bad_response", False)


def test_a_label_marks_a_cut_stream_as_final() -> None:
    cut = errors.with_label(errors.stream_incomplete(), "openai", cut=True)
    assert cut.message.startswith("openai: the reply was cut off mid-stream")
    assert not cut.retryable
    whole = errors.with_label(errors.stream_incomplete(), "openai")
    assert whole.retryable and whole.message.startswith("openai: ")
