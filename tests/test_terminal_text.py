"""`visible`: what a terminal would obey is shown, the rest of the text is left alone."""

from __future__ import annotations

import io
import json

from codecoder.cli.render import Renderer
from codecoder.kernel.events import NewToken, ToolOutput, ToolStarted
from codecoder.terminal_text import json_escaped, visible
from tests.hostile import HOSTILE, OBEYED, SHOWN, assert_shown


def test_every_payload_is_shown_as_text() -> None:
    assert_shown(visible(HOSTILE))
    assert_shown(visible(HOSTILE, one_line=True))


def test_the_whole_class_is_shown_and_nothing_else_changes() -> None:
    every = "".join(map(chr, (*range(0xD800), *range(0xE000, 0x110000))))
    obeyed = OBEYED.findall(every)
    assert len(obeyed) == 30 + 1 + 32 + 2 + 5 + 4  # C0 but tab and LF, DEL, C1, LS, PS, bidi
    for char in obeyed:
        assert not OBEYED.search(visible(char)) and not OBEYED.search(visible(char, one_line=True))
    rest = OBEYED.sub("", every)
    assert visible(rest) == rest
    surrogates = "".join(map(chr, range(0xD800, 0xE000)))
    assert visible(surrogates) == "\ufffd" * len(surrogates)
    assert visible("\t\n") == "\t\n" and visible("\t\n", one_line=True) == "^I^J"
    assert visible("\x00\x1b\x7f") == "^@^[^?"
    assert visible("\x80\x85\x9f") == "<U+0080><U+0085><U+009F>"
    assert visible("\u202a\u202e\u2066\u2069") == "<U+202A><U+202E><U+2066><U+2069>"
    assert visible("\u2028\u2029") == "<U+2028><U+2029>" == visible("\u2028\u2029", one_line=True)
    text = "ünï 中文 emoji 👍 marks \u200f\u200e tab\tend"
    assert visible(text) == text


def test_newlines_are_kept_where_the_face_shows_lines_and_shown_in_a_one_line_field() -> None:
    assert visible("a\r\nb\nc\td\re") == "a\nb\nc\td^Me"
    assert visible("a\r\nb\nc\td\re", one_line=True) == "a^M^Jb^Jc^Id^Me"


def test_every_line_break_a_reader_knows_but_lf_and_crlf_is_shown() -> None:
    """`splitlines` (the TUI's diffs, a prompt's reader) breaks at each of these; a
    terminal at none of them, so a line would read as two to one and one to the other."""
    breaks = "\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029\r"
    assert len(f"a{breaks}b".splitlines()) == len(breaks) + 1
    for shown in (visible(f"a{breaks}b"), visible(f"a{breaks}b", one_line=True)):
        assert shown == "a^K^L^\\^]^^<U+0085><U+2028><U+2029>^Mb" and len(shown.splitlines()) == 1
    line = json_escaped(json.dumps({"text": f"a{breaks}b"}, ensure_ascii=False).encode())
    assert len(line.decode().splitlines()) == 1 and json.loads(line)["text"] == f"a{breaks}b"


def test_undecodable_bytes_of_a_file_name_are_the_replacement_character() -> None:
    name = b"report-\x9b2J.txt".decode("utf-8", "surrogateescape")
    shown = visible(name)
    assert shown == "report-\ufffd2J.txt"
    assert shown.encode("utf-8")  # writable: a lone surrogate would raise here


def test_the_demo_renderer_shows_c1_and_bidi_as_text() -> None:
    out = io.StringIO()
    renderer = Renderer(out, color=True)
    renderer.show(NewToken(HOSTILE))
    renderer.show(ToolStarted("c1", "read_file", {"path": "\x9d0;t\x9c"}))
    renderer.show(ToolOutput("c1", "\u202eevil\n"))
    text = out.getvalue()
    assert_shown(text, (*SHOWN, "<U+009D>0;t<U+009C>"), own_colours=True)
