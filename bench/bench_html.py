"""HTML → Markdown for web_fetch: markdownify against html2text (docs/adr/0004).

    .venv/bin/python -m bench.bench_html [--runs 15]

For each library, alternated run by run:
- import cost: a fresh interpreter imports it (bytecode caches warmed first), timed inside
  the child with perf_counter, so interpreter start-up is not counted;
- conversion time of a documentation-like page of ~260 KiB (the page below, repeated),
  the configuration web_fetch would use;
- structure kept: which of ATX headings, bold, links, nested lists, fenced code, inline
  code and tables survive, and whether script and style text leaks into the output.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

PAGE = """<!DOCTYPE html>
<html><head><title>Demo page</title><style>body{color:red}</style>
<script>var leaked = "SCRIPT-TEXT";</script></head>
<body><nav><a href="/">Home</a></nav>
<h1>The Title</h1>
<p>Some <strong>bold</strong> and <em>italic</em> text with a
<a href="https://example.com/docs?a=1&amp;b=2">link</a> and <code>inline_code()</code>.</p>
<h2>Section two</h2>
<ul><li>first item</li><li>second item<ul><li>nested item</li></ul></li></ul>
<ol><li>one</li><li>two</li></ol>
<pre><code class="language-python">def f(x):
    return x * 2
</code></pre>
<h3>Table</h3>
<table><tr><th>a</th><th>b</th></tr><tr><td>1</td><td>2</td></tr></table>
<blockquote>quoted text</blockquote>
</body></html>
"""

CHECKS: dict[str, Callable[[str], bool]] = {
    "ATX headings": lambda md: "# The Title" in md and "## Section two" in md,
    "bold": lambda md: "**bold**" in md,
    "links": lambda md: "[link](https://example.com/docs?a=1&b=2)" in md,
    "nested lists": lambda md: any(
        line.startswith(("  - nested", "    * nested", "  * nested")) for line in md.splitlines()
    ),
    "fenced code": lambda md: "```" in md and "    return x * 2" in md,
    "inline code": lambda md: "`inline_code()`" in md,
    "tables": lambda md: re.search(r"\|\s*a\s*\|\s*b\s*\|", md) is not None,
    "no script/style text": lambda md: "SCRIPT-TEXT" not in md and "color:red" not in md,
}


def convert_markdownify(html: str) -> str:
    from markdownify import markdownify

    return markdownify(html, heading_style="ATX", bullets="-")


def convert_html2text(html: str) -> str:
    # Not a dependency (GPL-3.0, ADR 0004): compared only where someone installed it by hand.
    html2text: Any = importlib.import_module("html2text")
    parser = html2text.HTML2Text()
    parser.body_width = 0  # no hard wrapping
    parser.backquote_code_style = True  # fenced code, not indented
    parser.pad_tables = True
    return parser.handle(html)


LIBRARIES = {"markdownify": convert_markdownify, "html2text": convert_html2text}


def import_ms(module: str, env: dict[str, str]) -> float:
    code = (
        "import time; t = time.perf_counter(); "
        f"import {module}; print((time.perf_counter() - t) * 1000)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    return float(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    options = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    libraries = {n: c for n, c in LIBRARIES.items() if importlib.util.find_spec(n) is not None}
    for name in LIBRARIES.keys() - libraries.keys():
        print(f"{name}: not installed, left out")
    imports: dict[str, list[float]] = {name: [] for name in libraries}
    for name in libraries:
        import_ms(name, env)  # warm-up: bytecode caches
    for _ in range(options.runs):
        for name in libraries:
            imports[name].append(import_ms(name, env))
    body = PAGE.split("<body>")[1].split("</body>", maxsplit=1)[0]
    big = PAGE.replace("</body>", body * 500 + "</body>")
    for name, convert in libraries.items():
        convert(PAGE)  # the import, outside the timing
        times = []
        for _ in range(5):
            started = time.perf_counter()
            convert(big)
            times.append((time.perf_counter() - started) * 1000)
        kept = [check for check, ok in CHECKS.items() if ok(convert(PAGE))]
        lost = [check for check in CHECKS if check not in kept]
        print(f"{name}:")
        print(
            f"  import   median {statistics.median(imports[name]):6.1f} ms"
            f"  min {min(imports[name]):6.1f} ms ({options.runs} runs)"
        )
        print(f"  convert  {len(big) // 1024} KiB page: median {statistics.median(times):.0f} ms")
        print(f"  kept     {', '.join(kept)}")
        print(f"  lost     {', '.join(lost) or 'nothing'}")


if __name__ == "__main__":
    main()
