"""One session's sandbox: its private /tmp, its network namespace, its commands' overlays.

Every command, job and terminal of a session runs in the same network namespace, so a dev server
a job started on loopback answers a later ``bash`` (and nothing outside reaches it, nor does it
reach out). bwrap cannot join a namespace another bwrap made, so the session keeps one alive: a
holder process (``bwrap --unshare-user --unshare-net ... sleep``) whose namespaces each command
enters with ``nsenter --user --net`` before its own bwrap starts; the holder's user namespace is
needed to be allowed into its network namespace. With the network allowed (``sandbox_network``)
there is no holder: commands keep the host's network. Each command has a process namespace of its
own (bwrap.py ``sandbox_argv``), not the session's: bwrap reads ``/proc/PID`` of the child it
starts, and a process namespace entered from outside would number it differently from the
host's ``/proc`` every command sees.

The session's folder (a temporary one) holds ``tmp`` (bound on /tmp in every command of the
session), the seccomp filter (seccomp.py), the empty file a masked secret shows (secret_files.py)
and one ``upper``/``work`` pair per overlaid command and root (the project, and each of the
session's extra roots). ``aclose`` kills the holder and removes the folder.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
from pathlib import Path

import anyio
from anyio.abc import Process

from totem_engine.sandbox import seccomp
from totem_engine.sandbox.bwrap import Mounts, RootMount, make_removable, sandbox_argv

__all__ = ["SandboxSession"]

HOLDER_WAIT = 10.0  # seconds for the holder to say it is ready


class SandboxSession:
    """The sandbox of one session of the project ``root`` and its ``extra_roots`` (real paths,
    none inside another root), kept in ``folder`` (an empty one); ``start`` before the first
    command."""

    def __init__(
        self, bwrap: Path, root: Path, folder: Path, *, network: bool, hidden: tuple[Path, ...], writable: tuple[Path, ...],
        extra_roots: tuple[Path, ...] = (),
    ):
        self.bwrap = bwrap
        self.root = root
        self.extra_roots = extra_roots
        self.network = network
        self.hidden = hidden
        self.writable = writable
        self.folder = folder  # the session's own (scratch.make), removed by aclose
        self.tmp = self.folder / "tmp"
        self.tmp.mkdir()
        self.filter = seccomp.written(self.folder / "seccomp.bpf")
        self.empty = self.folder / "empty"  # bound read-only where the project has no .totem
        self.empty.mkdir()
        self.blank = self.folder / "blank"  # the empty file a masked secret shows
        self.blank.touch(mode=0o444)
        self._holder: Process | None = None
        self._holder_pid: int | None = None  # the holder's process inside its namespaces
        self._overlays = 0

    async def start(self) -> None:
        """Start the namespace holder (none when the network is allowed)."""
        if self.network or self._holder is not None:
            return
        read, write = os.pipe()
        try:
            with anyio.CancelScope(shield=True):  # a started holder must be known, to be killed
                self._holder = await anyio.open_process(
                    [str(self.bwrap), "--unshare-user", "--unshare-net", "--die-with-parent", "--ro-bind", "/", "/",
                     "--info-fd", str(write), "--", "sleep", "2147483647"],
                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                    start_new_session=True, pass_fds=(write,),
                )
        finally:
            os.close(write)
        try:
            with anyio.fail_after(HOLDER_WAIT):
                info = await anyio.to_thread.run_sync(_read_all, read, abandon_on_cancel=True)
                pid = int(json.loads(info)["child-pid"])
                # bwrap says the child's pid before it has mapped the user namespace's ids; joined
                # earlier, a command could not make its own namespace inside it.
                while not _mapped(pid):
                    await anyio.sleep(0.005)
        finally:
            os.close(read)
        self._holder_pid = pid

    @property
    def holder_pid(self) -> int | None:
        """The holder's process, whose namespaces the session's commands enter (a loopback
        forward watches and enters them too, forward.py); None when the network is allowed."""
        return self._holder_pid

    def wrap(
        self, argv: list[str], *, overlay: tuple[Path, Path] | None, masked: tuple[Path, ...] = (),
        extra_overlays: tuple[tuple[Path, Path], ...] | None = None,
    ) -> list[str]:
        """``argv`` as the session's sandbox runs it: the project overlaid (``overlay``: its upper
        and work folders) or bound writable (None); ``masked``: files shown empty;
        ``extra_overlays``: one (upper, work) pair per extra root, in their order; None: the extra
        roots bound writable with the project, or shown read-only when only it is overlaid (a
        script's command, whose stage holds the project alone)."""
        if extra_overlays is not None:
            extra = tuple(RootMount(path, pair) for path, pair in zip(self.extra_roots, extra_overlays, strict=True))
        else:
            extra = tuple(RootMount(path, read_only=overlay is not None) for path in self.extra_roots)
        mounts = Mounts(
            root=self.root, tmp=self.tmp, overlay=overlay, extra=extra, hidden=self.hidden, writable=self.writable,
            masked=masked, empty=self.empty, blank=self.blank, seccomp=self.filter,
        )
        inner = sandbox_argv(self.bwrap, mounts, argv, share_net=True)
        if self._holder_pid is None:
            return inner
        pid = self._holder_pid
        return ["nsenter", f"--user=/proc/{pid}/ns/user", f"--net=/proc/{pid}/ns/net", "--preserve-credentials", "--", *inner]

    def new_overlay(self) -> tuple[Path, Path]:
        """A fresh (upper, work) pair for one command."""
        self._overlays += 1
        pair = self.folder / f"overlay{self._overlays}"
        upper, work = pair / "upper", pair / "work"
        upper.mkdir(parents=True)
        work.mkdir()
        return upper, work

    def drop_overlay(self, upper: Path) -> None:
        make_removable(upper.parent)
        shutil.rmtree(upper.parent, ignore_errors=True)

    async def aclose(self) -> None:
        """The holder killed (its namespace goes with it), the session's folder removed."""
        with anyio.CancelScope(shield=True):
            if self._holder is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self._holder.pid, signal.SIGKILL)  # its own group: bwrap and sleep
                await self._holder.wait()
                await self._holder.aclose()
                self._holder = None
            await anyio.to_thread.run_sync(self._remove)

    def _remove(self) -> None:
        make_removable(self.folder)
        shutil.rmtree(self.folder, ignore_errors=True)


def _mapped(pid: int) -> bool:
    try:
        return bool(Path(f"/proc/{pid}/uid_map").read_text().strip())
    except OSError:
        raise RuntimeError("the sandbox's namespace holder ended as it started") from None


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 65536):
        chunks.append(chunk)
    return b"".join(chunks)
