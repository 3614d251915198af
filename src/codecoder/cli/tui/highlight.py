"""Syntax colours for code in answers: one regular expression per common language
(keywords, strings, comments, numbers, the names a `def` or `fn` introduces), Pygments
for the others.

Why not Pygments for all: its Python lexer takes ~2.5 µs a character here (50 ms for
20 KB, a third of the time it took to render a 20,000-token answer); one compiled
alternation run by `re.finditer` does the same file in ~2 ms. Code in an answer is read
once as it streams; keywords, strings and comments are what the eye needs.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from codecoder.cli.tui.text import RESET

KEYWORD, BUILTIN, NAME, STRING, NUMBER, COMMENT, META = (
    "34", "36", "32", "33", "34", "90", "35",
)  # fmt: skip
_C_NUMBER = r"\b(?:0[xXbBoO][0-9a-fA-F_]+|\d[\d_']*(?:\.\d*)?(?:[eE][+-]?\d+)?[fFlLuU]*)\b"
_C_STRINGS = r""""(?:\\.|[^"\\\n])*"?|'(?:\\.|[^'\\\n])*'?"""
_C_COMMENTS = r"//[^\n]*|/\*[\s\S]*?(?:\*/|$)"


def _words(text: str) -> str:
    return r"\b(?:" + "|".join(text.split()) + r")\b"


def _rules(**groups: str) -> re.Pattern[str]:
    return re.compile("|".join(f"(?P<{name}>{pattern})" for name, pattern in groups.items()))


_PYTHON = _rules(
    comment=r"#[^\n]*",
    string=r"""[rRbBuUfF]{0,2}(?:'''[\s\S]*?(?:'''|$)|\"\"\"[\s\S]*?(?:\"\"\"|$)|'(?:\\.|[^'\\\n])*'?|"(?:\\.|[^"\\\n])*"?)""",
    meta=r"(?m:^[ \t]*@[\w.]+)",
    name=r"(?<=\bdef )\w+|(?<=\bclass )\w+",
    keyword=_words(
        "False None True and as assert async await break class continue def del elif else "
        "except finally for from global if import in is lambda nonlocal not or pass raise "
        "return try while with yield match case"
    ),
    builtin=_words(
        "self cls print len range list dict set tuple str int float bool bytes object type "
        "isinstance open super Exception ValueError TypeError KeyError enumerate zip map "
        "sorted min max sum any all"
    ),
    number=_C_NUMBER,
)
_SCRIPT = _rules(  # JavaScript, TypeScript
    comment=_C_COMMENTS,
    string=_C_STRINGS + r"|`(?:\\.|[^`\\])*`?",
    name=r"(?<=\bfunction )\w+|(?<=\bclass )\w+",
    keyword=_words(
        "async await break case catch class const continue default delete do else export "
        "extends false finally for from function if import in instanceof interface let new "
        "null of return static super switch this throw true try type typeof undefined var "
        "void while yield enum implements private public protected readonly as"
    ),
    builtin=_words("console document window Promise Array Object String Number JSON Math Error"),
    number=_C_NUMBER,
)
_SHELL = _rules(
    comment=r"(?<![\w$])#[^\n]*",
    string=r""""(?:\\.|[^"\\])*"?|'[^']*'?""",
    builtin=r"\$(?:\{[^}\n]*\}|\w+|[@#?$!*-])",
    keyword=_words(
        "if then else elif fi for in do done while until case esac function return local "
        "export readonly set unset shift exit source"
    ),
    number=r"\b\d+\b",
)
_JSON = _rules(
    string=r'"(?:\\.|[^"\\\n])*"?',
    keyword=_words("true false null"),
    number=r"-?\b\d+(?:\.\d+)?(?:[eE][+-]?\d+)?\b",
)
_GO = _rules(
    comment=_C_COMMENTS,
    string=_C_STRINGS + r"|`[^`]*`?",
    name=r"(?<=\bfunc )\w+|(?<=\btype )\w+",
    keyword=_words(
        "break case chan const continue default defer else fallthrough for func go goto if "
        "import interface map package range return select struct switch type var nil true "
        "false"
    ),
    builtin=_words("string int int64 uint8 byte rune error bool float64 len cap make new append"),
    number=_C_NUMBER,
)
_RUST = _rules(
    comment=_C_COMMENTS,
    string=r'b?"(?:\\.|[^"\\])*"?|' + r"'(?:\\.|[^'\\\n])'",
    meta=r"#!?\[[^\]\n]*\]?",
    name=r"(?<=\bfn )\w+|(?<=\bstruct )\w+|(?<=\benum )\w+|(?<=\btrait )\w+",
    keyword=_words(
        "as async await break const continue crate dyn else enum extern false fn for if impl "
        "in let loop match mod move mut pub ref return self Self static struct super trait "
        "true type unsafe use where while"
    ),
    builtin=_words(
        "Option Some None Result Ok Err String Vec Box i32 i64 u8 u32 u64 usize str bool"
    ),
    number=_C_NUMBER,
)
_C_FAMILY = _rules(  # C, C++, Java, C#, Kotlin, Swift: their shared keywords
    comment=_C_COMMENTS,
    string=_C_STRINGS,
    meta=r"(?m:^[ \t]*#[ \t]*\w+)|@\w+",
    keyword=_words(
        "auto break case catch char class const continue default delete do double else enum "
        "extends extern false final finally float for fun if implements import int interface "
        "let long namespace new null nullptr override package private protected public return "
        "short signed sizeof static struct super switch template this throw throws true try "
        "typedef union unsigned using val var virtual void volatile while func guard"
    ),
    number=_C_NUMBER,
)
_DIFF = re.compile(r"(?m)(?P<inserted>^\+[^\n]*)|(?P<deleted>^-[^\n]*)|(?P<hunk>^@@[^\n]*)")

_LANGUAGES: dict[str, re.Pattern[str]] = {
    **dict.fromkeys(("python", "py", "python3", "py3", "pycon"), _PYTHON),
    **dict.fromkeys(("javascript", "js", "jsx", "typescript", "ts", "tsx", "mjs"), _SCRIPT),
    **dict.fromkeys(("bash", "sh", "shell", "zsh", "console", "shell-session"), _SHELL),
    **dict.fromkeys(("json", "jsonc", "json5"), _JSON),
    **dict.fromkeys(("go", "golang"), _GO),
    **dict.fromkeys(("rust", "rs"), _RUST),
    **dict.fromkeys(("c", "h", "cpp", "c++", "cc", "hpp", "java", "csharp", "cs"), _C_FAMILY),
    **dict.fromkeys(("kotlin", "kt", "swift"), _C_FAMILY),
    **dict.fromkeys(("diff", "patch", "udiff"), _DIFF),
}
_GROUP_COLOURS = {
    "comment": COMMENT,
    "string": STRING,
    "meta": META,
    "name": NAME,
    "keyword": KEYWORD,
    "builtin": BUILTIN,
    "number": NUMBER,
    "inserted": "32",
    "deleted": "31",
    "hunk": "36",
}


def highlight(code: str, language: str) -> list[str]:
    """Code lines with ANSI colours (plain for a language nobody knows)."""
    rules = _LANGUAGES.get(language.lower())
    if rules is None:
        return _pygments(code, language.lower())
    pieces: list[str] = []
    position = 0
    for match in rules.finditer(code):
        start, end = match.span()
        if start == end:
            continue
        pieces.append(code[position:start])
        colour = _GROUP_COLOURS[match.lastgroup or ""]
        text = match.group()
        if "\n" in text:  # a colour never runs across a line end
            text = f"{RESET}\n\x1b[{colour}m".join(text.split("\n"))
        pieces.append(f"\x1b[{colour}m{text}{RESET}")
        position = end
    pieces.append(code[position:])
    return "".join(pieces).split("\n")


@lru_cache(maxsize=32)
def _lexer(language: str) -> Any:
    from pygments.lexers import get_lexer_by_name
    from pygments.util import ClassNotFound

    try:
        return get_lexer_by_name(language, stripnl=False, ensurenl=False)
    except ClassNotFound:
        return None


_PYGMENTS_COLOURS = {
    "Keyword": KEYWORD,
    "Name.Builtin": BUILTIN,
    "Name.Function": NAME,
    "Name.Class": NAME,
    "Name.Decorator": META,
    "Name.Tag": KEYWORD,
    "Name.Attribute": BUILTIN,
    "Literal.String": STRING,
    "Literal.Number": NUMBER,
    "Comment": COMMENT,
    "Operator.Word": META,
    "Generic.Inserted": "32",
    "Generic.Deleted": "31",
    "Generic.Heading": "1",
    "Generic.Subheading": "35",
    "Error": "31",
}


@lru_cache(maxsize=512)
def _token_colour(token_type: Any) -> str:
    while token_type:
        name = ".".join(token_type)
        if name in _PYGMENTS_COLOURS:
            return _PYGMENTS_COLOURS[name]
        token_type = token_type.parent
    return ""


def _pygments(code: str, language: str) -> list[str]:
    lexer = _lexer(language) if language else None
    if lexer is None:
        return code.split("\n")
    lines: list[str] = []
    current: list[str] = []
    for token_type, value in lexer.get_tokens(code):
        colour = _token_colour(token_type)
        for index, piece in enumerate(value.split("\n")):
            if index:
                lines.append("".join(current))
                current = []
            if piece:
                current.append(f"\x1b[{colour}m{piece}{RESET}" if colour else piece)
    lines.append("".join(current))
    return lines
