"""Run one command through run_command, confined in `workspace-write` with a process
limit, and print the tool's result as JSON: the process-limit tests run it as another
user (tests/sandbox/test_process_limit.py), since which limit applies depends on who
runs the sandbox.

    python -m tests.sandbox.confined_child WORKSPACE MAX_PROCESSES COMMAND
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from codecoder.kernel.cancel import CancelToken
from codecoder.kernel.ports import ToolContext
from codecoder.sandbox.limits import ProcessLimit
from codecoder.sandbox.runtime import Sandbox
from codecoder.tools.process import ProcessManager
from codecoder.tools.shell import RunCommand


def main() -> None:
    workspace, count, command = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    manager = ProcessManager(grace=0.5)
    sandbox = Sandbox("workspace-write", max_processes=count)
    try:
        limit = sandbox.process_limit()
        ctx = ToolContext("call_1", CancelToken(), workspace, lambda _: None)
        result = RunCommand(manager, sandbox).run({"command": command, "timeout": 60}, ctx)
        how = limit.how if isinstance(limit, ProcessLimit) else None
        print(json.dumps({"how": how, "status": result.status, "text": result.text}))
    finally:
        sandbox.close()
        manager.close()


if __name__ == "__main__":
    main()
