"""Model providers: implementations of `kernel.ports.ProviderClient` (DESIGN.md §4).

How the package is cut, so that vendor detail stays in one module each:

- `errors`     the one place where HTTP statuses, transport failures and wire error bodies
               become `ProviderError` (its docstring draws the kinds).
- `sse`        an incremental Server-Sent Events decoder over raw bytes.
- `http`       the one HTTP path: a streaming POST with retries, backoff and
               cancellation that wakes a blocked socket read, over `pool` (a thin pool
               over the standard library's http.client: TLS and its CA certificates,
               proxies, keep-alive, redirects).
- `wire`       what every adapter provides (`WireFormat`, `StreamParser`), shared helpers.
- `accumulate` the pure fold of streamed tool-call pieces, shared by the adapters.
- `openai_chat`, `openai_responses`, `anthropic`
               pure translators: `build_body(request, model, options)` (kernel history →
               wire JSON) and a `StreamParser` (wire SSE event → `StreamEvent`s).
- `client`     `WireClient`: one wire format + one endpoint + the HTTP path = a provider.
- `pricing`    the per-model price table and `Usage.cost`.
- `registry`   `provider/model` → a configured `WireClient`.
- `scripted`   the scripted fake (replays a JSON script).

Importing `registry` stays cheap: the HTTP path (http.client, which brings ssl and email)
loads when a client is made; a TLS context is built on the first https request.
"""
