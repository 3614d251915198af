"""The `codecoder` command: subcommands and the one place errors become exit codes.

Start-up time is measured (`codecoder --version` ≤ 50 ms): this module imports only `sys`;
the parser (cli.commands) and each subcommand import what they need when they run.
`codecoder acp` and `codecoder daemon` are read by their own parsers (cli.daemon_cmd),
so that an editor's `initialize` is answered ≤ 100 ms after launch.
Leaving is measured too: see `run`.
"""

from __future__ import annotations

import sys

from codecoder.exitcodes import EXIT_FAILED, EXIT_OK, EXIT_SIGINT

TYPE_CHECKING = False  # typing itself costs ~10 ms, and `--version` is measured
if TYPE_CHECKING:
    from typing import NoReturn


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args in (["--version"], ["-V"]):
        from codecoder import __version__

        try:
            print(f"codecoder {__version__}")
        except BrokenPipeError:
            _silence_stdout()
        return EXIT_OK
    options = None
    if args[:1] in (["acp"], ["daemon"]):
        from codecoder.cli.daemon_cmd import parse as parse_quickly

        options = parse_quickly(args)
    if options is None:
        from codecoder.cli.commands import parse

        options = parse(args)
    try:
        return int(options.func(options))
    except BrokenPipeError:  # the reader left (`codecoder models | head`): not an error
        _silence_stdout()
        return EXIT_OK
    except KeyboardInterrupt:  # Ctrl+C in a command without a handler of its own
        return EXIT_SIGINT


def _silence_stdout() -> None:
    """Point fd 1 at /dev/null, so that the exit-time flush cannot fail again."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.close(devnull)


def run() -> NoReturn:
    """The console script. A subcommand returns with its sessions closed, its threads
    joined and its child processes reaped; what is left is the interpreter's teardown,
    freeing every module and object one by one: ~50 ms of a 250 ms one-reply `exec`
    (measured with strace: last close → exit_group). So we flush and leave at once,
    unless a non-daemon thread is still running, whose work the normal exit would wait
    for. Output into a pipe whose reader has left ends quietly."""
    try:
        code = main()
    except SystemExit as exc:  # argparse: --help, a usage error
        if not isinstance(exc.code, int | None):
            raise
        code = exc.code or EXIT_OK
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:  # None: started with that descriptor closed
                stream.flush()
        except BrokenPipeError:  # the reader left before the last of the output
            if stream is sys.stdout:
                _silence_stdout()
        except (OSError, ValueError):  # nothing more can be said
            code = code or EXIT_FAILED
    threading = sys.modules.get("threading")  # not imported: no thread was started
    if threading is not None:
        current = threading.current_thread()
        if any(t is not current and not t.daemon for t in threading.enumerate()):
            sys.exit(code)
    import os

    os._exit(code)


if __name__ == "__main__":
    run()
