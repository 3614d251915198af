"""`WireClient`: a `ProviderClient` made of one wire format, one endpoint and the HTTP path.

All three real adapters share it; what differs between them is the `WireFormat` (body,
parser, path, auth headers) and the settings the registry resolved (base URL, key, model,
options, price).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from types import TracebackType
from typing import TYPE_CHECKING

import msgspec

from codecoder import __version__
from codecoder.kernel.cancel import CancelToken
from codecoder.kernel.events import Usage
from codecoder.kernel.ports import ProviderClient, ProviderRequest, StreamEvent
from codecoder.providers.http import HttpClient
from codecoder.providers.pricing import Price
from codecoder.providers.wire import Options, WireCache, WireFormat

_encoder = msgspec.json.Encoder()


class WireClient:
    def __init__(
        self,
        *,
        provider: str,
        model: str,
        wire: WireFormat,
        http: HttpClient,
        api_key: str | None = None,
        headers: Mapping[str, str] | None = None,
        options: Options | None = None,
        price: Price | None = None,
    ) -> None:
        self.provider = provider
        self.model = model
        self.wire = wire
        self.http = http
        self.options: Options = dict(options or {})
        self.price = price
        self._cache = WireCache()
        self.headers = {
            "Content-Type": "application/json",
            "Accept": "text/event-stream",
            "User-Agent": f"codecoder/{__version__}",
            **wire.auth_headers(api_key),
            **(headers or {}),
        }

    @property
    def spec(self) -> str:
        return f"{self.provider}/{self.model}"

    def __repr__(self) -> str:
        return f"WireClient({self.spec!r}, wire={self.wire.name!r}, url={self.http.base_url!r})"

    def request_body(self, request: ProviderRequest) -> bytes:
        body = self.wire.build_body(request, self.model, self.options, self._cache)
        return _encoder.encode(body)

    def stream(self, request: ProviderRequest, cancel: CancelToken) -> Iterator[StreamEvent]:
        events = self.http.stream(
            self.wire.path,
            self.request_body(request),
            headers=self.headers,
            cancel=cancel,
            new_parser=self.wire.new_parser,
            label=self.provider,
        )
        price = self.price
        if price is None:
            yield from events
            return
        for event in events:
            yield price.apply(event) if type(event) is Usage else event

    def close(self) -> None:
        """Close pooled connections (the client stays usable: it reconnects on demand)."""
        self.http.close()

    def __enter__(self) -> WireClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


if TYPE_CHECKING:
    _satisfies_the_port: type[ProviderClient] = WireClient
