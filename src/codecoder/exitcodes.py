"""Exit codes (DESIGN.md §7, docs/headless.md): one place, imported by every face (the
CLI, the daemon) and by `cli.main`, which stays free of the commands' imports."""

EXIT_OK = 0
EXIT_FAILED = 1
"""The turn failed: a provider error after retries, the round limit, a script exhausted."""
EXIT_USAGE = 2
"""A bad flag, script, model, key or configuration."""
EXIT_SIGHUP = 129
EXIT_SIGINT = 130
EXIT_SIGTERM = 143
