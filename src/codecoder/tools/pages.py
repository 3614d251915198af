"""Web pages as text for the model: HTML to Markdown, text as it is, and the wrapper that
marks a page as untrusted.

HTML goes through markdownify (MIT; docs/adr/0004-html-to-markdown.md) with ATX headings
and `-` bullets: headings, bold, links, nested lists, fenced code, inline code and tables
survive, script and style do not. It is imported at the first page, not before (~130 ms
with BeautifulSoup), and a page is converted on a thread of its own so that a cancel
never waits for a slow conversion.
"""

from __future__ import annotations

import re
import threading
from typing import Any

from codecoder.kernel.cancel import CancelToken

_BLANK_RUNS = re.compile(r"\n[ \t]*(?:\n[ \t]*){2,}")
_TRAILING = re.compile(r"[ \t]+\n")
_LINK_TARGET = re.compile(r"(\]\()([^)\s]+)")
_TAG = re.compile(r"<(\s*/?\s*untrusted)", re.IGNORECASE)
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.I)


class TooSlow(Exception):
    """The conversion did not finish in the time left."""


def html_to_markdown(html: str, base: str = "") -> str:
    """Markdown of a page; with `base` (the page's URL), relative link and image targets
    are made absolute, so the model can fetch them."""
    from markdownify import markdownify

    text = markdownify(html, heading_style="ATX", bullets="-")
    text = _BLANK_RUNS.sub("\n\n", _TRAILING.sub("\n", text)).strip()
    if base:
        from urllib.parse import urljoin

        text = _LINK_TARGET.sub(lambda m: m.group(1) + urljoin(base, m.group(2)), text)
    return text


def convert(html: str, cancel: CancelToken, timeout: float, base: str = "") -> str:
    """`html_to_markdown` on a worker thread: raises Cancelled at once on cancel (the
    worker finishes alone), TooSlow after `timeout`."""
    done = threading.Event()
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["text"] = html_to_markdown(html, base)
        except Exception as exc:  # a page the parser chokes on: passed to the caller
            box["error"] = exc
        finally:
            done.set()

    worker = threading.Thread(target=work, name="web_fetch-convert", daemon=True)
    worker.start()
    unregister = cancel.on_cancel(done.set)
    try:
        finished = done.wait(timeout)
    finally:
        unregister()
    cancel.check()
    if not finished:
        raise TooSlow(f"converting the page took more than {timeout:.0f} s")
    worker.join()
    if "error" in box:
        raise box["error"]
    return box["text"]


def charset(content_type: str, head: bytes, *, html: bool) -> str:
    """The page's encoding: the Content-Type's charset, else (HTML) a <meta> charset in
    its first 4 KiB, else UTF-8; an unknown name is UTF-8 too."""
    import codecs

    found = re.search(r"charset\s*=\s*\"?([A-Za-z0-9_.:-]+)", content_type, re.I)
    name = found.group(1) if found else None
    if name is None and html:
        meta = _META_CHARSET.search(head[:4096])
        name = meta.group(1).decode("ascii") if meta else None
    try:
        return codecs.lookup(name).name if name else "utf-8"
    except LookupError:
        return "utf-8"


def untrusted(source: str, text: str) -> str:
    """`text` inside `<untrusted source="…">…</untrusted>`, with every such tag inside
    it (opening or closing, any case or spacing) escaped, so the page cannot end the
    wrapper early and speak as us."""
    attribute = (
        source.replace("&", "&amp;")
        .replace('"', "&quot;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
    )
    body = _TAG.sub(r"&lt;\1", text)
    return f'<untrusted source="{attribute}">\n{body}\n</untrusted>'
