"""One lossless JSON form for every kernel value (store, daemon wire, headless, replay).

A reply oneshot encodes as its request id; decoding gives a detached Oneshot with the
same id, which a remote client answers by id.
"""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec

from codecoder.kernel.oneshot import Oneshot

T = TypeVar("T")


# msgspec's hook protocol: NotImplementedError means "not a type this hook handles".


def enc_hook(obj: Any) -> Any:
    if isinstance(obj, Oneshot):
        return obj.request_id
    raise NotImplementedError(f"cannot encode {type(obj).__name__}")


def _dec_hook(tp: Any, obj: Any) -> Any:
    origin = getattr(tp, "__origin__", tp)
    if origin is Oneshot and isinstance(obj, str):
        return Oneshot(obj)
    raise NotImplementedError(f"cannot decode {tp!r}")


_encoder = msgspec.json.Encoder(enc_hook=enc_hook)


def encode(value: Any) -> bytes:
    return _encoder.encode(value)


def to_builtins(value: Any) -> Any:
    return msgspec.to_builtins(value, enc_hook=enc_hook)


def decode(data: bytes | str, type: type[T]) -> T:
    return msgspec.json.decode(data, type=type, dec_hook=_dec_hook)


def convert(obj: Any, type: type[T]) -> T:
    return msgspec.convert(obj, type=type, dec_hook=_dec_hook)
