"""An editor's side of `codecoder acp`, for tests: the agent in a real child process,
driven line by line over its stdin and stdout, and every message it sends checked
against the official schema (the `agent-client-protocol` package's pydantic models).

The check is strict, because the models themselves are lenient: they ignore unknown
fields, coerce types, and replace a malformed optional field by its default (the
schema's `x-deserialize-default-on-error`). So a message conforms when it parses in
strict mode *and* dumps back to exactly what was sent: nothing dropped, salvaged or
rewritten. Responses are checked against the `*Response` model of the method they
answer, `session/update` against `SessionNotification`, `session/request_permission`
against `RequestPermissionRequest`, errors against the JSON-RPC error shape; the
`_codecoder/…` extensions are outside the schema and must be documented in docs/acp.md.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from acp import schema
from pydantic import BaseModel

DOCS = Path(__file__).resolve().parents[2] / "docs" / "acp.md"

RESPONSES: dict[str, type[BaseModel]] = {
    "initialize": schema.InitializeResponse,
    "session/new": schema.NewSessionResponse,
    "session/load": schema.LoadSessionResponse,
    "session/prompt": schema.PromptResponse,
    "session/set_mode": schema.SetSessionModeResponse,
}
"""The schema model of each method's result (the ACP methods we implement)."""
NOTIFICATIONS: dict[str, type[BaseModel]] = {"session/update": schema.SessionNotification}
REQUESTS: dict[str, type[BaseModel]] = {
    "session/request_permission": schema.RequestPermissionRequest
}

Message = dict[str, Any]
Answer = Callable[[Message], Any]
"""Answers a request of the agent (its message): the result to send back."""


class SchemaViolation(AssertionError):
    pass


def conforms(model: type[BaseModel], data: Any) -> None:
    """`data` is exactly a valid `model`: strict parse, and it dumps back unchanged."""
    try:
        parsed = model.model_validate_json(json.dumps(data), strict=True)
    except ValueError as exc:
        raise SchemaViolation(f"{model.__name__}: {exc}\n{json.dumps(data)[:2000]}") from None
    back = parsed.model_dump(mode="json", by_alias=True, exclude_unset=True)
    if back != data:
        raise SchemaViolation(
            f"{model.__name__} does not keep what was sent (an unknown field, a coerced or "
            f"salvaged value):\nsent   {json.dumps(data)[:2000]}\nparsed {json.dumps(back)[:2000]}"
        )


def documented_extension(method: str) -> None:
    if not method.startswith("_codecoder/"):
        raise SchemaViolation(f"{method!r} is neither an ACP method nor one of ours")
    if f"`{method}`" not in DOCS.read_text(encoding="utf-8"):
        raise SchemaViolation(f"the extension {method!r} is not documented in {DOCS.name}")


class AcpPeer:
    """`codecoder acp` in a child process, and the editor's end of its stdio."""

    def __init__(
        self, script: Path, *, approval: str | None = None, cwd: Path | None = None
    ) -> None:
        argv = [sys.executable, "-m", "codecoder", "acp", "--script", str(script)]
        if approval is not None:
            argv += ["--approval", approval]
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=os.environ.copy(),
        )
        self.received: list[Message] = []
        """Every message the agent sent, in order."""
        self.updates: list[Message] = []
        """The `update` of every session/update, in order."""
        self.extensions: list[Message] = []
        """Every `_codecoder/…` notification (the whole message)."""
        self.sizes: list[int] = []
        """The size in bytes of each line of `received` (its newline included)."""
        self.pace = 0.0
        """Seconds the peer spends on each `session/update` as it reads it: an editor
        that renders slowly."""
        self.reading = threading.Event()
        """Cleared, the peer reads nothing more (an editor that stalls) until it is set
        again, and the agent's writes back up behind it."""
        self.reading.set()
        self.stderr = b""
        self._inbox: queue.SimpleQueue[Message | None] = queue.SimpleQueue()
        self._methods: dict[int, str] = {}
        self._ids = iter(range(1, 1 << 30))
        self._write_lock = threading.Lock()
        self._threads = [
            threading.Thread(target=self._read_stdout, name="acp-peer-out", daemon=True),
            threading.Thread(target=self._read_stderr, name="acp-peer-err", daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    # --- sending ----------------------------------------------------------------------

    def send_raw(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        with self._write_lock:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()

    def send(self, message: Message) -> None:
        self.send_raw(json.dumps(message).encode() + b"\n")

    def request(self, method: str, params: Any) -> int:
        request_id = next(self._ids)
        self._methods[request_id] = method
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        return request_id

    def notify(self, method: str, params: Any) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    # --- receiving ----------------------------------------------------------------------

    def next(self, timeout: float = 15.0) -> Message:
        """The agent's next message, checked against the schema."""
        try:
            message = self._inbox.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"nothing from the agent within {timeout} s") from None
        if message is None:
            raise AssertionError(f"the agent closed its stdout: {self.stderr.decode()[-2000:]}")
        self.check(message)
        return message

    def response(
        self, request_id: int, *, answer: Answer | None = None, timeout: float = 15.0
    ) -> Message:
        """Read until the response to `request_id` (result or error), answering the agent's
        requests on the way with `answer` and keeping its notifications."""
        deadline = time.monotonic() + timeout
        while True:
            message = self.next(max(0.01, deadline - time.monotonic()))
            if "method" not in message and message.get("id") == request_id:
                return message
            if "method" in message and "id" in message:
                if answer is None:
                    raise AssertionError(f"an unexpected request: {message}")
                self.send({"jsonrpc": "2.0", "id": message["id"], "result": answer(message)})

    def call(self, method: str, params: Any, *, answer: Answer | None = None) -> Any:
        """A request and its result (an error response fails the test)."""
        message = self.response(self.request(method, params), answer=answer)
        assert "error" not in message, f"{method}: {message['error']}"
        return message["result"]

    def error_of(self, method: str, params: Any) -> Message:
        """A request that must fail: its error object."""
        message = self.response(self.request(method, params))
        assert "error" in message, f"{method} did not fail: {message}"
        return message["error"]

    def wait_update(self, kind: str, timeout: float = 15.0) -> Message:
        """Read until a session/update of this kind (no request may come meanwhile)."""
        deadline = time.monotonic() + timeout
        while True:
            message = self.next(max(0.01, deadline - time.monotonic()))
            if message.get("method") == "session/update":
                update = message["params"]["update"]
                if update["sessionUpdate"] == kind:
                    return update
            elif "id" in message and "method" in message:
                raise AssertionError(f"an unexpected request: {message}")

    def initialize(self, *, ask_user: bool = False) -> Any:
        capabilities: Message = {"fs": {"readTextFile": False, "writeTextFile": False}}
        if ask_user:
            capabilities["_meta"] = {"codecoder": {"askUser": True}}
        return self.call("initialize", {"protocolVersion": 1, "clientCapabilities": capabilities})

    def new_session(self, cwd: Path) -> str:
        return self.call("session/new", {"cwd": str(cwd), "mcpServers": []})["sessionId"]

    def prompt(self, session_id: str, *blocks: Message | str, answer: Answer | None = None) -> str:
        """One turn; its stopReason."""
        content = [{"type": "text", "text": b} if isinstance(b, str) else b for b in blocks]
        result = self.call(
            "session/prompt", {"sessionId": session_id, "prompt": content}, answer=answer
        )
        return result["stopReason"]

    # --- the schema ---------------------------------------------------------------------

    def check(self, message: Message) -> None:
        """One message of the agent against the schema (or the documented extensions)."""
        if message.get("jsonrpc") != "2.0":
            raise SchemaViolation(f"not JSON-RPC 2.0: {message}")
        method = message.get("method")
        if method is None:
            self._check_response(message)
        elif "id" in message:
            if not isinstance(message["id"], int | str):
                raise SchemaViolation(f"a request id must be a number or a string: {message}")
            model = REQUESTS.get(method)
            if model is not None:
                conforms(model, message.get("params"))
            else:
                documented_extension(method)
        elif method in NOTIFICATIONS:
            conforms(NOTIFICATIONS[method], message.get("params"))
            self.updates.append(message["params"]["update"])
        else:
            documented_extension(method)
            self.extensions.append(message)

    def _check_response(self, message: Message) -> None:
        if "error" in message:
            conforms(schema.AgentErrorMessage, {k: v for k, v in message.items() if k != "jsonrpc"})
            return
        if set(message) != {"jsonrpc", "id", "result"}:
            raise SchemaViolation(f"a response is id and result, or id and error: {message}")
        method = self._methods.get(message["id"])
        if method is None:
            raise SchemaViolation(f"a response to a request never sent: {message}")
        model = RESPONSES.get(method)
        if model is not None:
            conforms(model, message["result"])
        else:
            documented_extension(method)

    # --- the child --------------------------------------------------------------------------

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                message = json.loads(line)
            except ValueError:
                message = {"jsonrpc": "not JSON", "line": line.decode(errors="replace")}
            self.received.append(message)
            self.sizes.append(len(line))
            self._inbox.put(message)
            if self.pace and message.get("method") == "session/update":
                time.sleep(self.pace)
            self.reading.wait()
        self._inbox.put(None)

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for chunk in iter(lambda: self.proc.stderr.read1(65536), b""):  # type: ignore[union-attr]
            self.stderr += chunk

    def close(self, timeout: float = 10.0) -> int:
        """Close the agent's stdin (an editor going away), wait for it to end, join the
        threads; the exit status. The rest of stdout is read and checked too."""
        assert self.proc.stdin is not None
        self.reading.set()
        with contextlib.suppress(OSError):
            self.proc.stdin.close()
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError("the agent did not end when its stdin closed") from None
        finally:
            for thread in self._threads:
                thread.join(5)
        while True:
            message = self._inbox.get_nowait() if not self._inbox.empty() else None
            if message is None:
                break
            self.check(message)
        return code

    def kill(self) -> None:
        self.reading.set()
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for thread in self._threads:
            thread.join(5)
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()


@contextlib.contextmanager
def running(
    script: Path, *, approval: str | None = None, cwd: Path | None = None
) -> Iterator[AcpPeer]:
    """An AcpPeer that is closed (and checked) when the block ends, killed if it fails."""
    peer = AcpPeer(script, approval=approval, cwd=cwd)
    try:
        yield peer
        assert peer.close() == 0, peer.stderr.decode()[-2000:]
    finally:
        peer.kill()


def write_script(path: Path, *replies: Any) -> Path:
    path.write_text(json.dumps({"format": "codecoder-script/1", "replies": list(replies)}))
    return path
