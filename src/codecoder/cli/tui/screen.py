"""The prompt_toolkit side: one Application for the whole session (not full screen), its
layout, its keys, and printing above it.

    settled output (scrollback)      printed once by `print_above`
    ─────────────────────────────
    live part                        the open Markdown block, running tools, reasoning
    question                         a confirmation's menu, an AskUser's answer line
    session picker                   /resume, `codecoder resume --pick` (picker.py)
    queued messages
    status                           spinner · elapsed · what Ctrl+C does now
    > input                          always there: typing during a turn queues
    (room for the completion menu)   only while the menu is open
    footer                           model · approval · context · tokens · cost

`print_above` erases the bottom part, writes the settled text and draws the bottom part
again, inside one synchronized update (DEC mode 2026) where the terminal has it, so
the answer streams without flicker. It never leaves raw mode (prompt_toolkit's
run_in_terminal does, and the terminal would echo keys typed at that moment).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from prompt_toolkit.application import Application
from prompt_toolkit.buffer import Buffer
from prompt_toolkit.filters import Condition, has_focus
from prompt_toolkit.formatted_text import FormattedText
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.keys import Keys
from prompt_toolkit.layout import (
    ConditionalContainer,
    Float,
    FloatContainer,
    FormattedTextControl,
    HSplit,
    Layout,
    Window,
)
from prompt_toolkit.layout.controls import BufferControl
from prompt_toolkit.layout.dimension import Dimension
from prompt_toolkit.layout.menus import CompletionsMenu
from prompt_toolkit.layout.processors import BeforeInput
from prompt_toolkit.output import ColorDepth
from prompt_toolkit.styles import Style

from codecoder.cli.tui.input import InputCompleter, history
from codecoder.cli.tui.text import MARK, fragments

if TYPE_CHECKING:
    from codecoder.cli.tui.app import Client

SYNC_START = "\x1b[?2026h"
SYNC_END = "\x1b[?2026l"
PROMPT = f"{MARK} "
STYLE = Style.from_dict(
    {
        "prompt": "bold",
        "footer": "fg:ansibrightblack",
        "status": "fg:ansicyan",
        "notice": "fg:ansiyellow",
        "queued": "fg:ansibrightblack italic",
        "question": "bold fg:ansiyellow",
        "key": "bold fg:ansicyan",
        "complaint": "fg:ansired",
        "picked": "reverse",
        "answer-prompt": "bold fg:ansiyellow",
        "completion-menu": "bg:ansibrightblack fg:ansiwhite",
        "completion-menu.completion.current": "bg:ansicyan fg:ansiblack",
    }
)
MENU_ROWS = 8
"""The most completions the pop-up shows at once (it scrolls through the rest)."""
MENU_FEWEST = 3
"""Rows the pop-up keeps when the terminal is too short for all of them."""
_IGNORED = (Keys.Vt100MouseEvent, Keys.ScrollUp, Keys.ScrollDown, Keys.Ignore)


def _shift_enter_as_newline() -> None:
    """Terminals that tell Shift+Enter apart send these (kitty's and xterm's
    modifyOtherKeys forms): a new line, as Alt+Enter."""
    from prompt_toolkit.input.ansi_escape_sequences import ANSI_SEQUENCES

    for sequence in ("\x1b[13;2u", "\x1b[27;2;13~"):
        ANSI_SEQUENCES.setdefault(sequence, Keys.ControlJ)


class Screen:
    def __init__(self, client: Client, *, color: bool) -> None:
        self.client = client
        _shift_enter_as_newline()
        self.input = Buffer(
            multiline=True,
            history=history(client.workspace),
            completer=InputCompleter(client.registry, lambda: client.workspace, client.arguments),
            complete_while_typing=Condition(self._completing),
            enable_history_search=False,
        )
        self.answer = Buffer(multiline=False)
        self.app: Application[int] = Application(
            layout=Layout(self._layout(), focused_element=self.input),
            key_bindings=self._keys(),
            style=STYLE,
            full_screen=False,
            mouse_support=False,
            color_depth=None if color else ColorDepth.DEPTH_1_BIT,
            min_redraw_interval=0.03,
            max_render_postpone_time=0.05,
            erase_when_done=True,  # leaving clears the status, input and footer
        )
        self.app.key_processor.after_key_press += lambda _: client.typed()
        self.app.key_processor.before_key_press += lambda _: client.count_key()
        self._oflag: bool | None = None
        self._live_cache: tuple[str, list[tuple[str, str]]] = ("", [])

    # --- printing above ------------------------------------------------------------------

    def print_above(self, text: str) -> None:
        if not text:
            return
        app = self.app
        output = app.output
        if not app.is_running:  # before the Application starts, or after it ended
            output.write_raw(text)
            output.flush()
            return
        output.write_raw(SYNC_START)
        app.renderer.erase(leave_alternate_screen=False)
        if self._oflag is None:
            self._oflag = _output_processing()
        output.write_raw(text if self._oflag else text.replace("\n", "\r\n"))
        app._request_absolute_cursor_position()
        app._redraw()
        output.write_raw(SYNC_END)
        output.flush()

    def clear(self) -> None:
        app = self.app
        if app.is_running:
            app.renderer.clear()

    @property
    def columns(self) -> int:
        try:
            return max(self.app.output.get_size().columns, 20)
        except OSError:
            return 80

    @property
    def rows(self) -> int:
        try:
            return max(self.app.output.get_size().rows, 5)
        except OSError:
            return 24

    # --- layout ----------------------------------------------------------------------------

    def _completing(self) -> bool:
        text = self.input.document.text_before_cursor
        if text.startswith("/") and "\n" not in text:
            return True
        word = text.rsplit(None, 1)[-1] if text and not text[-1].isspace() else ""
        return word.startswith("@")

    def _layout(self) -> Any:
        client = self.client
        live = ConditionalContainer(
            Window(FormattedTextControl(self._live), dont_extend_height=True, wrap_lines=False),
            filter=Condition(client.has_live),
        )
        question = ConditionalContainer(
            Window(FormattedTextControl(self._question), dont_extend_height=True, wrap_lines=True),
            filter=Condition(lambda: client.question is not None),
        )
        answer = ConditionalContainer(
            Window(
                BufferControl(
                    self.answer,
                    input_processors=[
                        BeforeInput(self._answer_prompt, style="class:answer-prompt")
                    ],
                ),
                height=1,
            ),
            filter=Condition(client.asking.answering),
        )
        picker = ConditionalContainer(
            Window(FormattedTextControl(self._picker), dont_extend_height=True, wrap_lines=False),
            filter=Condition(lambda: client.picker is not None),
        )
        queued = ConditionalContainer(
            Window(FormattedTextControl(self._queued), dont_extend_height=True, wrap_lines=False),
            filter=Condition(lambda: bool(client.pending)),
        )
        status = ConditionalContainer(
            Window(FormattedTextControl(self._status), height=1, wrap_lines=False),
            filter=Condition(client.has_status),
        )
        prompt = Window(
            BufferControl(
                self.input,
                input_processors=[BeforeInput(PROMPT, style="class:prompt")],
            ),
            height=Dimension(min=1, max=12),
            wrap_lines=True,
            dont_extend_height=True,
        )
        # The pop-up floats over the input and the rows reserved under it, never over the
        # status line or the footer: a float is drawn only inside its container, and the
        # layout is no taller than what it needs (it is not full screen), so without the
        # room the menu had the footer's one row.
        room = ConditionalContainer(
            Window(height=self._menu_room), filter=Condition(lambda: self._menu_rows() > 0)
        )
        menu = Float(xcursor=True, ycursor=True, content=CompletionsMenu(max_height=MENU_ROWS))
        editor = FloatContainer(HSplit([prompt, room]), floats=[menu])
        footer = Window(FormattedTextControl(self._footer), height=1, style="class:footer")
        return HSplit([live, question, answer, picker, queued, status, editor, footer])

    def _menu_rows(self) -> int:
        """Rows the open completion menu wants (none when it is closed, or hidden: it is
        drawn only for the focused buffer, and a question's answer line may have it)."""
        state = self.input.complete_state if self.app.current_buffer is self.input else None
        return min(len(state.completions), MENU_ROWS) if state is not None else 0

    def _menu_room(self) -> Dimension:
        """The menu's rows, fewer (down to a few) when the terminal is too short for the
        live part above and all of them: the layout shares the rows out."""
        rows = self._menu_rows()
        return Dimension(min=min(rows, MENU_FEWEST), preferred=rows, max=rows)

    def _live(self) -> Any:
        # The rows an open menu takes are not the live part's: cut to fewer lines, it
        # keeps showing its newest ones (a window too short would show its first).
        rows = self.rows - self._menu_rows()
        text = self.client.live_text(max(4, min(rows - 8, rows // 2)), self.columns)
        if text != self._live_cache[0]:
            self._live_cache = (text, fragments(text))
        return self._live_cache[1]

    def _question(self) -> Any:
        return FormattedText(self.client.asking.fragments())

    def _picker(self) -> Any:
        picker = self.client.picker
        return FormattedText(picker.fragments(self.columns) if picker is not None else [])

    def _answer_prompt(self) -> str:
        return self.client.asking.prompt()

    def _queued(self) -> Any:
        return FormattedText(self.client.queued_fragments(self.columns))

    def _status(self) -> Any:
        return FormattedText(self.client.status_fragments())

    def _footer(self) -> Any:
        return self.client.footer_text(self.columns)

    # --- keys ------------------------------------------------------------------------------

    def _keys(self) -> KeyBindings:  # noqa: C901 - one small handler per key
        client = self.client
        keys = KeyBindings()
        on_input = has_focus(self.input)
        on_answer = has_focus(self.answer)
        menu = Condition(client.asking.menu_armed)

        @keys.add("enter", filter=on_input)
        def _enter(event: KeyPressEvent) -> None:
            buffer = self.input
            state = buffer.complete_state
            if state is not None and state.current_completion is not None:
                buffer.apply_completion(state.current_completion)
                return
            if event.key_processor.input_queue:  # more keys in the same read: a paste
                buffer.insert_text("\n")  # from a terminal without bracketed paste
                return
            client.submit_input(buffer.text)

        @keys.add("c-g", filter=on_input)
        def _steer(event: KeyPressEvent) -> None:
            client.steering.steer_input(self.input)

        @keys.add("escape", "enter", filter=on_input)
        @keys.add("c-j", filter=on_input)
        def _newline(event: KeyPressEvent) -> None:
            self.input.insert_text("\n")

        @keys.add("enter", filter=on_answer)
        def _answer(event: KeyPressEvent) -> None:
            client.asking.submit_answer(self.answer.text)

        @keys.add("escape", filter=on_answer, eager=True)
        def _back(event: KeyPressEvent) -> None:
            client.asking.escape()

        @keys.add("c-d", filter=on_input)
        def _eof(event: KeyPressEvent) -> None:
            if self.input.text:
                self.input.delete()
            else:
                client.quit()

        @keys.add("c-l")
        def _clear(event: KeyPressEvent) -> None:
            self.clear()

        @keys.add("c-o")
        def _output(event: KeyPressEvent) -> None:
            client.expand_output()

        @keys.add("c-t")
        def _reasoning(event: KeyPressEvent) -> None:
            client.expand_reasoning()

        @keys.add("tab", filter=on_input)
        def _tab(event: KeyPressEvent) -> None:
            buffer = self.input
            if buffer.complete_state:
                buffer.complete_next()
            else:
                buffer.start_completion(select_first=True)

        @keys.add(Keys.Any, filter=menu)
        def _menu(event: KeyPressEvent) -> None:
            press = event.key_sequence[0]
            if press.key == Keys.CPRResponse:
                row, _ = map(int, press.data[2:-1].split(";"))
                event.app.renderer.report_absolute_cursor_row(row)
                return
            if press.key in _IGNORED:
                return
            key = press.data if len(press.data) == 1 else str(press.key)
            client.asking.menu_key(key, alone=not event.key_processor.input_queue)

        @keys.add(Keys.BracketedPaste, filter=menu)
        def _paste_at_question(event: KeyPressEvent) -> None:
            client.asking.menu_key("paste", alone=False)

        @keys.add("c-c")
        @keys.add(Keys.SIGINT)
        def _interrupt(event: KeyPressEvent) -> None:
            client.interrupt(self.input)

        self._picker_keys(keys)
        return keys

    def _picker_keys(self, keys: KeyBindings) -> None:
        """While the session picker is open it has the keys: these come after the
        others, so they win over the same keys bound for the input, and any other key is
        swallowed (typed text is not for the prompt behind the picker)."""
        client = self.client
        picking = Condition(lambda: client.picker is not None)
        moves = {"up": -1, "down": 1, "c-p": -1, "c-n": 1, "pageup": -10, "pagedown": 10}
        moves |= {"home": -(1 << 30), "end": 1 << 30}

        @keys.add(Keys.Any, filter=picking)
        @keys.add(Keys.BracketedPaste, filter=picking)
        def _swallow(event: KeyPressEvent) -> None:
            press = event.key_sequence[0]
            if press.key == Keys.CPRResponse:
                row, _ = map(int, press.data[2:-1].split(";"))
                event.app.renderer.report_absolute_cursor_row(row)

        for key, rows in moves.items():

            def _move(event: KeyPressEvent, rows: int = rows) -> None:
                if client.picker is not None:
                    client.picker.move(rows)

            keys.add(key, filter=picking)(_move)

        @keys.add("enter", filter=picking)
        def _take(event: KeyPressEvent) -> None:
            client.picked(True)

        @keys.add("escape", filter=picking, eager=True)
        @keys.add("c-c", filter=picking)
        @keys.add("c-d", filter=picking)
        @keys.add(Keys.SIGINT, filter=picking)
        def _cancel(event: KeyPressEvent) -> None:
            client.picked(False)


def _output_processing() -> bool:
    """Whether the terminal turns `\\n` into a new line (OPOST; prompt_toolkit's raw
    mode keeps it on, but a terminal may have it off)."""
    import termios

    try:
        return bool(termios.tcgetattr(1)[1] & termios.OPOST)
    except (termios.error, OSError):
        return True
