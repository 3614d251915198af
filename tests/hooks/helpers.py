"""Running `codecoder exec` with hooks in the (test's own) user config."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

CLI = [sys.executable, "-m", "codecoder"]
UNCONFINED = ("--approval", "full-auto", "--sandbox", "off")


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"type": "tool_call", "name": name, "args": args}


def user_config(text: str) -> Path:
    path = Path(os.environ["XDG_CONFIG_HOME"]) / "codecoder" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def toml(value: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's)."""
    return json.dumps(value)


def exec_json(
    workspace: Path,
    replies: list[Any],
    *extra: str,
    task: str = "go",
    timeout: float = 60,
    mode: tuple[str, ...] = UNCONFINED,
) -> tuple[int, list[dict[str, Any]], str]:
    """`codecoder exec --json` on a script; `mode`: the approval and sandbox flags."""
    script = workspace.parent / f"{workspace.name}-script.json"
    script.write_text(json.dumps(replies))
    result = subprocess.run(
        [*CLI, "exec", "--json", *mode, *extra, "--script", str(script), "-C",
         str(workspace), task],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )  # fmt: skip
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    return result.returncode, lines, result.stderr


def of_type(lines: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [line for line in lines if line["type"] == kind]
