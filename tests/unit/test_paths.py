"""Confinement of paths to the project root, and 'did you mean' suggestions."""

from __future__ import annotations

from pathlib import Path

import pytest

from totem_engine.vocab.tools import ToolError
from totem_engine.workspace.paths import (
    BoundaryError, closest_paths, folder_glob, project_path, relative, resolve_in_project, root_of,
)


@pytest.fixture
def layout(tmp_path: Path) -> Path:
    """``tmp/R/ws`` is the project; ``tmp/R/OUTSIDE`` is a sibling outside it."""
    root = tmp_path / "R" / "ws"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "src" / "main.py").write_text("print('hi')\n")
    (root / "src" / "pkg" / "util.py").write_text("")
    (root / "README.md").write_text("readme\n")
    outside = tmp_path / "R" / "OUTSIDE"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret\n")
    return root


def test_dotdot_escape_is_refused(layout: Path):
    with pytest.raises(BoundaryError):
        resolve_in_project(layout, "../OUTSIDE/secret.txt")
    with pytest.raises(BoundaryError):
        resolve_in_project(layout, "src/../../OUTSIDE/new.txt")
    with pytest.raises(BoundaryError):
        resolve_in_project(layout, "..")


def test_dotdot_that_stays_inside_is_fine(layout: Path):
    assert resolve_in_project(layout, "src/pkg/../main.py") == (layout / "src" / "main.py").resolve()


def test_boundary_error_is_a_tool_error(layout: Path):
    with pytest.raises(ToolError) as info:
        resolve_in_project(layout, "../OUTSIDE/secret.txt")
    assert isinstance(info.value, BoundaryError)
    assert "outside the project" in str(info.value)


def test_absolute_path_outside_is_refused(layout: Path):
    outside = layout.parent / "OUTSIDE" / "secret.txt"
    with pytest.raises(BoundaryError):
        resolve_in_project(layout, str(outside))
    with pytest.raises(BoundaryError):
        resolve_in_project(layout, "/etc/passwd")


def test_sibling_with_common_prefix_is_outside(layout: Path):
    # R/ws-evil is not under R/ws even though the string starts the same.
    evil = layout.parent / "ws-evil"
    evil.mkdir()
    with pytest.raises(BoundaryError):
        resolve_in_project(layout, str(evil / "x.txt"))
    with pytest.raises(BoundaryError):
        resolve_in_project(layout, "../ws-evil/x.txt")


def test_symlinked_dir_pointing_outside_is_refused(layout: Path):
    (layout / "outbox").symlink_to("../OUTSIDE")
    with pytest.raises(BoundaryError):
        resolve_in_project(layout, "outbox/escaped.txt")  # does not exist yet
    with pytest.raises(BoundaryError):
        resolve_in_project(layout, "outbox/secret.txt")  # exists
    with pytest.raises(BoundaryError):
        resolve_in_project(layout, "outbox/deeper/new/file.txt")
    with pytest.raises(BoundaryError):
        resolve_in_project(layout, "outbox")
    assert not (layout.parent / "OUTSIDE" / "escaped.txt").exists()


def test_dangling_symlink_pointing_outside_is_refused(layout: Path):
    (layout / "gone").symlink_to("../NOT_THERE")
    with pytest.raises(BoundaryError):
        resolve_in_project(layout, "gone/escaped.txt")
    with pytest.raises(BoundaryError):
        resolve_in_project(layout, "gone")


def test_symlinked_file_pointing_outside_is_refused(layout: Path):
    (layout / "link.txt").symlink_to(layout.parent / "OUTSIDE" / "secret.txt")
    with pytest.raises(BoundaryError):
        resolve_in_project(layout, "link.txt")


def test_symlink_inside_the_project_resolves_to_its_target(layout: Path):
    (layout / "alias").symlink_to("src")
    assert resolve_in_project(layout, "alias/main.py") == (layout / "src" / "main.py").resolve()


def test_new_file_under_existing_dir_is_fine(layout: Path):
    real = resolve_in_project(layout, "src/new_module.py")
    assert real == layout.resolve() / "src" / "new_module.py"
    assert not real.exists()


def test_new_file_under_new_dirs_is_fine(layout: Path):
    real = resolve_in_project(layout, "a/b/c.txt")
    assert real == layout.resolve() / "a" / "b" / "c.txt"


def test_absolute_path_inside_is_fine(layout: Path):
    absolute = layout / "src" / "main.py"
    assert resolve_in_project(layout, str(absolute)) == absolute.resolve()


def test_root_itself_is_inside(layout: Path):
    assert resolve_in_project(layout, ".") == layout.resolve()
    assert relative(layout, resolve_in_project(layout, ".")) == "."


def test_root_reached_through_a_symlink(tmp_path: Path, layout: Path):
    via = tmp_path / "via"
    via.symlink_to(layout)
    real = resolve_in_project(via, "src/main.py")
    assert real == (layout / "src" / "main.py").resolve()
    assert relative(via, real) == "src/main.py"
    with pytest.raises(BoundaryError):
        resolve_in_project(via, "../R/OUTSIDE/secret.txt")


@pytest.mark.parametrize("path", ["", "   "])
def test_empty_path_is_a_tool_error(layout: Path, path: str):
    with pytest.raises(ToolError) as info:
        resolve_in_project(layout, path)
    assert not isinstance(info.value, BoundaryError)


def test_relative_uses_forward_slashes(layout: Path):
    assert relative(layout, layout.resolve() / "src" / "pkg" / "util.py") == "src/pkg/util.py"


def test_folder_glob():
    assert folder_glob("src/pkg/util.py") == "src/pkg/*"
    assert folder_glob("README.md") == "*"


# --- closest_paths --------------------------------------------------------------------------


def test_closest_paths_suggests_a_near_name_in_the_same_folder(layout: Path):
    assert "src/main.py" in closest_paths(layout, "src/mian.py")


def test_closest_paths_at_root(layout: Path):
    assert "README.md" in closest_paths(layout, "READM.md")


def test_closest_paths_falls_back_to_deepest_existing_folder(layout: Path):
    # src/nothere/ does not exist; suggestions come from src/.
    suggestions = closest_paths(layout, "src/nothere/main.py")
    assert "src/main.py" in suggestions


def test_closest_paths_respects_limit(layout: Path):
    for i in range(6):
        (layout / f"note{i}.txt").write_text("")
    assert len(closest_paths(layout, "note.txt", limit=2)) == 2


def test_closest_paths_returns_nothing_for_unrelated_names(layout: Path):
    assert closest_paths(layout, "zzzzqqqq.bin") == []


def test_closest_paths_never_suggests_outside(layout: Path):
    (layout / "outbox").symlink_to("../OUTSIDE")
    for suggestion in closest_paths(layout, "outbox/secrt.txt") + closest_paths(layout, "../OUTSIDE/secrt.txt"):
        assert not suggestion.startswith("..")
        assert "secret" not in suggestion


# --- paths the OS cannot use are the model's mistake, not a crash ---------------------------


def test_nul_in_path_is_a_tool_error(layout: Path):
    with pytest.raises(ToolError) as info:
        resolve_in_project(layout, "src/a\x00b.py")
    assert "NUL" in str(info.value)


def test_name_too_long_is_a_tool_error(layout: Path):
    with pytest.raises(ToolError) as info:
        resolve_in_project(layout, "x" * 5000)
    assert not isinstance(info.value, BoundaryError)


def test_symlink_loop_is_a_tool_error(layout: Path):
    (layout / "loop").symlink_to("loop")
    with pytest.raises(ToolError):
        resolve_in_project(layout, "loop/x.txt")
    with pytest.raises(ToolError):
        resolve_in_project(layout, "loop")


def test_dotdot_after_a_symlink_is_taken_where_the_link_points(layout: Path):
    # The kernel resolves "link/.." in the folder the link points to, not by cutting the text.
    (layout.parent / "OUTSIDE" / "sub").mkdir()
    (layout / "link").symlink_to(layout.parent / "OUTSIDE" / "sub")
    with pytest.raises(BoundaryError):
        resolve_in_project(layout, "link/../secret.txt")


# --- several roots (an ACP session's additionalDirectories) ----------------------------------


@pytest.fixture
def extra(tmp_path: Path) -> Path:
    """``tmp/shared``: a folder given as an extra root, beside the project ``tmp/R/ws``."""
    folder = tmp_path / "shared"
    (folder / "lib").mkdir(parents=True)
    (folder / "lib" / "a.py").write_text("A = 1\n")
    return folder


def test_an_extra_root_is_reached_by_absolute_path_and_by_dotdot(layout: Path, extra: Path):
    wanted = (extra / "lib" / "a.py").resolve()
    assert resolve_in_project(layout, str(extra / "lib" / "a.py"), [extra]) == wanted
    assert resolve_in_project(layout, "../../shared/lib/a.py", [extra]) == wanted
    assert resolve_in_project(layout, str(extra / "lib" / "new.py"), [extra]) == (extra / "lib" / "new.py").resolve()
    assert resolve_in_project(layout, "src/main.py", [extra]) == (layout / "src" / "main.py").resolve()


def test_outside_every_root_is_refused_and_the_error_names_them_all(layout: Path, extra: Path):
    with pytest.raises(BoundaryError) as refused:
        resolve_in_project(layout, "../OUTSIDE/secret.txt", [extra])
    assert str(layout.resolve()) in str(refused.value) and str(extra.resolve()) in str(refused.value)
    with pytest.raises(BoundaryError):
        resolve_in_project(layout, str(extra / ".." / "R" / "OUTSIDE" / "secret.txt"), [extra])
    with pytest.raises(BoundaryError):  # without it, the extra root is outside as before
        resolve_in_project(layout, str(extra / "lib" / "a.py"))


def test_a_symlink_in_an_extra_root_that_leaves_every_root_is_refused(layout: Path, extra: Path):
    (extra / "out").symlink_to(layout.parent / "OUTSIDE")
    (extra / "secret.txt").symlink_to(layout.parent / "OUTSIDE" / "secret.txt")
    for path in ("out/secret.txt", "out/new.txt", "secret.txt", "out/../lib/a.py"):
        with pytest.raises(BoundaryError):
            resolve_in_project(layout, str(extra / path), [extra])


def test_a_symlink_between_roots_stays_in_the_project(layout: Path, extra: Path):
    (layout / "shared").symlink_to(extra)
    (extra / "back").symlink_to(layout / "src")
    assert resolve_in_project(layout, "shared/lib/a.py", [extra]) == (extra / "lib" / "a.py").resolve()
    assert resolve_in_project(layout, str(extra / "back" / "main.py"), [extra]) == (layout / "src" / "main.py").resolve()
    with pytest.raises(BoundaryError):
        resolve_in_project(layout, "shared/lib/a.py")


def test_an_extra_root_given_through_a_symlink_confines_to_its_real_path(layout: Path, extra: Path, tmp_path: Path):
    alias = tmp_path / "alias"
    alias.symlink_to(extra)
    assert resolve_in_project(layout, str(extra / "lib" / "a.py"), [alias]) == (extra / "lib" / "a.py").resolve()
    with pytest.raises(BoundaryError):
        resolve_in_project(layout, str(alias / ".." / "R" / "OUTSIDE" / "secret.txt"), [alias])


def test_a_file_in_an_extra_root_is_named_by_its_absolute_path(layout: Path, extra: Path):
    inside = resolve_in_project(layout, "src/main.py", [extra])
    there = resolve_in_project(layout, str(extra / "lib" / "a.py"), [extra])
    assert project_path(layout, inside) == "src/main.py"
    assert project_path(layout, there) == (extra / "lib" / "a.py").resolve().as_posix()
    assert layout / project_path(layout, there) == there  # the key leads back to the file
    assert root_of(layout, there, [extra]) == extra.resolve()
    assert root_of(layout, inside, [extra]) == layout.resolve()
    assert folder_glob(project_path(layout, there)) == f"{(extra / 'lib').resolve().as_posix()}/*"
