"""The interactive terminal client (`codecoder`, docs/terminal.md): prompt_toolkit for
the input, rich and our own Markdown path for the output.

    app.py          the Client: session lifecycle, the event pump, turns, questions, Ctrl+C
    screen.py       the prompt_toolkit Application: layout, keys, printing above the prompt
    backend.py      the session driven: in this process, or on the daemon (Unavailable)
    view.py         kernel events → settled text (printed once) and the live part
    stream.py       streamed Markdown cut into settled blocks and the open one
    markdown.py     Markdown blocks → ANSI, fast; paint.py (rich) for tables and quotes
    questions.py    what a confirmation approves, its menu; AskUser
    picker.py       the session picker (/resume with no id, `resume --pick`)
    diffs.py        unified diffs of edits and writes (before approval and after)
    describe.py     tool calls as a person writes them
    slash.py        the slash-command registry, custom commands; builtin.py the built-ins
    input.py        history per project, completion of /commands and @paths
    attachments.py  @path attaches a file to the message
    status.py       the footer: model, approval, context, tokens, cost
    transcript.py   an earlier conversation, compactly, on resume
    text.py         one-line previews, widths, styles (NO_COLOR)

Nothing here is imported before `codecoder` decides to run interactively; prompt_toolkit
(~100 ms) comes first, the session and rich's Markdown after the prompt is drawn.
"""
