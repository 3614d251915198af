"""Invariant 7: the kernel imports nothing from providers, tools, permissions, sessions,
context, the daemon, the CLI or UI libraries; only the standard library and msgspec."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import codecoder.kernel

KERNEL = Path(codecoder.kernel.__file__).parent
ALLOWED_THIRD_PARTY = {"msgspec"}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_kernel_modules_import_only_the_kernel_stdlib_and_msgspec() -> None:
    modules = sorted(KERNEL.glob("*.py"))
    assert len(modules) >= 8
    for path in modules:
        for name in _imports(path):
            top = name.split(".")[0]
            if top == "codecoder":
                assert name.startswith("codecoder.kernel"), f"{path.name} imports {name}"
            elif top not in ALLOWED_THIRD_PARTY:
                assert top in sys.stdlib_module_names, f"{path.name} imports {name}"


def test_importing_the_kernel_loads_no_edge_package() -> None:
    code = (
        "import sys, codecoder.kernel.loop, codecoder.kernel.handle, codecoder.kernel.trace;"
        "bad = [m for m in sys.modules if m.split('.')[0] in"
        " ('socket', 'ssl', 'rich', 'prompt_toolkit', 'tree_sitter', 'sqlite3')"
        " or m.startswith(('codecoder.providers', 'codecoder.tools', 'codecoder.cli',"
        " 'codecoder.permissions', 'codecoder.sessions', 'codecoder.context'))];"
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


FACES = ("codecoder.cli", "codecoder.daemon")
"""The faces of CodeCoder: the composition root serves them and imports none."""


def _package_imports(package: str) -> dict[str, set[str]]:
    root = KERNEL.parent / package
    return {path.name: _imports(path) for path in sorted(root.glob("*.py"))}


def test_the_composition_root_imports_no_face() -> None:
    modules = _package_imports("app")
    assert {"wiring.py", "children.py", "options.py"} <= set(modules)
    for name, imports in modules.items():
        bad = [i for i in imports if i.startswith(FACES)]
        assert not bad, f"app/{name} imports {bad}"


_DAEMON_FOR_THE_CLI = (
    "codecoder.daemon.client",
    "codecoder.daemon.main",
    "codecoder.daemon.control",
)
"""What the CLI may use of the daemon: its client, its entry points, and the status and
stop that `codecoder daemon` and `doctor` ask of a running one."""


def test_the_daemon_imports_no_cli_and_the_cli_no_daemon_internals() -> None:
    for name, imports in _package_imports("daemon").items():
        bad = [i for i in imports if i.startswith("codecoder.cli")]
        assert not bad, f"daemon/{name} imports {bad}"
    for name, imports in _package_imports("cli").items():
        bad = [
            i for i in imports if i.startswith("codecoder.daemon") and i not in _DAEMON_FOR_THE_CLI
        ]
        assert not bad, f"cli/{name} imports {bad}"
