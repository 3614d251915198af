"""TypedTool: a tool whose arguments are a msgspec struct.

msgspec rather than pydantic: building a model and its JSON schema costs a few ms here
against ~280 ms for pydantic, and start-up time counts (docs/benchmarks.md). The struct's
docstring and field defaults become the JSON schema the model sees; what the model sends
is validated against the same struct, after its aliases and coercions (tools/arguments.py),
and a mismatch is a ToolError that teaches, never a crash.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from functools import cache
from typing import Any, ClassVar, Generic, TypeVar

import msgspec

from codecoder.kernel.messages import ToolResult
from codecoder.kernel.ports import Risk, Tool, ToolContext, ToolFailure
from codecoder.tools.arguments import explain, renamed, signature, unknown_fields, without_nulls

A = TypeVar("A", bound=msgspec.Struct)


@cache
def json_schema(args_type: type[msgspec.Struct]) -> dict[str, Any]:
    """The struct's schema with every `$ref` written in place: providers want one plain
    object schema (nested structs included), not a schema with `$defs`."""
    (schema,), components = msgspec.json.schema_components([args_type])
    body = _inline(schema, components)
    body.pop("description", None)
    return body


def _inline(node: Any, components: dict[str, Any]) -> Any:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str):
            target = dict(components[ref.rsplit("/", 1)[-1]])
            target.pop("title", None)
            return _inline(target, components)
        return {key: _inline(value, components) for key, value in node.items()}
    if isinstance(node, list):
        return [_inline(value, components) for value in node]
    return node


class TypedTool(ABC, Generic[A]):
    """Subclasses set `name`, `description`, `risk` and `args_type` as plain class
    attributes (`name = "read_file"`) and implement `call`."""

    name: str
    description: str
    risk: Risk
    args_type: ClassVar[type[msgspec.Struct]]
    aliases: ClassVar[Mapping[str, str]] = {}
    """Other agents' names for this tool's fields (`file_path` → `path`), renamed before
    validation; the schema offers only ours (docs/tools.md lists them)."""

    @property
    def parameters(self) -> dict[str, Any]:
        return json_schema(self.args_type)

    def validate(self, args: dict[str, Any]) -> dict[str, Any]:
        """The fields the model gave, as `run` will read them, so that the permission
        policy judges what runs and not what was typed. A field of the struct that
        `parameters` does not offer is unknown here: the model was not told of it."""
        given = self._prepared(args, self.parameters)
        built: dict[str, Any] = msgspec.to_builtins(self._converted(given))
        return {key: built[key] for key in given if key in built}

    def parse(self, args: dict[str, Any]) -> A:
        """The struct `call` reads: of what `validate` gave, fields not offered to the
        model included (edit_file's `near_miss`)."""
        return self._converted(self._prepared(args, json_schema(self.args_type)))

    def adapt(self, args: dict[str, Any]) -> dict[str, Any]:
        """Reshape what other agents send in a form of their own (a command as a list)
        into ours; raise ValueError with what is wrong. The default changes nothing."""
        return args

    def _prepared(self, args: dict[str, Any], known: dict[str, Any]) -> dict[str, Any]:
        """`args` renamed, without nulls, adapted; a field `known` lacks is invalid."""
        schema = json_schema(self.args_type)
        try:
            prepared = self.adapt(without_nulls(renamed(args, self.aliases), schema))
        except ValueError as exc:
            raise self._invalid(str(exc)) from exc
        problem = unknown_fields(prepared, known, self.aliases)
        if problem is not None:
            raise self._invalid(problem)
        return prepared

    def _converted(self, args: dict[str, Any]) -> A:
        try:
            return msgspec.convert(args, type=self.args_type, strict=False)  # type: ignore[return-value]
        except msgspec.ValidationError as exc:
            raise self._invalid(explain(exc, json_schema(self.args_type))) from exc

    def _invalid(self, problem: str) -> ToolFailure:
        text = (
            f"invalid arguments for {self.name}: {problem}\n{signature(self.name, self.parameters)}"
        )
        return ToolFailure("invalid_args", text)

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return self.call(self.parse(args), ctx)

    @abstractmethod
    def call(self, args: A, ctx: ToolContext) -> ToolResult:
        """Run with validated arguments; raise ToolFailure when the tool cannot run."""


class ToolWrapper:
    """A tool that runs `tool` with something around it (checkpoints, hooks): it is the
    tool to the model and the policy (name, description, risk, parameters); subclasses
    give `run`."""

    def __init__(self, tool: Tool) -> None:
        self.tool = tool

    @property
    def name(self) -> str:
        return self.tool.name

    @property
    def description(self) -> str:
        return self.tool.description

    @property
    def risk(self) -> Risk:
        return self.tool.risk

    @property
    def parameters(self) -> dict[str, Any]:
        return self.tool.parameters

    def validate(self, args: dict[str, Any]) -> dict[str, Any]:
        return self.tool.validate(args)
