"""Interactive terminals: programs that want a terminal (a REPL, ``npm init``, a y/n prompt, a
curses program), run on a pseudo-terminal (the terminal tool, tools/terminal.py).

A terminal is a shell command started in the project root on the standard library's ``pty``,
in a session and process group of its own with the pty as its controlling terminal, so job
control, ``/dev/tty`` and Ctrl-C reach the program as they would in a real terminal. What it
writes is fed, as it comes, to a ``pyte`` screen (a VT100/xterm emulator): the agent reads the
screen the program drew, not the escape sequences that drew it. macOS and Linux only: Windows
has no ``pty`` (its ConPTY needs native code, which seed 001 rules out).

Terminals live like background jobs, as processes.py keeps them: by session, owned by the
runtime, killed with their whole process group when the session's turn is aborted (unless
``jobs_survive_abort``) and when the runtime closes.
"""

from __future__ import annotations

import asyncio
import codecs
import os
import re
import sys
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import anyio

from totem_engine.command_env import command_environ
from totem_engine.processes import (
    Ending,
    ProcessNotFound,
    ProcessRefused,
    SessionProcess,
    SessionProcesses,
)
from totem_engine.tools.bash import kill_group, shell

if TYPE_CHECKING:  # imported when the first terminal opens: most runs open none
    import pyte

MAX_OPEN = 5  # terminals open at once in one session
COLUMNS, LINES = 100, 30  # the screen a program sees (TIOCGWINSZ) and the agent reads
QUIET = 0.3  # seconds without output after which a screen counts as drawn
# Before its first output a program may still be starting (a sandbox, an interpreter): a start
# counts as drawn only after this long without any output.
QUIET_AT_START = 2.0
DEFAULT_WAIT = 5.0  # seconds a read waits at most for the program to go quiet

# The child makes the pty its controlling terminal before the shell starts: Popen's
# start_new_session gives a new session but no terminal, and preexec_fn is unsafe with threads.
_TAKE_TERMINAL = (
    "import fcntl, os, sys, termios; fcntl.ioctl(0, termios.TIOCSCTTY, 0); os.execvp(sys.argv[1], sys.argv[1:])"
)

# Keys by name, as the model writes them in ``keys``: <Enter>, <C-c>, <Up>, ...
NAMED_KEYS = {
    "enter": "\r", "return": "\r", "tab": "\t", "esc": "\x1b", "escape": "\x1b", "space": " ",
    "backspace": "\x7f", "delete": "\x1b[3~", "up": "\x1b[A", "down": "\x1b[B", "right": "\x1b[C",
    "left": "\x1b[D", "home": "\x1b[H", "end": "\x1b[F", "pageup": "\x1b[5~", "pagedown": "\x1b[6~",
}
_KEY = re.compile(r"<([A-Za-z]+|[Cc]-[A-Za-z@\[\\\]^_])>")


class TerminalNotFound(ProcessNotFound):
    """No terminal of that id in the session."""


class TerminalRefused(ProcessRefused):
    """A terminal that may not open: no pty here, too many open, or the project is closing."""


def keystrokes(keys: str) -> str:
    """``keys`` as the bytes a terminal sends: ``<Enter>``, ``<Tab>``, ``<Up>``, ``<C-c>`` (any
    ``<C-x>``) and the other names of ``NAMED_KEYS`` become their codes; a newline is Enter (a
    terminal sends a carriage return); every other character is typed as it is. An unknown
    ``<name>`` is typed literally."""

    def code(match: re.Match[str]) -> str:
        name = match.group(1)
        if name[:2].lower() == "c-":
            return chr(ord(name[2].upper()) & 0x1F)
        return NAMED_KEYS.get(name.lower(), match.group(0))

    return _KEY.sub(code, keys.replace("\r\n", "\r").replace("\n", "\r"))


@dataclass
class Terminal(SessionProcess):
    master: int  # the pty's controller side, non-blocking; -1 once closed
    screen: pyte.Screen
    stream: pyte.Stream
    last_output: float = field(default_factory=time.monotonic)
    printed: bool = False  # it wrote something
    ended: anyio.Event = field(default_factory=anyio.Event)  # the pty is at its end: the program is gone
    decoder: codecs.IncrementalDecoder = field(default_factory=lambda: codecs.getincrementaldecoder("utf-8")("replace"))

    @property
    def running(self) -> bool:
        return self.process.returncode is None

    def feed(self, data: bytes) -> None:
        self.printed = True
        self.last_output = time.monotonic()
        self.stream.feed(self.decoder.decode(data))

    async def type(self, keys: str) -> None:
        """``keys`` (see ``keystrokes``) written to the program's input; a full input buffer waits
        for the program to read."""
        data = keystrokes(keys).encode()
        self.last_output = time.monotonic()  # the answer to these keys is what a settle waits for
        while data and self.master >= 0:
            try:
                data = data[os.write(self.master, data):]
            except BlockingIOError:
                await anyio.sleep(0.01)

    def answer(self, text: str) -> None:
        """A terminal's own answer to a query the program sent (a cursor position report): a few
        bytes, written at once, dropped if the program reads nothing."""
        if self.master >= 0:
            try:
                os.write(self.master, text.encode())
            except OSError:
                pass

    def text(self) -> str:
        """The screen as text: its lines without trailing blanks, and no empty lines at its end."""
        lines = [line.rstrip() for line in self.screen.display]
        while lines and not lines[-1]:
            lines.pop()
        return "\n".join(lines)

    async def settle(self, timeout: float) -> None:
        """Until the program has been quiet for ``QUIET`` seconds (``QUIET_AT_START`` before it
        printed anything), has ended, or ``timeout`` passed."""
        deadline = time.monotonic() + timeout
        while not self.ended.is_set() and time.monotonic() < deadline:
            quiet = QUIET if self.printed else QUIET_AT_START
            quiet_for = time.monotonic() - self.last_output
            if quiet_for >= quiet:
                return
            with anyio.move_on_after(min(QUIET, quiet - quiet_for, deadline - time.monotonic())):
                await self.ended.wait()


class Terminals(SessionProcesses[Terminal]):
    """The terminals of every session of one runtime, by session."""

    noun = "terminal"
    prefix = "term"
    NotFound = TerminalNotFound
    Refused = TerminalRefused

    async def start(
        self, session_id: str, command: str, *, may_change: bool = True, escape: bool = False, unasked: bool = False,
        env_pass: tuple[str, ...] = (),
    ) -> Terminal:
        """``command`` started in a terminal of the session (``may_change``: not a read-only
        command; ``escape``: outside the sandbox, as the user allowed; ``unasked``: the user did
        not allow it, so it sees no secret file and no credential variable but those of
        ``env_pass``)."""
        if sys.platform == "win32":
            raise TerminalRefused("The terminal needs a pseudo-terminal (pty), which only macOS and Linux have.")
        self._admit(session_id, MAX_OPEN, "are open already")
        import fcntl
        import struct
        import termios

        import pyte

        scope = await self._scope(session_id, command, may_change=may_change, escape=escape, unasked=unasked)
        argv = scope.argv([shell(), "-c", command]) if scope else [shell(), "-c", command]
        master, child = os.openpty()
        fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", LINES, COLUMNS, 0, 0))
        os.set_blocking(master, False)
        env = {**command_environ(unasked=unasked, passed=env_pass), "TERM": "xterm", "COLUMNS": str(COLUMNS), "LINES": str(LINES)}
        try:
            with anyio.CancelScope(shield=True):  # a cancel mid-spawn would leave a group nobody kills
                process = await anyio.open_process(
                    [sys.executable, "-c", _TAKE_TERMINAL, *argv], cwd=self.root,
                    stdin=child, stdout=child, stderr=child, start_new_session=True, env=env,
                )
        except OSError as exc:
            os.close(master)
            raise TerminalRefused(f"Could not start the shell: {exc}") from None
        finally:
            os.close(child)  # the child holds its own copy: the pty ends when the program does
        screen = pyte.Screen(COLUMNS, LINES)
        terminal = Terminal(
            id=self._next_id(session_id), session_id=session_id, command=command, process=process,
            master=master, screen=screen, stream=pyte.Stream(screen), scope=scope,
        )
        # What the program asks of its terminal (a cursor position report, the device
        # attributes) is answered as a terminal would, so a curses program does not hang on it.
        screen.write_process_input = terminal.answer
        self._add(terminal)
        asyncio.get_running_loop().add_reader(master, self._read, terminal)
        return terminal

    def _read(self, terminal: Terminal) -> None:
        try:
            data = os.read(terminal.master, 65536)
        except BlockingIOError:
            return
        except OSError:  # EIO: every holder of the terminal's other side is gone
            data = b""
        if data:
            terminal.feed(data)
        else:
            self._close_pty(terminal)

    def _close_pty(self, terminal: Terminal) -> None:
        if terminal.master < 0:
            return
        asyncio.get_running_loop().remove_reader(terminal.master)
        os.close(terminal.master)
        terminal.master = -1
        terminal.ended.set()

    async def _end(self, terminal: Terminal, ending: Ending) -> None:
        """``ending`` is not kept: a terminal shows its exit code alone."""
        with anyio.CancelScope(shield=True):  # an abort landing here must not leave the group alive
            await kill_group(terminal.process)
            with anyio.move_on_after(0.25):  # what the program wrote as it ended
                await terminal.ended.wait()
            self._close_pty(terminal)
            await terminal.process.aclose()
