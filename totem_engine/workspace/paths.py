"""Confinement of every path a tool touches to the project's roots: a hard deny, never a question.

A project has one root (its folder) and, for a session that was given more (an ACP client's
``additionalDirectories``), extra roots. A path leaves the project when, once resolved (symlinks
followed at any depth, ``..`` taken after the symlink before it, as the kernel does), it is under
none of the roots' own real paths. For a path that does not exist yet, the real path of its
deepest existing parent decides, so a new file under a symlink that points outside is refused too.

A confined file is named (``project_path``) relative to the root when under it, and by its
absolute path when in an extra root: one key for snapshots, permissions and the read ledger,
never ambiguous, since a root-relative path never starts with "/".
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Sequence
from pathlib import Path

from totem_engine.vocab.tools import ToolError


class BoundaryError(ToolError):
    """A path that leaves the project. A hard deny: no permission rule lifts it."""


def resolve_in_project(root: Path, path: str, extra_roots: Sequence[Path] = ()) -> Path:
    """The absolute real path of ``path`` (relative to ``root``, or absolute) inside ``root`` or
    one of ``extra_roots``.

    Raises BoundaryError when it is outside them all. The returned path has symlinks resolved.
    """
    if not path or not path.strip():
        raise ToolError("The path is empty.")
    if "\x00" in path:
        raise ToolError("The path contains a NUL character.")
    real_root = root.resolve()
    candidate = Path(path)
    if not candidate.is_absolute():
        candidate = real_root / candidate
    try:
        real = _real_path(candidate)
    except (OSError, RuntimeError) as exc:  # name too long; symlink loop (RuntimeError before 3.13)
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ToolError(f"{path} cannot be used as a path: {reason}.") from None
    if _within(real, real_root) or any(_within(real, extra.resolve()) for extra in extra_roots):
        return real
    raise BoundaryError(f"{path} is outside the project ({_named(real_root, extra_roots)}); files outside it are never touched.")


def _within(real: Path, real_root: Path) -> bool:
    return real == real_root or real_root in real.parents


def _named(real_root: Path, extra_roots: Sequence[Path]) -> str:
    return ", ".join(str(r) for r in (real_root, *(extra.resolve() for extra in extra_roots)))


def root_of(root: Path, real: Path, extra_roots: Sequence[Path] = ()) -> Path:
    """The real root that holds the confined path ``real``: ``root``'s, or the extra one's."""
    real_root = root.resolve()
    if _within(real, real_root):
        return real_root
    return next((r for extra in extra_roots if _within(real, r := extra.resolve())), real_root)


def project_path(root: Path, real: Path) -> str:
    """How tools name a confined path: root-relative (``relative``) under ``root``, else (a file
    in an extra root) its absolute path, with forward slashes."""
    if _within(real, root.resolve()):
        return relative(root, real)
    return real.as_posix()


def _real_path(candidate: Path) -> Path:
    """Resolve ``candidate`` as the kernel would: component by component, so a ``..`` after a
    symlink leaves the folder the link points to; a part that does not exist yet is kept as written.

    Raises OSError for a name the system refuses (too long), RuntimeError for a symlink loop."""
    real = candidate.resolve()
    real.exists()  # raises for what no lookup can take (ENAMETOOLONG); a missing path is fine
    return real


# Totem's own folder in a project (config, skills): at any depth, since any folder may be opened
# as a project.
TOTEM_FOLDER = ".totem"


def refuse_totem_file(real: Path, rel: str) -> None:
    """Raise ToolError when writing ``real`` would make a file where Totem expects its folder.

    A file named ``.totem`` makes every later run in that folder fail ("Not a directory").
    """
    if real.name.casefold() == TOTEM_FOLDER:
        raise ToolError(
            f"{rel} is not written: Totem keeps its own folder named {TOTEM_FOLDER} there (config, skills), "
            f"and a file of that name would break every later run in that folder. "
            f"Write a file inside {TOTEM_FOLDER}/ or choose another name."
        )


def relative(root: Path, real: Path) -> str:
    """The project-relative form of a confined path, with forward slashes ('.' for the root)."""
    rel = real.relative_to(root.resolve())
    return rel.as_posix() or "."


def folder_glob(rel: str) -> str:
    """What an "allow always" on a file stores: every file of its folder (``src/*``)."""
    folder = rel.rsplit("/", 1)[0] if "/" in rel else ""
    return f"{folder}/*" if folder else "*"


def closest_paths(root: Path, path: str, limit: int = 3) -> list[str]:
    """Existing project paths that look like ``path``, for a 'not found' error."""
    real_root = root.resolve()
    wanted = Path(path)
    folder = (real_root / wanted).parent
    while not folder.is_dir() and folder != real_root and real_root in folder.parents:
        folder = folder.parent
    if not folder.is_dir() or (folder != real_root and real_root not in folder.resolve().parents):
        folder = real_root
    try:
        names = [entry.name for entry in os.scandir(folder)]
    except OSError:
        return []
    matches = difflib.get_close_matches(wanted.name, names, n=limit, cutoff=0.4)
    return [relative(real_root, (folder / name).resolve()) for name in matches if (folder / name).resolve().is_relative_to(real_root)]
