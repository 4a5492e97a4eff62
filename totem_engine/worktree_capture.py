"""The project's working tree captured as git objects, so what a command changed can be undone.

Without the sandbox a command writes the project directly, so its old content must be kept
before it runs. In a git repository that is cheap: an index of Totem's own, kept for the whole
session, knows every file's stat data and blob; ``git status`` against it is one pass over the
files' dates (the untracked cache skips the folders whose dates did not change), and only the
paths it names are read and hashed (``git update-index``, or ``git add`` for a new folder)
before ``git write-tree`` names the whole tree by one id. A capture before the command and one after it, compared with ``git
diff-tree``, give every file the command created, changed or deleted, with both contents as
blobs (``changes``). Each capture reads the files as they are then: a file the user changed
between two commands is in the next command's before-state with the user's content.

On Linux a watch of the project's folders (tree_watch.py, inotify) spares the before-capture's
pass: when it proves that nothing in the project changed since the last capture's pass began,
the before-state is that capture's tree; when it can name what changed since (an edit, a few
files), ``status`` reads only those paths. The capture after a command always reads every file's
dates, so what the command wrote through ``mmap`` (which raises no event) is still found. Where
the watch cannot run or stops, every capture is a full pass, as without it.

Nothing of the user's repository is touched: the capture runs with a git directory of its own
(``GIT_DIR``: a private index, seeded from a copy of the user's for its stat data, and a private
object store that borrows the user's objects as an alternate), so the user's index, refs, hooks
and object store stay as they were. It ignores the user's and the system's git config
(``GIT_CONFIG_GLOBAL=/dev/null``, ``GIT_CONFIG_NOSYSTEM``) and switches every attribute that would
change bytes on the way in off (``info/attributes``: no end-of-line conversion, no clean filter
such as git-lfs, no ident, no working-tree encoding), so a blob holds exactly the bytes the file
held and no program of the repository's runs. ``.gitignore`` still applies: ignored files
(``node_modules``, build output) are outside the capture; so do the repository's
``info/exclude`` and the user's global ignore file, copied in at the first capture.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import anyio

from totem_engine.tree_watch import TreeWatch

__all__ = ["GitCapture", "TreeChange"]

# Whatever a repository's .gitattributes says, a file goes in as its bytes.
_ATTRIBUTES = "* -text -filter -ident -working-tree-encoding\n"
# A split index: a capture rewrites only the entries that changed, not the whole index (on
# 100,000 files that is most of write-tree's time); old shared parts are removed at once. The
# untracked cache: ``status`` reads again only the folders whose stat data changed (git checks
# racily clean folders as it does files). No global excludes file: its patterns are copied into
# info/exclude once (``_make_git_dir``).
_OPTIONS = ("-c", "core.fsmonitor=false", "-c", "core.autocrlf=false", "-c", "core.safecrlf=false",
            "-c", "core.quotepath=false", "-c", "gc.auto=0", "-c", "maintenance.auto=false",
            "-c", "core.splitIndex=true", "-c", "splitIndex.sharedIndexExpire=now",
            "-c", "core.untrackedCache=true", "-c", "status.relativePaths=false",
            "-c", f"core.excludesFile={os.devnull}",
            "-c", "user.name=Totem", "-c", "user.email=totem@localhost")
# What ``status`` lists: the work tree against the index, untracked folders as one entry each
# (what the untracked cache serves), a submodule by its commit only (its own files are not ours).
_STATUS = ("status", "--porcelain=v2", "-z", "--no-renames", "--untracked-files=normal", "--ignore-submodules=dirty")
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

    def __init__(self, root: Path, state_dir: Path, toplevel: Path, objects: Path, user_index: Path, prefix: str,
                 *, watch: bool = True):
        self.root = root
        self.state_dir = state_dir
        self.git_dir = state_dir / "git"
        self.toplevel = toplevel
        self.objects = objects
        self.user_index = user_index
        self.prefix = prefix  # the project's path inside the repository, "" or "sub/dir/"
        self.passes = 0  # captures that read every file's dates (the others: a tree reused, or the paths the watch named)
        self._lock = anyio.Lock()  # one index: captures run one at a time
        self._tree: str | None = None  # the index's tree when the last capture wrote it
        self._want_watch = watch
        self._watch: TreeWatch | None = None
        # The watch's count at the barrier before the pass that wrote ``_tree``: while a barrier
        # returns the same, nothing in the project changed since that pass began.
        self._clean: int | None = None

    @classmethod
    async def open(cls, root: Path, state_dir: Path, *, watch: bool = True) -> GitCapture | None:
        """The capture of ``root``, or None when git is missing or ``root`` is in no repository.
        ``watch``: spare the before-captures' passes with a watch of the folders where it can run
        (False: every capture reads every file's dates)."""
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
                   (root / git_dir).resolve() / "index", prefix, watch=watch)

    async def tree(self) -> str:
        """The project's files as they are now, as one tree id (their blobs stored): the last
        capture's tree when the watch proves nothing changed since its pass began, that tree
        with the paths it names read again when it can name them."""
        async with self._lock:
            return await self._capture(reuse=True)

    async def changed_since(self, tree: str) -> tuple[list[TreeChange], str]:
        """What differs between ``tree`` and the project's files now, sorted by path, and the
        tree of now (for the next comparison). Always a full pass: what a command wrote through
        ``mmap`` raised no event."""
        async with self._lock:
            now = await self._capture(reuse=False)
            if now == tree:
                return [], now
            out = await self._run("diff-tree", "-r", "-z", "--no-renames", tree, now, "--", self.prefix or ".")
            return self._parse(out), now

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
        out = await _git_bytes(self.toplevel, self._env(), "cat-file", "--batch", stdin="".join(f"{b}\n" for b in blobs))
        found, at = {}, 0
        while at < len(out):
            header_end = out.index(b"\n", at)
            blob, _, size = out[at:header_end].decode().split(" ")
            start = header_end + 1
            found[blob] = out[start : start + int(size)]
            at = start + int(size) + 1  # the newline after the content
        return found

    async def aclose(self) -> None:
        """Stop the watch; remove the private git directory (its index and objects)."""
        self._want_watch = False
        watch, self._watch = self._watch, None
        if watch is not None:
            await anyio.to_thread.run_sync(watch.close)
        await anyio.to_thread.run_sync(lambda: shutil.rmtree(self.state_dir, ignore_errors=True))

    # -- plumbing -----------------------------------------------------------------------------

    def _make_git_dir(self) -> None:
        """A minimal git directory: HEAD, objects (borrowing the user's), info/attributes, and
        info/exclude: the repository's and the user's global ignore file (git's default one), as
        they are now, so nothing outside the project changes what a later capture sees (the
        watch sees only the project). The index seeded from the user's (its stat cache)."""
        for folder in ("objects/info", "objects/pack", "refs", "info"):
            (self.git_dir / folder).mkdir(parents=True, exist_ok=True)
        (self.git_dir / "HEAD").write_text("ref: refs/heads/capture\n")
        (self.git_dir / "objects/info/alternates").write_text(f"{self.objects}\n")
        (self.git_dir / "info/attributes").write_text(_ATTRIBUTES)
        config_home = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
        excludes = []
        for source in (self.user_index.parent / "info" / "exclude", Path(config_home) / "git" / "ignore"):
            with contextlib.suppress(OSError):
                excludes.append(source.read_bytes().rstrip(b"\n") + b"\n")
        (self.git_dir / "info" / "exclude").write_bytes(b"".join(excludes))
        with contextlib.suppress(OSError):
            shutil.copyfile(self.user_index, self.git_dir / "index")

    async def _capture(self, *, reuse: bool) -> str:
        """The private index brought up to the files as they are, and its tree; with ``reuse``,
        the last tree when the watch saw no change since its pass began, or only the paths it
        saw change read again."""
        count = await self._barrier()
        paths = None
        if reuse and count is not None and self._clean is not None and self._tree is not None and self._watch is not None:
            if count == self._clean:
                return self._tree
            paths = await anyio.to_thread.run_sync(self._watch.paths_between, self._clean, count)
        self._clean = None  # until this pass has written its tree
        if paths is None:
            self.passes += 1
        tree = await self._pass(paths)
        self._clean = count
        return tree

    async def _barrier(self) -> int | None:
        """The watch's count of changes so far (started at the first capture); None without it."""
        if self._tree is None and self._want_watch:
            self._want_watch = False
            self._watch = await anyio.to_thread.run_sync(self._start_watch)
        if self._watch is None:
            return None
        count = await anyio.to_thread.run_sync(self._watch.barrier)
        if count is None:
            self._watch = None  # it stopped (and closed itself): full passes from now on
        return count

    def _start_watch(self) -> TreeWatch | None:
        root = self.root.resolve()
        top = self.toplevel.resolve()
        ancestors = [folder for folder in root.parents if folder.is_relative_to(top)]
        self.state_dir.mkdir(parents=True, exist_ok=True)
        return TreeWatch.start(root, ancestors, self.state_dir / "barrier")

    async def _pass(self, paths: list[str] | None = None) -> str:
        """The private index brought up to the files: every file's dates read, or only those of
        ``paths`` (from the project's root; a folder read whole). The first adds the whole
        project (git's stat cache, seeded from the user's index, spares the files the user's
        index knows unchanged); later ones add only what ``status`` names."""
        if self._tree is None:
            await anyio.to_thread.run_sync(self._make_git_dir)
            await self._add_all()
            self._tree = (await self._run("write-tree")).strip()
            # status compares with HEAD as well: a commit of this tree keeps that part short.
            head = (await self._run("commit-tree", "-m", "capture", self._tree)).strip()
            await anyio.to_thread.run_sync((self.git_dir / "HEAD").write_text, f"{head}\n")
            return self._tree
        named = () if paths is None else ("--", *(self.prefix + path for path in paths))
        changed, walk = self._changed_paths(await self._run(*_STATUS, *named))
        if changed:
            paths = "".join(f"{path}\0" for path in changed)
            if walk:
                # A new folder (its files, less the ignored ones) or a submodule: add walks them.
                await self._run("add", "-A", "--ignore-errors", "--pathspec-from-file=-", "--pathspec-file-nul", stdin=paths)
            else:
                # Files only: hashed and entered, or removed when gone, without add's pathspec pass
                # over every entry.
                await self._run("update-index", "--add", "--remove", "-z", "--stdin", stdin=paths)
            self._tree = (await self._run("write-tree")).strip()
        return self._tree

    def _changed_paths(self, raw: str) -> tuple[list[str], bool]:
        """The project's paths (from the repository's top) where the work tree differs from the
        index, in ``status --porcelain=v2 -z``: ``1 XY sub … path`` (Y, the work tree's side, not
        ``.``: X only says the index differs from HEAD, an older capture) and ``? path``; an
        untracked folder holding the project counts too. And whether one is a folder (``dir/``)
        or a submodule (``sub`` ``S…``), which ``update-index`` cannot enter."""
        found, walk = [], False
        for entry in raw.split("\0"):
            if entry.startswith("1 ") and entry[3] != ".":
                fields = entry.split(" ", 8)
                path, submodule = fields[8], fields[2].startswith("S")
            elif entry.startswith("? "):
                path, submodule = entry[2:], False
            else:
                continue
            if path.startswith(self.prefix) or self.prefix.startswith(path):
                found.append(path)
                walk = walk or submodule or path.endswith("/")
        return found, walk

    async def _add_all(self) -> None:
        """Every file of the project into the private index."""
        try:
            await self._run("add", "-A", "--ignore-errors", "--", self.prefix or ".")
        except GitError:
            # An index git cannot read (a split index of the user's, a newer format): start from
            # an empty one; this capture then hashes every file once.
            with contextlib.suppress(FileNotFoundError):
                (self.git_dir / "index").unlink()
            await self._run("add", "-A", "--ignore-errors", "--", self.prefix or ".")

    def _env(self) -> dict[str, str]:
        # Optional locks on: status writes the refreshed stat data and untracked cache into the
        # private index. Literal pathspecs: a path status names is a path, not a pattern.
        return {**_plain_env(), "GIT_DIR": str(self.git_dir), "GIT_WORK_TREE": str(self.toplevel),
                "GIT_OPTIONAL_LOCKS": "1", "GIT_LITERAL_PATHSPECS": "1"}

    async def _run(self, *args: str, stdin: str | None = None) -> str:
        """git in the private directory, from the repository's top (status names paths from there)."""
        return (await _git_bytes(self.toplevel, self._env(), *args, stdin=stdin)).decode("utf-8", "surrogateescape")


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
