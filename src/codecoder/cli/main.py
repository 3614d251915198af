"""The `codecoder` command: subcommands and the one place errors become exit codes.

Start-up time is measured (`codecoder --version` ≤ 50 ms): this module imports only `sys`;
the parser (cli.commands) and each subcommand import what they need when they run.
Leaving is measured too: see `run`.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing itself costs ~10 ms, and `--version` is measured
if TYPE_CHECKING:
    from typing import NoReturn

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_SIGINT = 130
EXIT_SIGTERM = 143

APPROVAL_MODES = ("ask", "auto-edit", "full-auto", "read-only", "never-ask")


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args in (["--version"], ["-V"]):
        from codecoder import __version__

        print(f"codecoder {__version__}")
        return EXIT_OK
    from codecoder.cli.commands import build_parser

    options = build_parser(args[0] if args else None).parse_args(args)
    return int(options.func(options))


def run() -> NoReturn:
    """The console script. A subcommand returns with its sessions closed, its threads
    joined and its child processes reaped; what is left is the interpreter's teardown,
    freeing every module and object one by one: ~50 ms of a 250 ms one-reply `exec`
    (measured with strace: last close → exit_group). So we flush and leave at once,
    unless a non-daemon thread is still running, whose work the normal exit would wait
    for."""
    code = main()
    threading = sys.modules.get("threading")  # not imported: no thread was started
    if threading is not None:
        current = threading.current_thread()
        if any(t is not current and not t.daemon for t in threading.enumerate()):
            sys.exit(code)
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:  # None: started with that descriptor closed
                stream.flush()
        except (OSError, ValueError):  # a reader that went away: nothing more to say
            code = code or EXIT_FAILED
    import os

    os._exit(code)


if __name__ == "__main__":
    run()
