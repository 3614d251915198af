"""The front matter reader: YAML (through PyYAML, every value kept as text) and a clear
`FILE:LINE: message` for everything it cannot read."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codecoder.context.frontmatter import QUOTE_CAP, FrontMatterError, parse, parse_named


def test_no_front_matter_means_the_whole_text_is_body() -> None:
    front = parse("# Title\nname: not front matter\n", "x.md")
    assert front.fields == {}
    assert front.body == "# Title\nname: not front matter\n"


def test_scalars_quotes_comments_and_body() -> None:
    text = (
        "\ufeff---\r\n"
        "name: pdf-forms   # trailing comment\r\n"
        'description: "Fill in: forms, \\"quoted\\" \\\\ done"\r\n'
        "model: 'it''s openai/gpt-5'\r\n"
        "# a comment line\r\n"
        "\r\n"
        "empty:\r\n"
        "url: https://example.com/a#b\r\n"
        "---\r\n"
        "Body line 1\r\n"
        "---\r\n"
    )
    front = parse(text, "SKILL.md")
    assert front.fields == {
        "name": "pdf-forms",
        "description": 'Fill in: forms, "quoted" \\ done',
        "model": "it's openai/gpt-5",
        "empty": "",
        "url": "https://example.com/a#b",
    }
    assert front.body == "Body line 1\r\n---\r\n"
    assert front.lines["model"] == 4


def test_lists_in_every_supported_form() -> None:
    text = """---
flow: [read_file, "grep, fancy", 'glob']
empty: []
trailing: [a, b,]
block:
  - one
  - "two: quoted"
same_indent:
- x
- y
comma: read_file, grep ,glob
---
"""
    front = parse(text, "a.md")
    assert front.fields["flow"] == ["read_file", "grep, fancy", "glob"]
    assert front.fields["empty"] == []
    assert front.fields["trailing"] == ["a", "b"]
    assert front.fields["block"] == ["one", "two: quoted"]
    assert front.fields["same_indent"] == ["x", "y"]
    assert front.names("comma") == ("read_file", "grep", "glob")
    assert front.names("flow") == ("read_file", "grep, fancy", "glob")
    assert front.names("missing") is None


def test_block_scalars_continuations_and_nested_mappings() -> None:
    text = """---
literal: |
  line one
    indented

  line three
folded: >-
  folded
  into one
plain: starts here
  and goes on
metadata:
  version: "1.0"
  tags: [a, b]
after: yes
---
"""
    front = parse(text, "a.md")
    assert front.fields["literal"] == "line one\n  indented\n\nline three\n"  # YAML's clip
    assert front.fields["folded"] == "folded into one"
    assert front.fields["plain"] == "starts here and goes on"
    assert front.fields["metadata"] == {"version": "1.0", "tags": ["a", "b"]}
    assert front.fields["after"] == "yes"


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("---\nname: x\n", 1, "never closed"),
        ("---\nname: x\nthis is not a key\n---\n", 3, "could not find expected ':'"),
        ("---\nname: x\nname: y\n---\n", 3, "duplicate key `name`"),
        ("---\nmeta:\n  a: 1\n  a: 2\n---\n", 4, "duplicate key `a`"),
        ('---\n\ndescription: "open\n---\n', 3, "found unexpected end of stream"),
        ("---\ndescription: 'open\n---\n", 2, "found unexpected end of stream"),
        ("---\ntools: [a, b\n---\n", 2, "did not find expected ',' or ']'"),
        ("---\ntools: [a, , b]\n---\n", 2, "did not find expected node content"),
        ("---\ntools: [a] b\n---\n", 2, "did not find expected key"),
        ('---\nname: "a" b\n---\n', 2, "did not find expected key"),
        ('---\nname: "bad \\q"\n---\n', 2, "unknown escape"),
        ("---\nname: x\n\tdescription: y\n---\n", 3, "tab character"),
        ("---\nname: x\n  description: y\n---\n", 3, "mapping values are not allowed"),
        ("---\ndescription: Use it: always\n---\n", 2, "mapping values are not allowed"),
        ("---\n- a\n- b\n---\n", 2, "expected `key: value` lines"),
        ("---\n? [a]\n: b\n---\n", 2, "a key must be text"),
        ("---\na: &x [1, 2]\nb: *x\n---\n", 2, "anchors and aliases"),
        ("---\na: " + "[" * 20 + "]" * 20 + "\n---\n", 2, "more than 16 levels"),
        ("---\na: " + "[" * 2000 + "]" * 2000 + "\n---\n", 2, "depth"),
    ],
)
def test_malformed_front_matter_names_file_and_line(text: str, line: int, message: str) -> None:
    with pytest.raises(FrontMatterError) as caught:
        parse(text, "skills/x/SKILL.md")
    error = caught.value
    assert (error.source, error.line) == ("skills/x/SKILL.md", line)
    assert message in error.message
    assert str(error).startswith(f"skills/x/SKILL.md:{line}: ")


def test_typed_getters_report_the_key_line() -> None:
    front = parse("---\nname: x\ndescription:\n  - a\n  - b\n---\n", "p.md")
    with pytest.raises(FrontMatterError, match=r"^p\.md:3: `description` should be text"):
        front.text("description")
    nested = parse("---\ntools:\n  a: b\n---\n", "p.md")
    with pytest.raises(FrontMatterError, match=r"^p\.md:2: `tools` should be a list"):
        nested.names("tools")
    items = parse("---\nname: x\ntools:\n  - name: a\n---\n", "p.md")
    with pytest.raises(FrontMatterError, match=r"^p\.md:3: `tools` should be a list of names"):
        items.names("tools")


def test_yaml_forms_the_old_reader_refused_are_read() -> None:
    """Flow mappings, nested lists, lists of mappings: valid YAML, kept as text; the typed
    getters decide what a field may be."""
    front = parse("---\nmeta: {a: 1, b: [x, [y]]}\ntools: [a, [b]]\n---\n", "p.md")
    assert front.fields == {"meta": {"a": "1", "b": ["x", ["y"]]}, "tools": ["a", ["b"]]}


def test_every_value_is_text() -> None:
    front = parse("---\na: 1\nb: true\nc: null\nd: ~\ne: 2024-01-01\nf: !!int 3\n---\n", "p.md")
    assert front.fields == {
        "a": "1",
        "b": "true",
        "c": "null",
        "d": "~",
        "e": "2024-01-01",
        "f": "3",
    }


def test_reading_without_front_matter_does_not_load_yaml() -> None:
    """yaml (~8 ms) is paid only once a file with front matter exists."""
    import subprocess
    import sys

    code = (
        "import sys; from codecoder.context.frontmatter import parse;"
        "parse('# no front matter', 'x.md'); print('yaml' in sys.modules);"
        "parse('---\\na: b\\n---\\n', 'y.md'); print('yaml' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]


def test_named_documents_need_a_description_and_a_sane_name() -> None:
    named = parse_named("---\ndescription: Does  things\n   well\n---\nbody", "d/SKILL.md", "d")
    assert (named.name, named.description) == ("d", "Does things well")
    with pytest.raises(FrontMatterError, match=r"^d/SKILL\.md:1: a `description` is required"):
        parse_named("no front matter", "d/SKILL.md", "d")
    with pytest.raises(FrontMatterError, match=r"^d/SKILL\.md:2: name 'two words' must be"):
        parse_named("---\nname: two words\ndescription: x\n---\n", "d/SKILL.md", "d")


_plain = st.text(
    alphabet=st.characters(min_codepoint=33, max_codepoint=126, exclude_characters="#\"'[]{},:|>-"),
    min_size=1,
    max_size=12,
)
_any_line = st.text(  # YAML folds U+2028/U+2029 line breaks and refuses unassigned ones
    alphabet=st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp", "Cn")), max_size=20
)
_keys = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True)


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


@settings(max_examples=150, deadline=None)
@given(
    st.dictionaries(
        _keys,
        st.one_of(_any_line, st.lists(_any_line, max_size=4), st.lists(_plain, max_size=4)),
        max_size=6,
    ),
    st.booleans(),
)
def test_written_values_read_back_unchanged(fields: dict[str, str | list[str]], flow: bool) -> None:
    lines = ["---"]
    for key, value in fields.items():
        if isinstance(value, str):
            lines.append(f"{key}: {_quote(value)}")
        elif flow:
            lines.append(f"{key}: [{', '.join(_quote(item) for item in value)}]")
        else:
            lines.append(f"{key}:")
            lines += [f"  - {_quote(item)}" for item in value]
    text = "\n".join([*lines, "---", "the body"])
    front = parse(text, "gen.md")
    expected = {key: ("" if value == [] and not flow else value) for key, value in fields.items()}
    assert front.fields == expected
    assert front.body == "the body"


@pytest.mark.parametrize(
    "text",
    [
        "---\n" + "x" * 30_000 + "\n---\n",
        "---\ndescription: d\nname: " + "n" * 30_000 + "\n---\n",
        "---\n" + "k" * 30_000 + ": 1\n" + "k" * 30_000 + ": 2\n---\n",
    ],
)
def test_errors_quote_at_most_a_short_piece_of_a_long_line(text: str) -> None:
    """Errors become warnings in the prompt: a 30 000-character line must not go with them."""
    with pytest.raises(FrontMatterError) as caught:
        parse_named(text, "skills/x/SKILL.md", default_name="x")
    assert len(caught.value.message) < QUOTE_CAP + 60
    assert "…" in caught.value.message
