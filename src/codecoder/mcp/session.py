"""Everything that touches the MCP SDK: one server's run (connect, initialize, list its
tools, serve until told to stop or until it goes away) and one tool call (cancelled on
the server's side by the SDK's `notifications/cancelled`). Imported on the loop thread
only, so its ~1 s of imports (pydantic models) never lands on the kernel's threads.

The runner reports to its `Slot` (manager.py) and never raises: a failure becomes the
slot's status line, with the server's stderr tail.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import json
import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, Protocol

import anyio
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.shared.exceptions import MCPError

from codecoder import __version__
from codecoder.mcp.config import ServerSpec
from codecoder.mcp.entry import Listing, ToolEntry
from codecoder.mcp.process import ChildProcess
from codecoder.mcp.stdio import SKIPPED, Streams, open_stdio

if TYPE_CHECKING:
    from codecoder.mcp.manager import CallHandle

for _name in ("mcp", "client", "httpx2", "httpcore2"):
    # The SDK logs protocol trouble as warnings, which Python's last-resort handler would
    # print over the terminal; what matters reaches the user as a status line instead.
    logging.getLogger(_name).addHandler(logging.NullHandler())
    logging.getLogger(_name).propagate = False

CLIENT = types.Implementation(name="codecoder", version=__version__)
MAX_PAGES = 100
MAX_RESULT = 200_000
"""Characters of one tool result the model gets; the rest is cut with a note."""


class Slot(Protocol):
    """The manager's view of one server (manager.Slot), as the runner reports to it.
    Every report names the run's `generation`: a report of an older run is ignored."""

    spec: ServerSpec

    def stderr(self, generation: int, data: bytes) -> None: ...
    def ready(
        self, generation: int, connection: Connection, tools: tuple[ToolEntry, ...]
    ) -> None: ...
    def relisted(self, generation: int, tools: tuple[ToolEntry, ...]) -> None: ...
    def failed(self, generation: int, reason: str) -> None: ...
    def ended(self, generation: int, how: str, *, crash: bool = True) -> None: ...
    def leaving(self) -> bool: ...
    def tap(self, direction: str, line: bytes) -> None: ...


class _Events:
    """The stdio transport's events, for one run."""

    def __init__(self, slot: Slot, generation: int, over: asyncio.Event) -> None:
        self.slot, self.generation, self.over = slot, generation, over
        self.why: str | None = None
        self.crash = True
        self.ready = False

    def stderr(self, data: bytes) -> None:
        self.slot.stderr(self.generation, data)

    def gone(self, why: str, *, crash: bool = True) -> None:
        if self.why is None:
            self.why, self.crash = why, crash
        self.over.set()

    def kill_now(self) -> bool:
        return not self.ready and self.slot.leaving()

    def tap(self, direction: str, line: bytes) -> None:
        self.slot.tap(direction, line)


async def run(slot: Slot, generation: int, over: asyncio.Event, child: ChildProcess | None) -> None:
    """One run of a server, from its spawned `child` (None: an HTTP server) to its end,
    reported to `slot` as it goes; never raises but for cancellation. `over` ends the
    run: the manager sets it to stop the server, the transport when the server goes away."""
    spec = slot.spec
    events = _Events(slot, generation, over)
    error: BaseException | None = None
    try:
        async with (
            _connect(spec, events, child) as streams,
            _session(streams, slot, generation) as session,
        ):
            with anyio.fail_after(spec.startup_timeout):
                await session.initialize()
                listed = await list_tools(session)
            events.ready = True
            slot.ready(generation, Connection(session), listed)
            await over.wait()
    except Exception as exc:  # the SDK's or the transport's failure, groups included
        error = _leaf(exc)
    how = child.how() if child is not None else ""
    if events.ready:
        if not events.crash and events.why is not None:  # it exited because we closed it
            slot.ended(generation, events.why, crash=False)
        else:
            slot.ended(
                generation, how if how not in ("", "running") else events.why or _describe(error)
            )
        return
    if isinstance(error, TimeoutError):
        reason = f"no answer to initialize within {spec.startup_timeout:g} s"
    elif events.why is not None and (error is None or _closed(error)):
        reason = events.why  # "it exited (exit status 1)": better than "Connection closed"
        if how not in ("", "running") and "exited" not in reason:
            reason = f"it exited ({how})"  # its stdout closed as it exited
    else:
        reason = _describe(error)
    slot.failed(generation, reason)


def _closed(error: BaseException) -> bool:
    return isinstance(error, MCPError) and error.error.code == types.CONNECTION_CLOSED


@contextlib.asynccontextmanager
async def _connect(
    spec: ServerSpec, events: _Events, child: ChildProcess | None
) -> AsyncIterator[Streams]:
    if child is not None:
        async with open_stdio(child, events) as streams:
            yield streams
        return
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    client = create_mcp_http_client(headers=dict(spec.headers) or None)
    async with client, streamable_http_client(spec.url or "", http_client=client) as streams:
        yield streams  # type: ignore[misc]


@contextlib.asynccontextmanager
async def _session(streams: Streams, slot: Slot, generation: int) -> AsyncIterator[ClientSession]:
    read, write = streams
    holder: list[ClientSession] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification) and holder:
            with contextlib.suppress(Exception):  # a failed re-listing keeps the old list
                slot.relisted(generation, await list_tools(holder[0]))

    async with ClientSession(
        read, write, client_info=CLIENT, message_handler=on_message
    ) as session:
        holder.append(session)
        yield session


async def list_tools(session: ClientSession) -> tuple[ToolEntry, ...]:
    """The server's tools, page by page (at most MAX_PAGES), each capped as it comes in
    and no more of them than entry.Listing keeps: once that is full, no further page is
    asked for. A page (one line of up to 32 MiB) is let go before the next is read."""
    listing = Listing()
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await session.list_tools(params=params)
        for tool in page.tools:
            listing.add(tool.name, tool.description or tool.title or "", tool.input_schema)
        cursor = page.next_cursor
        del page
        if not cursor or listing.full:
            break
    return tuple(listing.tools)


def _describe(error: BaseException | None) -> str:
    if error is None:
        return "it went away"
    if isinstance(error, FileNotFoundError):
        return f"cannot run it: {error.strerror}: {error.filename}"
    if isinstance(error, OSError) and error.strerror:
        return f"cannot run it: {error.strerror}"
    if isinstance(error, MCPError):
        return f"{error.error.message} (MCP error {error.error.code})"
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def _leaf(error: BaseException) -> BaseException:
    """The first error inside (nested) exception groups, which anyio's task groups make."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return error


class CallResult:
    """A call's end as plain data: the text for the model, whether the tool reported an
    error, and whether the connection was lost (the server died) or the call timed out."""

    __slots__ = ("error", "lost", "text")

    def __init__(self, text: str, *, error: bool = False, lost: bool = False) -> None:
        self.text, self.error, self.lost = text, error, lost


class Connection:
    """A live session with a ready server, used from the loop thread only."""

    def __init__(self, session: ClientSession) -> None:
        self.session = session

    async def call(
        self, tool: str, args: dict[str, Any], timeout: float, handle: CallHandle
    ) -> CallResult | None:
        """Call `tool`; None when the handle cancelled it (the SDK then sends the server
        `notifications/cancelled` for the request)."""
        with anyio.CancelScope() as scope:
            if not handle.attach(scope):
                return None

            async def on_progress(
                progress: float, total: float | None, message: str | None
            ) -> None:
                of = f"/{total:g}" if total is not None else ""
                handle.progress(f"progress {progress:g}{of}{f': {message}' if message else ''}\n")

            try:
                result = await self.session.call_tool(
                    tool, args, read_timeout_seconds=timeout, progress_callback=on_progress
                )
            except MCPError as exc:
                code = exc.error.code
                if code == types.CONNECTION_CLOSED:
                    return CallResult(exc.error.message, error=True, lost=True)
                if exc.error.data == SKIPPED:  # the transport's answer, not the server's
                    return CallResult(exc.error.message, error=True)
                if code == types.REQUEST_TIMEOUT:
                    return CallResult(f"no answer within {timeout:g} s (tool_timeout)", error=True)
                return CallResult(f"MCP error {code}: {exc.error.message}", error=True)
            except anyio.get_cancelled_exc_class():
                raise
            except Exception as exc:  # a result the SDK could not validate, a broken stream
                return CallResult(f"the call failed: {_describe(exc)}", error=True)
            if not isinstance(result, types.CallToolResult):
                return CallResult(
                    "the server answered with something other than a result", error=True
                )
            return CallResult(result_text(result), error=bool(result.is_error))
        return None


def result_text(result: types.CallToolResult) -> str:
    """A tool result as text: text as it is; images, audio and binary resources described
    (the kernel's tool results carry text only); text resources with their URI; structured
    content as JSON when there is nothing else. Cut at MAX_RESULT characters."""
    parts = [_block(block) for block in result.content]
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False, indent=2))
    text = "\n".join(parts) if parts else "(the tool returned no content)"
    if len(text) > MAX_RESULT:
        text = (
            text[:MAX_RESULT]
            + f"\n[cut: {len(text):,} characters; the first {MAX_RESULT:,} are shown]"
        )
    return text


def _block(block: Any) -> str:
    if isinstance(block, types.TextContent):
        return block.text
    if isinstance(block, types.ImageContent | types.AudioContent):
        kind = "image" if isinstance(block, types.ImageContent) else "audio"
        size = _size(block.data)
        return f"[{kind}: {block.mime_type}, {size}; not shown: results reach the model as text]"
    if isinstance(block, types.EmbeddedResource):
        res = block.resource
        mime = f" ({res.mime_type})" if res.mime_type else ""
        if isinstance(res, types.TextResourceContents):
            return f"[resource {res.uri}{mime}]\n{res.text}"
        return f"[resource {res.uri}{mime}: {_size(res.blob)} of binary data; not shown]"
    if isinstance(block, types.ResourceLink):
        about = f": {block.description}" if block.description else ""
        mime = f" ({block.mime_type})" if block.mime_type else ""
        return f"[resource link {block.name} {block.uri}{mime}{about}]"
    return f"[content of type {getattr(block, 'type', '?')!r}; not shown]"


def _size(data: str) -> str:
    try:
        count = len(base64.b64decode(data, validate=False))
    except (binascii.Error, ValueError):
        count = len(data)
    return f"{count:,} bytes"
