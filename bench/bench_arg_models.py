"""What a tool's argument model costs at start-up: msgspec against pydantic (issue 2).

    .venv/bin/python bench/bench_arg_models.py [--runs 15]

Each run is a fresh interpreter that imports the library, defines a read_file-like
argument model with field descriptions, builds its JSON schema and validates one
argument object; the figure is that interpreter's wall time minus `python -c pass`.
(pydantic is in the venv only as a dependency of the SDKs used as test-time reference
parsers; the project itself does not use it.)
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

MSGSPEC = """
from typing import Annotated
import msgspec
class ReadFileArgs(msgspec.Struct, forbid_unknown_fields=True):
    path: Annotated[str, msgspec.Meta(description="File to read.")]
    offset: Annotated[int, msgspec.Meta(ge=1, description="First line.")] = 1
    limit: Annotated[int, msgspec.Meta(ge=1, description="Lines to read.")] = 2000
msgspec.json.schema(ReadFileArgs)
msgspec.convert({"path": "a.py", "offset": 3}, type=ReadFileArgs)
"""

PYDANTIC = """
from pydantic import BaseModel, ConfigDict, Field
class ReadFileArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str = Field(description="File to read.")
    offset: int = Field(1, ge=1, description="First line.")
    limit: int = Field(2000, ge=1, description="Lines to read.")
ReadFileArgs.model_json_schema()
ReadFileArgs.model_validate({"path": "a.py", "offset": 3})
"""


def wall(code: str, env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], env=env, check=True)
    return (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    runs = parser.parse_args().runs
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    results = {}
    for name, code in (("python -c pass", "pass"), ("msgspec", MSGSPEC), ("pydantic", PYDANTIC)):
        wall(code, env)  # warm-up: bytecode caches
        results[name] = statistics.median(wall(code, env) for _ in range(runs))
    floor = results.pop("python -c pass")
    print(f"interpreter floor: {floor:.1f} ms")
    for name, value in results.items():
        print(f"  {name:9} import + model + schema + one validation: {value - floor:6.1f} ms")


if __name__ == "__main__":
    main()
