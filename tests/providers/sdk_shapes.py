"""Check a JSON value against the official SDKs' request TypedDicts (test-only).

The SDKs' param types are generated from the public API specifications; walking our
request bodies through them catches an unknown key, a missing required key, a wrong
literal (`"type": "tool_use"`) or a wrong value type, without any network.
"""

from __future__ import annotations

import collections.abc
import types
import typing
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

import typing_extensions

_WRAPPERS = {
    typing_extensions.Required,
    typing_extensions.NotRequired,
    typing_extensions.ReadOnly,
    typing.Annotated,
}
_SEQUENCES = {list, tuple, collections.abc.Iterable, collections.abc.Sequence}
_MAPPINGS = {dict, collections.abc.Mapping}


def shape_errors(
    value: Any, tp: Any, path: str = "$", extra: frozenset[str] = frozenset()
) -> list[str]:
    """What in `value` does not fit `tp`; keys named in `extra` are allowed anywhere."""
    origin = get_origin(tp)
    if tp is Any or tp is object:
        return []
    if origin in _WRAPPERS:
        return shape_errors(value, get_args(tp)[0], path, extra)
    if origin is Union or origin is types.UnionType:
        attempts = [shape_errors(value, member, path, extra) for member in get_args(tp)]
        if any(not errors for errors in attempts):
            return []
        return max(attempts, key=_progress)  # the member that matched furthest explains best
    if origin is Literal:
        return [] if value in get_args(tp) else [f"{path}: {value!r} is not one of {get_args(tp)}"]
    if tp is type(None):
        return [] if value is None else [f"{path}: expected null"]
    if typing_extensions.is_typeddict(tp):
        return _typed_dict_errors(value, tp, path, extra)
    if origin in _SEQUENCES or tp in _SEQUENCES:
        if not isinstance(value, list):
            return [f"{path}: expected an array"]
        (item,) = get_args(tp)[:1] or (Any,)
        return [
            e for n, v in enumerate(value) for e in shape_errors(v, item, f"{path}[{n}]", extra)
        ]
    if origin in _MAPPINGS or tp in _MAPPINGS:
        return [] if isinstance(value, dict) else [f"{path}: expected an object"]
    return _scalar_errors(value, tp, path)


def _progress(errors: list[str]) -> tuple[int, int]:
    deepest = max(len(error.partition(": ")[0]) for error in errors)
    return deepest, -len(errors)


def _typed_dict_errors(value: Any, tp: Any, path: str, extra: frozenset[str]) -> list[str]:
    if not isinstance(value, dict):
        return [f"{path}: expected an object for {tp.__name__}"]
    hints = get_type_hints(tp, include_extras=True)
    errors = [
        f"{path}: unknown key {key!r}" for key in value if key not in hints and key not in extra
    ]
    errors += [f"{path}: missing {key!r}" for key in _required(tp, hints) if key not in value]
    for key, item in value.items():
        if key in hints:
            errors += shape_errors(item, hints[key], f"{path}.{key}", extra)
    return errors


def _required(tp: Any, hints: dict[str, Any]) -> list[str]:
    """Required keys, read from the hints: with postponed annotations the class's own
    `__required_keys__` cannot see `Required[...]`."""
    keys = []
    for key, hint in hints.items():
        origin = get_origin(hint)
        if origin is typing_extensions.Required or (
            key in tp.__required_keys__ and origin is not typing_extensions.NotRequired
        ):
            keys.append(key)
    return keys


def _scalar_errors(value: Any, tp: Any, path: str) -> list[str]:
    expected: dict[Any, tuple[type, ...]] = {
        str: (str,),
        int: (int,),
        float: (int, float),
        bool: (bool,),
    }
    if hasattr(tp, "model_fields"):
        return [f"{path}: a response model, not a request param"]
    if tp not in expected:
        return []  # a protocol or class we do not model: accept
    ok = isinstance(value, expected[tp]) and not (tp is not bool and isinstance(value, bool))
    return [] if ok else [f"{path}: expected {tp.__name__}, got {value!r}"]
