"""The sandbox of a session with extra roots, through the engine's command scopes
(command_changes.py) and the real bubblewrap: a ``bash`` command's overlay of each root taken in
under the keys undo knows (root-relative, absolute in an extra root), an extra root inside
another root mounted with it, a job's scope with every root bound writable, and a project alone
mounted as before."""

from __future__ import annotations

import subprocess
from pathlib import Path

import anyio

from totem_engine.command_changes import CommandChanges, SandboxSettings


def changes(root: Path, *extra: Path) -> CommandChanges:
    return CommandChanges(root, max_file_bytes=100_000, sandbox=SandboxSettings(mode="always"), watch=False, extra_roots=extra)


async def run(scope, command: str) -> str:
    result = await anyio.run_process(scope.argv(["/bin/sh", "-c", command]), check=False, stdin=subprocess.DEVNULL,
                                     stderr=subprocess.STDOUT)
    return result.stdout.decode()


def layout(tmp_path: Path) -> tuple[Path, Path, Path]:
    project, shared, beside = tmp_path / "project", tmp_path / "shared", tmp_path / "beside"
    for folder in (project / "inner", shared / "sub", beside):
        folder.mkdir(parents=True)
    (shared / "sub" / "old.txt").write_text("old\n")
    return project, shared.resolve(), beside


def test_extra_roots_inside_another_root_are_mounted_with_it(tmp_path):
    project, shared, _ = layout(tmp_path)
    chosen = changes(project, project / "inner", shared, shared / "sub", shared)
    assert chosen.extra_roots == (shared,)
    assert changes(project).extra_roots == ()


def test_a_commands_writes_in_every_root_are_taken_in_under_undos_keys(tmp_path):
    project, shared, beside = layout(tmp_path)

    async def main():
        chosen = changes(project, shared)
        try:
            scope = await chosen.scope("s1", command="write", may_change=True)
            output = await run(scope, f"echo p > a.txt; echo s > {shared}/sub/new.txt; rm {shared}/sub/old.txt;"
                                      f" echo no > {beside}/x.txt")
            assert "Read-only file system" in output
            assert not (shared / "sub" / "new.txt").exists()  # in the overlay until the take-in
            taken = await scope.close()
        finally:
            await chosen.aclose()
        assert [(c.path, c.before, c.after) for c in taken] == [
            ("a.txt", None, b"p\n"),
            (f"{shared}/sub/new.txt", None, b"s\n"),
            (f"{shared}/sub/old.txt", b"old\n", None),
        ]
        assert (shared / "sub" / "new.txt").read_text() == "s\n" and not (shared / "sub" / "old.txt").exists()
        assert not (beside / "x.txt").exists()

    anyio.run(main)


def test_a_jobs_scope_binds_every_root_writable_and_an_unasked_command_sees_their_secrets_empty(tmp_path):
    project, shared, beside = layout(tmp_path)
    (shared / "sub" / ".env").write_text("TOKEN=x\n")

    async def main():
        chosen = changes(project, shared)
        try:
            scope = await chosen.scope("s1", command="job", may_change=True, long_lived=True, unasked=True)
            output = await run(scope, f"echo live > {shared}/live.txt; cat {shared}/sub/.env; echo no > {beside}/x.txt;"
                                      f" echo no > {shared}/.totem/x")
            await scope.close()
        finally:
            await chosen.aclose()
        assert (shared / "live.txt").read_text() == "live\n"  # bound: written as it runs
        assert "TOKEN" not in output
        assert not (beside / "x.txt").exists() and not (shared / ".totem" / "x").exists()

    anyio.run(main)
