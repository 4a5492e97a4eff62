"""The project's working tree captured as git objects, so what a command changed can be undone.

Without the sandbox a command writes the project directly, so its old content must be kept
before it runs. In a git repository that is cheap: ``git add -A`` into an index of Totem's own
hashes only the files whose stat data changed since the last capture (git's index stat cache),
and ``git write-tree`` names the whole tree by one id. A capture before the command and one after
it, compared with ``git diff-tree``, give every file the command created, changed or deleted,
with both contents as blobs (``changes``).

Nothing of the user's repository is touched: the capture runs with a git directory of its own
(``GIT_DIR``: a private index, seeded from a copy of the user's for its stat data, and a private
object store that borrows the user's objects as an alternate), so the user's index, refs, hooks
and object store stay as they were. It ignores the user's and the system's git config
(``GIT_CONFIG_GLOBAL=/dev/null``, ``GIT_CONFIG_NOSYSTEM``) and switches every attribute that would
change bytes on the way in off (``info/attributes``: no end-of-line conversion, no clean filter
such as git-lfs, no ident, no working-tree encoding), so a blob holds exactly the bytes the file
held and no program of the repository's runs. ``.gitignore`` still applies: ignored files
(``node_modules``, build output) are outside the capture.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import anyio

__all__ = ["GitCapture", "TreeChange"]

# Whatever a repository's .gitattributes says, a file goes in as its bytes.
_ATTRIBUTES = "* -text -filter -ident -working-tree-encoding\n"
# A split index: a capture rewrites only the entries that changed, not the whole index (on
# 100,000 files that is most of write-tree's time); old shared parts are removed at once.
_OPTIONS = ("-c", "core.fsmonitor=false", "-c", "core.autocrlf=false", "-c", "core.safecrlf=false",
            "-c", "core.quotepath=false", "-c", "gc.auto=0", "-c", "maintenance.auto=false",
            "-c", "core.splitIndex=true", "-c", "splitIndex.sharedIndexExpire=now")
_REGULAR = ("100644", "100755")
_ABSENT = "0" * 40


@dataclass(frozen=True)
class TreeChange:
    """One file that differs between two captures: its project-relative path ("/"), its blob ids
    (None: absent) and modes (git's: 100644, 100755, 120000 a symbolic link, 160000 a submodule)."""

    path: str
    before: str | None
    after: str | None
    before_mode: str
    after_mode: str

    @property
    def regular(self) -> bool:
        """Both sides are regular files or absent: what a snapshot can hold."""
        return all(mode in _REGULAR or mode == "000000" for mode in (self.before_mode, self.after_mode))


class GitError(RuntimeError):
    """A git command of the capture failed (its stderr, cut)."""


class GitCapture:
    """Captures of the project ``root`` inside the git repository around it, kept in
    ``state_dir`` (created; Totem's own, removed by ``aclose``). Build one with ``open``."""

    def __init__(self, root: Path, state_dir: Path, toplevel: Path, objects: Path, user_index: Path, prefix: str):
        self.root = root
        self.state_dir = state_dir
        self.git_dir = state_dir / "git"
        self.toplevel = toplevel
        self.objects = objects
        self.user_index = user_index
        self.prefix = prefix  # the project's path inside the repository, "" or "sub/dir/"
        self._lock = anyio.Lock()  # one index: captures run one at a time
        self._ready = False

    @classmethod
    async def open(cls, root: Path, state_dir: Path) -> GitCapture | None:
        """The capture of ``root``, or None when git is missing or ``root`` is in no repository."""
        git = shutil.which("git")
        if git is None:
            return None
        try:
            found = await _git(root, _plain_env(), "rev-parse", "--show-toplevel", "--git-common-dir", "--git-dir", "--show-prefix")
        except (GitError, OSError):
            return None
        toplevel, common, git_dir, *rest = found.split("\n")
        prefix = rest[0] if rest else ""
        return cls(root, state_dir, Path(toplevel), (root / common).resolve() / "objects",
                   (root / git_dir).resolve() / "index", prefix)

    async def tree(self) -> str:
        """The project's files as they are now, as one tree id (their blobs stored)."""
        async with self._lock:
            await self._add()
            return (await self._run("write-tree")).strip()

    async def changed_since(self, tree: str, *, keep: bool) -> tuple[list[TreeChange], str | None]:
        """What differs between ``tree`` and the project's files now, sorted by path; with
        ``keep`` also the tree of now (for the next comparison), else None (one pass less)."""
        async with self._lock:
            await self._add()
            if keep:
                now = (await self._run("write-tree")).strip()
                if now == tree:
                    return [], now
                out = await self._run("diff-tree", "-r", "-z", "--no-renames", tree, now, "--", self.prefix or ".")
                return self._parse(out), now
            out = await self._run("diff-index", "--cached", "-z", "--no-renames", tree, "--", self.prefix or ".")
            return self._parse(out), None

    def _parse(self, raw: str) -> list[TreeChange]:
        """git's raw diff format (``-z``): ``:mode mode blob blob status NUL path NUL`` each."""
        fields = raw.split("\0")
        found = []
        for meta, path in zip(fields[0::2], fields[1::2]):
            if not meta.startswith(":"):
                continue
            old_mode, new_mode, old, new, _ = meta[1:].split(" ")
            rel = path.removeprefix(self.prefix)
            found.append(TreeChange(rel, None if old == _ABSENT else old, None if new == _ABSENT else new, old_mode, new_mode))
        return sorted(found, key=lambda change: change.path)

    async def sizes(self, blobs: list[str]) -> dict[str, int]:
        """Each blob's size in bytes."""
        if not blobs:
            return {}
        out = await self._run("cat-file", "--batch-check", stdin="".join(f"{b}\n" for b in blobs))
        sizes = {}
        for line in out.splitlines():
            blob, _, size = line.split(" ")
            sizes[blob] = int(size)
        return sizes

    async def read(self, blobs: list[str]) -> dict[str, bytes]:
        """Each blob's bytes, read in one ``git cat-file --batch``."""
        if not blobs:
            return {}
        out = await _git_bytes(self.root, self._env(), "cat-file", "--batch", stdin="".join(f"{b}\n" for b in blobs))
        found, at = {}, 0
        while at < len(out):
            header_end = out.index(b"\n", at)
            blob, _, size = out[at:header_end].decode().split(" ")
            start = header_end + 1
            found[blob] = out[start : start + int(size)]
            at = start + int(size) + 1  # the newline after the content
        return found

    async def aclose(self) -> None:
        """Remove the private git directory (its index and objects)."""
        await anyio.to_thread.run_sync(lambda: shutil.rmtree(self.state_dir, ignore_errors=True))

    # -- plumbing -----------------------------------------------------------------------------

    def _make_git_dir(self) -> None:
        """A minimal git directory: HEAD, objects (borrowing the user's), info/attributes and
        info/exclude (the user's), and the index seeded from the user's (its stat cache)."""
        for folder in ("objects/info", "objects/pack", "refs", "info"):
            (self.git_dir / folder).mkdir(parents=True, exist_ok=True)
        (self.git_dir / "HEAD").write_text("ref: refs/heads/capture\n")
        (self.git_dir / "objects/info/alternates").write_text(f"{self.objects}\n")
        (self.git_dir / "info/attributes").write_text(_ATTRIBUTES)
        exclude = self.user_index.parent / "info" / "exclude"
        with contextlib.suppress(OSError):
            shutil.copyfile(exclude, self.git_dir / "info" / "exclude")
        with contextlib.suppress(OSError):
            shutil.copyfile(self.user_index, self.git_dir / "index")

    async def _add(self) -> None:
        """The private index brought up to the files as they are (git's stat cache: only what
        changed since the last capture is read and hashed)."""
        if not self._ready:
            await anyio.to_thread.run_sync(self._make_git_dir)
            self._ready = True
        try:
            await self._run("add", "-A", "--ignore-errors", "--", ".")
        except GitError:
            # An index git cannot read (a split index of the user's, a newer format): start from
            # an empty one; this capture then hashes every file once.
            with contextlib.suppress(FileNotFoundError):
                (self.git_dir / "index").unlink()
            await self._run("add", "-A", "--ignore-errors", "--", ".")

    def _env(self) -> dict[str, str]:
        return {**_plain_env(), "GIT_DIR": str(self.git_dir), "GIT_WORK_TREE": str(self.toplevel)}

    async def _run(self, *args: str, stdin: str | None = None) -> str:
        return (await _git_bytes(self.root, self._env(), *args, stdin=stdin)).decode("utf-8", "surrogateescape")


def _plain_env() -> dict[str, str]:
    """The environment without the git variables that would point elsewhere, and without the
    user's and system's git config (their fsmonitor, filters or hooks path would run programs)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull, GIT_TERMINAL_PROMPT="0", GIT_OPTIONAL_LOCKS="0", LC_ALL="C")
    return env


async def _git(cwd: Path, env: dict[str, str], *args: str) -> str:
    return (await _git_bytes(cwd, env, *args)).decode("utf-8", "surrogateescape").strip()


async def _git_bytes(cwd: Path, env: dict[str, str], *args: str, stdin: str | None = None) -> bytes:
    """git's stdout; GitError with its stderr when it fails. Its own process group."""
    result = await anyio.run_process(
        ["git", *_OPTIONS, *args], cwd=cwd, env=env, check=False, start_new_session=True,
        input=stdin.encode() if stdin is not None else None, stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL if stdin is None else None,
    )
    if result.returncode != 0:
        raise GitError(f"git {args[0]}: {result.stderr.decode(errors='replace').strip()[:300]}")
    return result.stdout
