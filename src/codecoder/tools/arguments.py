"""What a model sends, made into what a tool reads, and what it is told when that fails.

Models trained on other agents call our tools with those agents' habits: `file_path` for
`path`, `old_string` for `old_text`, `"offset": "20"`, `null` for a field they leave
unset, todo status `completed`. Refusing each of those costs a round trip for no gain, so
a tool's `aliases` are renamed to its own names, null is dropped where the field does not
take it, and text that spells a number or a boolean is read as one (msgspec's lax mode).
The schema the model is offered keeps only our own names (docs/tools.md lists the rest).

What still does not fit is an `invalid_args` failure that teaches: what was wrong, the
nearest name or value when the model was close, and every parameter with its type,
allowed values and default, so the next call can be right.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping
from typing import Any

import msgspec

_AT = re.compile(r" - at `\$(?P<path>[^`]*)`$")
_UNKNOWN = re.compile(r"^Object contains unknown field `(?P<name>[^`]*)`")
_ENUM = re.compile(r"^Invalid enum value (?P<value>.*)$")
_STEP = re.compile(r"\.(\w+)|\[(\d+)\]")


def renamed(args: Mapping[str, Any], aliases: Mapping[str, str]) -> dict[str, Any]:
    """`args` with each alias under its own name (a name given as null is not given);
    ValueError when two names of a field are, since which one the model meant cannot be
    told."""
    out: dict[str, Any] = {}
    for key, value in args.items():
        name = aliases.get(key, key)
        if value is None and (key in aliases or name in out):
            continue
        if out.get(name) is not None:
            given = [k for k in args if aliases.get(k, k) == name and args[k] is not None]
            raise ValueError(f"{' and '.join(f'`{k}`' for k in given)} name the same field")
        out[name] = value
    return out


def without_nulls(args: dict[str, Any], schema: Mapping[str, Any]) -> dict[str, Any]:
    """`args` without the null values of fields that do not take null: a model that
    sends every parameter, unset ones as null, means the default."""
    properties: Mapping[str, Any] = schema.get("properties", {})
    return {
        key: value
        for key, value in args.items()
        if value is not None or key not in properties or _takes_null(properties[key])
    }


def _takes_null(node: Mapping[str, Any]) -> bool:
    if node.get("type") == "null":
        return True
    return any(_takes_null(option) for option in node.get("anyOf", ()))


def unknown_fields(
    args: Mapping[str, Any], schema: Mapping[str, Any], aliases: Mapping[str, str]
) -> str | None:
    """What to say about the top-level fields the schema lacks (all of them, where
    msgspec names only the first), or None when there are none. A near miss of an
    alias (`new_strin`) is pointed at the field the alias stands for."""
    properties: Mapping[str, Any] = schema.get("properties", {})
    if schema.get("additionalProperties", True) is not False:
        return None
    extra = [key for key in args if key not in properties]
    if not extra:
        return None
    names = {**aliases, **{key: key for key in properties}}
    words = "unknown field" if len(extra) == 1 else "unknown fields"
    return f"{words} {', '.join(_named(key, names) for key in extra)}"


def _named(key: str, names: Mapping[str, str]) -> str:
    near = closest(key, list(names))
    return f"`{key}`" + (f" (did you mean `{names[near]}`?)" if near else "")


def closest(word: str, choices: list[str]) -> str | None:
    """The choice `word` most likely meant, compared without case, `_` or `-`."""
    folded = {_fold(choice): choice for choice in choices}
    found = difflib.get_close_matches(_fold(word), list(folded), n=1, cutoff=0.6)
    return folded[found[0]] if found else None


def _fold(word: str) -> str:
    return word.lower().replace("_", "").replace("-", "")


def explain(exc: msgspec.ValidationError, schema: Mapping[str, Any]) -> str:
    """msgspec's message, with the field's place in words and a did-you-mean for an
    unknown field or a value outside the allowed ones."""
    text = str(exc)
    at = _AT.search(text)
    path = at.group("path") if at else ""
    bare = text[: at.start()] if at else text
    node = _node(schema, path)
    hint = ""
    if (found := _UNKNOWN.match(bare)) and node is not None:
        near = closest(found.group("name"), list(node.get("properties", {})))
        hint = f"; did you mean `{near}`?" if near else ""
    elif (found := _ENUM.match(bare)) and node is not None and "enum" in node:
        value = found.group("value").strip("'\"")
        near = closest(value, [str(option) for option in node["enum"]])
        hint = f"; did you mean {json.dumps(near)}?" if near else ""
    where = f" (at `{path.lstrip('.')}`)" if path else ""
    return f"{bare[0].lower()}{bare[1:]}{where}{hint}"


def _node(schema: Mapping[str, Any], path: str) -> Mapping[str, Any] | None:
    """The schema of the value at msgspec's `path` (`.items[0].status`)."""
    node: Mapping[str, Any] | None = schema
    for name, _index in _STEP.findall(path):
        if node is None:
            return None
        node = node.get("properties", {}).get(name) if name else node.get("items")
    return node


def signature(name: str, schema: Mapping[str, Any]) -> str:
    """Every parameter of the tool in one line each: type, allowed values, bounds, and
    whether it is required or what it defaults to."""
    return f"{name} takes:\n" + "\n".join(f"  {line}" for line in _fields(schema, top=True))


def _fields(schema: Mapping[str, Any], *, top: bool = False) -> list[str]:
    required = set(schema.get("required", ()))
    out: list[str] = []
    for key, node in schema.get("properties", {}).items():
        need = "required" if key in required else _default(node)
        out.append(f"{key}: {_type(node)}" + (f" ({need})" if need else ""))
    return out if top else ["; ".join(out)]


def _default(node: Mapping[str, Any]) -> str:
    return f"default {json.dumps(node['default'])}" if "default" in node else "optional"


def _type(node: Mapping[str, Any]) -> str:
    if "enum" in node:
        return " | ".join(json.dumps(value) for value in sorted(node["enum"], key=str))
    if "anyOf" in node:
        return " or ".join(_type(option) for option in node["anyOf"])
    kind = node.get("type", "any")
    if kind == "array":
        text = f"array of {_type(node.get('items', {}))}"
    elif kind == "object" and "properties" in node:
        text = "{" + _fields(node)[0] + "}"
    else:
        text = str(kind)
    bounds = [
        f"{sign} {node[key]:g}" if isinstance(node[key], float) else f"{sign} {node[key]}"
        for key, sign in _BOUNDS
        if key in node
    ]
    if "maxItems" in node:
        bounds.append(f"at most {node['maxItems']} items")
    return f"{text} {', '.join(bounds)}" if bounds else text


_BOUNDS = (
    ("minimum", "≥"),
    ("exclusiveMinimum", ">"),
    ("maximum", "≤"),
    ("exclusiveMaximum", "<"),
)
