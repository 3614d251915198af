"""`visible`: what a terminal would obey is shown, the rest of the text is left alone."""

from __future__ import annotations

import io

from codecoder.cli.render import Renderer
from codecoder.kernel.events import NewToken, ToolOutput, ToolStarted
from codecoder.terminal_text import visible
from tests.hostile import HOSTILE, OBEYED, SHOWN, assert_shown


def test_every_payload_is_shown_as_text() -> None:
    assert_shown(visible(HOSTILE))
    assert_shown(visible(HOSTILE, one_line=True))


def test_the_whole_class_is_shown_and_nothing_else_changes() -> None:
    every = "".join(map(chr, (*range(0xD800), *range(0xE000, 0x110000))))
    obeyed = OBEYED.findall(every)
    assert len(obeyed) == 30 + 1 + 32 + 5 + 4  # C0 but tab and newline, DEL, C1, bidi
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
    text = "ünï 中文 emoji 👍 marks \u200f\u200e tab\tend"
    assert visible(text) == text


def test_newlines_are_kept_where_the_face_shows_lines_and_shown_in_a_one_line_field() -> None:
    assert visible("a\r\nb\nc\td\re") == "a\nb\nc\td^Me"
    assert visible("a\r\nb\nc\td\re", one_line=True) == "a^M^Jb^Jc^Id^Me"


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
