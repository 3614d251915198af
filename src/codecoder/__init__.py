"""CodeCoder: a coding agent for the terminal on an event-driven, thread-based kernel."""

import sys

__version__ = "0.1.0"


class _MsgspecWithoutTypingExtensions:
    """msgspec imports typing_extensions whenever it is installed (the `mcp` SDK's
    dependencies install it) and falls back to `typing` otherwise, which on Python 3.11+
    has all it takes from it (get_type_hints with extras, Required, NotRequired). That
    import cost `exec` 13 ms of its ~200 ms start-up (202.0 against 188.6 ms, 22 runs
    each, alternated; issue 17's target is ±5 ms). This finder refuses typing_extensions
    to msgspec's import of it only, and leaves once msgspec has imported; the SDK, pydantic
    and everyone else import it as usual."""

    @classmethod
    def find_spec(cls, name: str, path: object = None, target: object = None) -> None:
        if name == "typing_extensions":
            caller = sys._getframe(1)
            while caller.f_back is not None and caller.f_globals.get("__name__", "").startswith(
                ("_frozen_importlib", "importlib")
            ):
                caller = caller.f_back
            if caller.f_globals.get("__name__") == "msgspec._utils":
                raise ImportError("msgspec takes these from typing")
        elif "msgspec._core" in sys.modules and cls in sys.meta_path:
            sys.meta_path.remove(cls)  # type: ignore[arg-type]  # msgspec is in: done


if "msgspec" not in sys.modules:
    sys.meta_path.insert(0, _MsgspecWithoutTypingExtensions)  # type: ignore[arg-type]
