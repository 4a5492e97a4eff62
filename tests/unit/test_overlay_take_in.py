"""A sandboxed command's overlay taken into the project (sandbox/overlay.py), with real
bubblewrap: a folder deleted and made again (opaque), a file turned into a folder, a symbolic
link, a file over the size cap; the protected folders (``.git``, ``.totem``) read-only, a nested
one not taken in."""

from __future__ import annotations

from pathlib import Path

import anyio

from totem_engine.command_changes import CommandChanges, SandboxSettings
from totem_engine.tools.bash import run_command


def sandboxed(root: Path, command: str, *, cap: int = 10_000):
    async def main():
        changes = CommandChanges(root, max_file_bytes=cap, sandbox=SandboxSettings(mode="always"))
        scope = await changes.scope("s1", command=command, may_change=True)
        outcome = await run_command(command, root, 30, 10_000, scope.argv)
        taken = await scope.close()
        await changes.aclose()
        return outcome, taken

    return anyio.run(main)


def test_a_folder_made_again_keeps_only_what_the_command_put_in_it(tmp_path):
    (tmp_path / "dd").mkdir()
    (tmp_path / "dd" / "old.txt").write_text("old\n")
    (tmp_path / "f").write_text("a file\n")
    outcome, taken = sandboxed(tmp_path, "rm -rf dd && mkdir dd && echo new > dd/new.txt && rm f && mkdir f && echo in > f/in.txt")
    assert outcome.exit_code == 0, outcome.output
    assert sorted(p.name for p in (tmp_path / "dd").iterdir()) == ["new.txt"]
    assert (tmp_path / "f" / "in.txt").read_text() == "in\n"
    assert [(c.path, c.before, c.after) for c in taken] == [
        ("dd/new.txt", None, b"new\n"), ("dd/old.txt", b"old\n", None), ("f", b"a file\n", None), ("f/in.txt", None, b"in\n"),
    ]


def test_links_and_big_files_land_but_only_what_undo_can_keep_is_kept(tmp_path):
    outcome, taken = sandboxed(tmp_path, "ln -s target link && head -c 500 /dev/zero > big && echo s > small", cap=100)
    assert outcome.exit_code == 0, outcome.output
    assert (tmp_path / "link").is_symlink() and (tmp_path / "big").stat().st_size == 500
    by_path = {c.path: c for c in taken}
    assert sorted(by_path) == ["big", "link", "small"]
    assert "over the 100-byte limit" in by_path["big"].unrestorable and "symbolic link" in by_path["link"].unrestorable
    assert by_path["small"].after == b"s\n" and by_path["small"].unrestorable is None


def test_the_protected_folders_are_read_only_and_a_nested_one_is_not_taken_in(tmp_path):
    (tmp_path / ".git" / "hooks").mkdir(parents=True)
    (tmp_path / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (tmp_path / "sub").mkdir()
    attempts = [
        "echo ref > .git/HEAD", "echo x > .git/hooks/pre-commit", "mv .git moved", "rm -rf .git",
        "mkdir -p .totem && echo x > .totem/config.toml", "mkdir -p sub/.git/hooks && echo x > sub/.git/hooks/pre-commit",
        "mkdir -p sub/.TOTEM && echo x > sub/.TOTEM/config.toml", "echo kept > kept.txt",
    ]
    outcome, taken = sandboxed(tmp_path, " ; ".join(attempts))
    assert outcome.output.count("Read-only file system") + outcome.output.count("Device or resource busy") >= 4, outcome.output
    assert (tmp_path / ".git" / "HEAD").read_text() == "ref: refs/heads/main\n"
    assert sorted(p.name for p in (tmp_path / ".git").iterdir()) == ["HEAD", "hooks"] and not any((tmp_path / ".git" / "hooks").iterdir())
    assert not (tmp_path / "moved").exists() and not (tmp_path / ".totem").exists()
    assert sorted(p.name for p in (tmp_path / "sub").iterdir()) == []
    assert (tmp_path / "kept.txt").read_text() == "kept\n"
    by_path = {c.path: c for c in taken}
    assert by_path["kept.txt"].after == b"kept\n"
    assert "protected folder" in by_path["sub/.git"].unrestorable and "protected folder" in by_path["sub/.TOTEM"].unrestorable


def test_tools_under_tmp_stay_visible_under_the_private_tmp(tmp_path, monkeypatch):
    # A CI checkout under /tmp has its venv there: the private /tmp must not hide what PATH runs.
    import tempfile

    with tempfile.TemporaryDirectory(dir="/tmp") as folder:
        tools = Path(folder) / "venv" / "bin"
        tools.mkdir(parents=True)
        (tools / "hello-tool").write_text("#!/bin/sh\necho tool ran\n")
        (tools / "hello-tool").chmod(0o755)
        (Path(folder) / "secret.txt").write_text("x\n")
        # npm puts a node_modules/.bin of every folder above a package on PATH, existing or not.
        missing = Path(folder).with_name(Path(folder).name + "-none") / "node_modules" / ".bin"
        monkeypatch.setenv("PATH", f"{tools}:{missing}:/usr/bin:/bin")
        project = tmp_path / "project"
        project.mkdir()
        outcome, _ = sandboxed(project, f"hello-tool && echo made > /tmp/mine && cat /tmp/mine && ls {folder}")
    assert outcome.exit_code == 0, outcome.output
    assert "tool ran" in outcome.output and "made" in outcome.output
