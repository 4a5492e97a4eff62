"""Where a command (``bash``, a job, a terminal) runs, and what it changed, so undo can put it back.

A command is launched inside a ``CommandScope`` (``CommandChanges.scope``), which knows how to
launch it (``argv``) and, when asked (``take_in``), what it changed since the scope opened or
since the last take-in, as ``FileChange``s with the old and new bytes of each file. The tool round
(turn/calls.py) records them in the turn's change set (snapshots.py ``record_command_changes``)
and says which files changed. ``bash`` takes its changes in when the command ends; a job or a
terminal when it is read, waited for or stopped.

Without the sandbox a command writes the project directly, so the scope captures the working
tree before (``GitScope``, worktree_capture.py: on Linux a watch of the project's folders
spares the before-pass when nothing changed since the last capture) and compares after; outside a git repository
nothing is kept and the change set says so (``UntrackedScope``: what the command changed is
"not restorable"). A file larger than ``max_file_bytes``, a symbolic link or a submodule is
recorded as not restorable too, by name.

With the sandbox (sandbox/: bubblewrap, ``sandbox = "auto"`` where it works) a ``bash`` command
runs with the project overlaid (``OverlayScope``): it writes into the overlay's upper folder, and
its close takes the changed and deleted files into the project, each file's old bytes read first
(sandbox/overlay.py). A job or a terminal runs in the same sandbox with the project bound
writable (an overlay would hide from a long-running server the edits made after it started),
its changes found by the git capture as without the sandbox; so is a ``bash`` command while a
job or a terminal of its session runs (an overlay does not show what others write under it).
A code-mode script's command runs in an overlay too, read back into the script's stage instead
of the project (``script_box``, codemode/overlaid.py). A sandboxed command the user did not
allow (``unasked``: only the read-only default let it run) sees every secret file of the project
empty (``masks``, sandbox/secret_files.py).

A session with extra roots (``extra_roots``: an ACP client's ``additionalDirectories``) has its
sandbox bounded by all its roots: each is overlaid for a ``bash`` command as the project is, with
upper and work folders of its own, and taken in the same way, its files named by their absolute
paths (workspace/paths.py ``project_path``, the key undo knows them by); jobs and terminals get
them bound writable; their secret files are masked and their protected folders read-only too. An
extra root inside another root is that root's already (bwrap.py mounts nothing for it).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

import anyio

from totem_engine import scratch
from totem_engine.file_changes import FileChange
from totem_engine.sandbox.bwrap import find_bwrap, probe, script_argv
from totem_engine.sandbox import seccomp
from totem_engine.sandbox.overlay import take_in
from totem_engine.sandbox.secret_files import SecretFiles
from totem_engine.sandbox.session import SandboxSession
from totem_engine.worktree_capture import GitCapture, GitError, TreeChange

__all__ = ["CommandChanges", "CommandScope"]


class CommandScope(ABC):
    """Where one command (or one job, one terminal) runs, and what it changed."""

    def argv(self, argv: list[str]) -> list[str]:
        """How to launch ``argv`` in this scope (the sandbox wraps it)."""
        return argv

    @property
    def sandboxed(self) -> bool:
        """Whether ``argv`` runs its command in the session's sandbox."""
        return False

    @property
    def offline(self) -> bool:
        """Whether its command has no network: the sandbox's own namespace, loopback only, which
        nothing outside the session's sandbox reaches (``sandbox_network`` off)."""
        box = getattr(self, "box", None)
        return self.sandboxed and box is not None and not box.network

    @property
    def namespace_pid(self) -> int | None:
        """The sandbox's holder process whose network namespace its command has, when it is
        offline (a loopback forward watches and enters it, sandbox/forward.py); else None."""
        box = getattr(self, "box", None)
        return box.holder_pid if self.offline and box is not None else None

    @abstractmethod
    async def take_in(self) -> list[FileChange]:
        """What changed since the scope opened or since the last take-in, now in the project."""

    async def close(self) -> list[FileChange]:
        """The last take-in; the scope's resources released. Safe to call twice."""
        return await self.take_in()


class SandboxRequired(RuntimeError):
    """``sandbox = "always"`` and the sandbox does not work here: no command runs."""


@dataclass(frozen=True)
class SandboxSettings:
    """The config's sandbox keys as the scopes use them (docs/config.md ``sandbox``)."""

    mode: Literal["auto", "always", "never"] = "never"
    network: bool = False  # sandbox_network
    writable: tuple[Path, ...] = ()  # sandbox_writable: folders bound writable (tool caches)
    hidden: tuple[Path, ...] = ()  # Totem's own data and config folders, hidden from commands


class Boxed(CommandScope):
    """A scope whose commands run in the session's sandbox with the project bound writable,
    ``masked`` files shown empty."""

    box: SandboxSession | None = None
    masked: tuple[Path, ...] = ()

    def argv(self, argv: list[str]) -> list[str]:
        return argv if self.box is None else self.box.wrap(argv, overlay=None, masked=self.masked)

    @property
    def sandboxed(self) -> bool:
        return self.box is not None


class OverlayScope(CommandScope):
    """One command in the session's sandbox with the project overlaid, and each of the session's
    extra roots (``extra_roots`` False: shown read-only instead); its close takes what it wrote
    into them (sandbox/overlay.py); ``masked`` files shown empty."""

    def __init__(
        self, box: SandboxSession, root: Path, *, max_file_bytes: int, command: str, masked: tuple[Path, ...] = (),
        extra_roots: bool = True,
    ):
        self.box = box
        self.root = root
        self.max_file_bytes = max_file_bytes
        self.command = command
        self.masked = masked
        self.upper, self.work = box.new_overlay()
        # Each extra root with its own (upper, work) pair: an overlay has one lower folder.
        self.extra = tuple((path, box.new_overlay()) for path in box.extra_roots) if extra_roots else None
        self._closed = False

    sandboxed = True

    def argv(self, argv: list[str]) -> list[str]:
        extra = None if self.extra is None else tuple(pair for _, pair in self.extra)
        return self.box.wrap(argv, overlay=(self.upper, self.work), masked=self.masked, extra_overlays=extra)

    async def take_in(self) -> list[FileChange]:
        changes = await self._taken(self.upper, self.root)
        for path, (upper, _) in self.extra or ():
            # An extra root's files by their absolute paths: undo's key for them (project_path).
            changes += [replace(c, path=(path / c.path).as_posix()) if c.path else c for c in await self._taken(upper, path)]
        return changes

    async def _taken(self, upper: Path, root: Path) -> list[FileChange]:
        """One root's overlay taken in; what could not be, said (one root failing leaves the
        others' changes recorded)."""
        try:
            return await anyio.to_thread.run_sync(lambda: take_in(upper, root, max_file_bytes=self.max_file_bytes))
        except OSError as exc:
            if not self.extra:
                raise
            return self.not_taken(exc)

    async def close(self) -> list[FileChange]:
        if self._closed:
            return []
        self._closed = True
        try:
            return await self.take_in()
        except OSError as exc:
            return self.not_taken(exc)
        finally:
            await self.drop()

    def not_taken(self, exc: OSError) -> list[FileChange]:
        """What the close says when the take-in failed part way."""
        return [FileChange("", unrestorable=f"what `{_short(self.command)}` wrote could not all be taken in: {exc}")]

    async def drop(self) -> None:
        """The overlays' folders removed."""
        self._closed = True
        for upper in (self.upper, *(upper for _, (upper, _) in self.extra or ())):
            await anyio.to_thread.run_sync(self.box.drop_overlay, upper)


class UntrackedScope(Boxed):
    """Nothing kept (outside git, or the capture failed): the first take-in of a command that
    may change files says that what it changed cannot be put back."""

    def __init__(self, reason: str, may_change: bool):
        self.reason = reason
        self._said = not may_change

    async def take_in(self) -> list[FileChange]:
        if self._said:
            return []
        self._said = True
        return [FileChange("", unrestorable=self.reason)]


class GitScope(Boxed):
    """The working tree captured as a git tree when it opens and at each take-in."""

    def __init__(self, capture: GitCapture, tree: str, *, max_file_bytes: int, command: str):
        self.capture = capture
        self.tree = tree
        self.max_file_bytes = max_file_bytes
        self.command = command

    async def take_in(self) -> list[FileChange]:
        return await self._compare(close=False)

    async def close(self) -> list[FileChange]:
        return await self._compare(close=True) if self.tree else []

    async def _compare(self, *, close: bool) -> list[FileChange]:
        try:
            found, now = await self.capture.changed_since(self.tree)
            self.tree = "" if close else now  # "": closed, nothing more to compare
            return await file_changes(self.capture, found, self.max_file_bytes)
        except (GitError, OSError) as exc:
            self.tree = ""
            return [FileChange("", unrestorable=f"what `{_short(self.command)}` changed could not be captured: {exc}")]


async def file_changes(capture: GitCapture, found: list[TreeChange], max_file_bytes: int) -> list[FileChange]:
    """The tree changes as file changes with their bytes; symbolic links, submodules and files
    over ``max_file_bytes`` by name only, as not restorable."""
    blobs = [b for change in found for b in (change.before, change.after) if b is not None]
    sizes = await capture.sizes(blobs)
    changes: list[FileChange] = []
    kept: list[TreeChange] = []
    for change in found:
        if not change.regular:
            changes.append(FileChange(change.path, unrestorable="a symbolic link or a submodule: undo keeps regular files only"))
            continue
        size = max(sizes.get(change.before, 0) if change.before else 0, sizes.get(change.after, 0) if change.after else 0)
        if size > max_file_bytes:
            changes.append(FileChange(change.path, unrestorable=f"{size} bytes, over the {max_file_bytes}-byte limit of undo"
                                      " ([snapshots] max_file_bytes)"))
            continue
        kept.append(change)
    data = await capture.read([b for change in kept for b in (change.before, change.after) if b is not None])
    for change in kept:
        before = data[change.before] if change.before else None
        after = data[change.after] if change.after else None
        if before != after:  # a mode change alone is not a change of content
            changes.append(FileChange(change.path, before, after))
    return sorted(changes, key=lambda c: c.path)


class CommandChanges:
    """The command scopes of one project (``root``): one git capture for all its sessions, made
    at the first command (None outside git), and each session's sandbox (``sandbox``), made at its
    first command. ``max_file_bytes``: the largest file kept for undo. ``watch``: let the capture
    watch the project's folders to spare the passes it can prove useless (worktree_capture.py)."""

    def __init__(self, root: Path, *, max_file_bytes: int, sandbox: SandboxSettings = SandboxSettings(),
                 watch: bool = True, extra_roots: tuple[Path, ...] = ()):
        self.root = root
        self.extra_roots = _apart(root.resolve(), extra_roots)
        self.max_file_bytes = max_file_bytes
        self.sandbox = sandbox
        self.watch = watch
        self._capture: GitCapture | None = None
        self._looked = False
        self._lock = anyio.Lock()
        self._boxes: dict[str, SandboxSession] = {}
        self._unavailable: str | None = None  # why the sandbox does not work here, once probed
        self._probed = False
        self._notices: dict[str, str] = {}  # session -> what it has not been told yet
        self._secrets = [SecretFiles(path) for path in (root.resolve(), *self.extra_roots)]
        self._secrets_lock = anyio.Lock()
        self._told: set[str] = set()
        # Whether a job or a terminal of the session is running (the runtime sets it): then a
        # command sees the project as they do, bound writable, not through an overlay, which would
        # not show it what they write while it runs.
        self.busy: Callable[[str], bool] = lambda session_id: False

    async def sandboxed(self, session_id: str) -> bool:
        """Whether the session's commands run in the sandbox. SandboxRequired when the config
        says ``always`` and it does not work here."""
        if self.sandbox.mode == "never":
            return False
        async with self._lock:
            if not self._probed:
                self._probed = True
                self._unavailable = await probe()
        if self._unavailable is None:
            return True
        if self.sandbox.mode == "always":
            raise SandboxRequired(f'sandbox = "always", but the sandbox does not work here: {self._unavailable}.')
        if session_id not in self._told:
            self._told.add(session_id)
            self._notices[session_id] = (
                f"The sandbox is not available here ({self._unavailable}): commands run without it and can write"
                ' wherever you can. Set sandbox = "never" to run them so without this notice.'
            )
        return False

    def notice(self, session_id: str) -> str | None:
        """What the session should be told once about its sandbox (auto, and not available)."""
        return self._notices.pop(session_id, None)

    async def scope(
        self, session_id: str, *, command: str, may_change: bool, long_lived: bool = False, escape: bool = False,
        unasked: bool = False,
    ) -> CommandScope:
        """A scope for ``command`` of ``session_id`` (``may_change``: it is not a read-only
        command; ``long_lived``: a job or a terminal, read while it runs; ``escape``: run outside
        the sandbox, as the user allowed; ``unasked``: the user did not allow it, so in the
        sandbox it sees no secret file), its before-state captured."""
        box = None if escape else await self._box(session_id)
        masked = await self.masks() if box is not None and unasked else ()
        if box is not None and not long_lived and not self.busy(session_id):
            return OverlayScope(box, self.root, max_file_bytes=self.max_file_bytes, command=command, masked=masked)
        scope = await self._captured(command, may_change)
        scope.box = box
        scope.masked = masked
        return scope

    async def masks(self) -> tuple[Path, ...]:
        """The secret files of the project and its extra roots as they are now (sandbox/secret_files.py)."""
        async with self._secrets_lock:
            found: list[Path] = []
            for secrets in self._secrets:
                found += await anyio.to_thread.run_sync(secrets.refresh)
            return tuple(sorted(set(found))) if len(self._secrets) > 1 else tuple(found)

    async def script_box(self, session_id: str) -> SandboxSession | None:
        """The session's sandbox for a code-mode script's command, which runs in an overlay of
        its own (codemode/overlaid.py); None when the session's commands run outside one, or a job
        or a terminal of it is running (an overlay would not show what they write)."""
        return None if self.busy(session_id) else await self._box(session_id)

    async def script_profile(self, session_id: str) -> Callable[[list[str], Path], list[str]] | None:
        """How a code-mode script's own process is launched (its argv, its scratch folder) when
        the session's commands run in the sandbox: bubblewrap's stricter profile (bwrap.py
        ``script_argv``); None when they do not. SandboxRequired as ``sandboxed``."""
        if not await self.sandboxed(session_id):
            return None
        bwrap = find_bwrap()
        assert bwrap is not None  # the probe found it

        def profile(argv: list[str], scratch: Path) -> list[str]:
            filter_file = seccomp.written(scratch / ".seccomp.bpf")  # read by bwrap before the script starts
            return script_argv(bwrap, argv, scratch=scratch, project=self.root, hidden=self.sandbox.hidden, filter_file=filter_file)

        return profile

    async def _captured(self, command: str, may_change: bool) -> Boxed:
        capture = await self._git()
        if capture is None:
            return UntrackedScope(
                f"the project is not a git repository, so what `{_short(command)}` changed was not kept", may_change,
            )
        try:
            tree = await capture.tree()
        except (GitError, OSError) as exc:
            return UntrackedScope(f"the project could not be captured before `{_short(command)}`: {exc}", may_change)
        return GitScope(capture, tree, max_file_bytes=self.max_file_bytes, command=command)

    async def _box(self, session_id: str) -> SandboxSession | None:
        if not await self.sandboxed(session_id):
            return None
        async with self._lock:
            box = self._boxes.get(session_id)
            if box is None:
                bwrap = find_bwrap()
                assert bwrap is not None  # the probe found it
                box = SandboxSession(bwrap, self.root, await scratch.make("sandbox"), network=self.sandbox.network,
                                     hidden=self.sandbox.hidden, writable=self.sandbox.writable,
                                     extra_roots=self.extra_roots)
                await box.start()
                self._boxes[session_id] = box
            return box

    async def _git(self) -> GitCapture | None:
        async with self._lock:
            if not self._looked:
                self._looked = True
                state = await scratch.make("capture")
                self._capture = await GitCapture.open(self.root, state, watch=self.watch)
                if self._capture is None:
                    state.rmdir()
            return self._capture

    async def aclose(self) -> None:
        """The sessions' sandboxes (their namespaces) and the capture's folder removed. Call
        after every job and terminal has been killed."""
        with anyio.CancelScope(shield=True):
            for box in self._boxes.values():
                await box.aclose()
            self._boxes.clear()
            if self._capture is not None:
                await self._capture.aclose()


def _apart(root: Path, extra_roots: tuple[Path, ...]) -> tuple[Path, ...]:
    """The extra roots (real paths) the sandbox mounts: those inside the project or inside
    another extra root are mounted with it already."""
    real = [path.resolve() for path in extra_roots]
    return tuple(
        path for path in dict.fromkeys(real)
        if path != root and root not in path.parents and not any(other in path.parents for other in real)
    )


def _short(command: str, limit: int = 60) -> str:
    line = " ".join(command.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"
