"""Undo that covers what commands change (issue 19), without the sandbox, through the real
``totem run`` and ``totem undo``: in a git repository the working tree is captured around the
command; outside one, and for a file over the size cap, undo says what it cannot put back."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

from tests.support.model_server import text_reply, tool_reply

SED = "sed -i s/a/b/ f.txt && touch new.txt"


def git(project: Path, *args: str) -> str:
    env = {"GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1", "PATH": "/usr/bin:/bin"}
    return subprocess.run(["git", *args], cwd=project, env=env, check=True, capture_output=True, text=True).stdout


def repository(project: Path) -> None:
    git(project, "init", "-q")
    (project / "f.txt").write_text("a line\n")
    (project / "kept.txt").write_text("committed\n")
    git(project, "add", "kept.txt")
    git(project, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "first")


def unsandboxed(totem, tables: str = "") -> None:
    """The test config with the sandbox off (these tests are about the capture without it), and
    ``tables`` after it."""
    totem.config.write_text('sandbox = "never"\n' + totem.config.read_text() + tables)


def run_bash(totem, command: str):
    totem.server.enqueue(tool_reply([("bash", {"command": command})]))
    totem.server.enqueue(text_reply("Done."))
    result = totem.agent("change it", extra=("--yes",))
    assert result.code == 0, result.stderr
    [end] = [e for e in result.of("toolEnd") if e["tool"] == "bash"]
    return end


def undo(totem):
    return totem.run("undo", "--cwd", str(totem.project), "--config", str(totem.config))


def objects(project: Path) -> list[str]:
    return sorted(str(p.relative_to(project)) for p in (project / ".git" / "objects").rglob("*") if p.is_file())


def test_undo_puts_back_what_a_command_changed_and_removes_what_it_created(totem):
    unsandboxed(totem)
    repository(totem.project)
    index = hashlib.sha256((totem.project / ".git" / "index").read_bytes()).hexdigest()
    status, stored = git(totem.project, "status", "--porcelain"), objects(totem.project)

    end = run_bash(totem, SED)
    assert (totem.project / "f.txt").read_text() == "b line\n" and (totem.project / "new.txt").exists()
    assert sorted(end["changed"]) == ["f.txt", "new.txt"]
    assert "[Changed by the command: f.txt, new.txt (new)]" in end["output"]

    undone = undo(totem)
    assert undone.code == 0, undone.stderr
    assert "restored\tf.txt" in undone.stdout and "deleted\tnew.txt" in undone.stdout
    assert (totem.project / "f.txt").read_text() == "a line\n" and not (totem.project / "new.txt").exists()

    # The user's repository is as it was: its index, its status, its objects.
    assert hashlib.sha256((totem.project / ".git" / "index").read_bytes()).hexdigest() == index
    assert git(totem.project, "status", "--porcelain") == status
    assert objects(totem.project) == stored

    redone = totem.run("redo", "--cwd", str(totem.project), "--config", str(totem.config))
    assert redone.code == 0, redone.stderr
    assert (totem.project / "f.txt").read_text() == "b line\n" and (totem.project / "new.txt").read_text() == ""


def test_a_deleted_file_comes_back_with_its_bytes_whatever_the_attributes_say(totem):
    unsandboxed(totem)
    repository(totem.project)
    (totem.project / ".gitattributes").write_text("* text eol=lf\n")
    (totem.project / "crlf.txt").write_bytes(b"one\r\ntwo\r\n")
    run_bash(totem, "rm crlf.txt kept.txt")
    assert not (totem.project / "kept.txt").exists()

    undone = undo(totem)
    assert undone.code == 0, undone.stderr
    assert (totem.project / "crlf.txt").read_bytes() == b"one\r\ntwo\r\n"
    assert (totem.project / "kept.txt").read_text() == "committed\n"


def test_a_file_the_user_changed_after_the_command_is_left_alone(totem):
    unsandboxed(totem)
    repository(totem.project)
    run_bash(totem, SED)
    (totem.project / "f.txt").write_text("the user's own\n")

    undone = undo(totem)
    assert undone.code == 1
    assert "conflict\tf.txt" in undone.stdout and "deleted\tnew.txt" in undone.stdout
    assert (totem.project / "f.txt").read_text() == "the user's own\n"


def test_a_file_over_the_size_cap_is_not_restorable_and_undo_says_so(totem):
    unsandboxed(totem, "[snapshots]\nmax_file_bytes = 1000\n")
    repository(totem.project)
    end = run_bash(totem, "head -c 5000 /dev/zero > big.bin && sed -i s/a/b/ f.txt")
    assert end["changed"] == ["f.txt"]
    assert "[Not restorable by undo: big.bin (5000 bytes, over the 1000-byte limit of undo" in end["output"]

    undone = undo(totem)
    assert undone.code == 1
    assert "restored\tf.txt" in undone.stdout
    assert "unrestorable\tbig.bin\t5000 bytes, over the 1000-byte limit" in undone.stdout
    assert (totem.project / "f.txt").read_text() == "a line\n" and (totem.project / "big.bin").stat().st_size == 5000


def test_outside_git_what_a_command_changed_is_not_restorable(totem):
    unsandboxed(totem)
    (totem.project / "f.txt").write_text("a line\n")
    end = run_bash(totem, SED)
    assert end["changed"] == []
    assert "Not restorable by undo: (the project is not a git repository" in end["output"]

    undone = undo(totem)
    assert undone.code == 1
    assert "unrestorable\t\tthe project is not a git repository, so what `sed -i" in undone.stdout
    assert (totem.project / "f.txt").read_text() == "b line\n"


def test_a_command_that_only_reads_records_nothing(totem):
    unsandboxed(totem)
    (totem.project / "f.txt").write_text("a line\n")
    end = run_bash(totem, "cat f.txt")
    assert "Not restorable" not in end["output"]
    assert undo(totem).stdout.strip() == "nothing to undo"


def test_what_a_job_changed_is_taken_in_when_it_is_read_and_undone_with_the_turn(totem):
    unsandboxed(totem)
    repository(totem.project)
    totem.server.enqueue(tool_reply([("job", {"action": "start", "command": "sed -i s/a/b/ f.txt && echo made > made.txt"})]))
    totem.server.enqueue(tool_reply([("job", {"action": "wait", "id": "job1"})]))
    totem.server.enqueue(text_reply("Done."))
    result = totem.agent("run it", extra=("--yes",))
    assert result.code == 0, result.stderr
    start, wait = [e for e in result.of("toolEnd") if e["tool"] == "job"]
    assert start["changed"] == [] and sorted(wait["changed"]) == ["f.txt", "made.txt"]
    assert "[Changed by the command: f.txt, made.txt (new)]" in wait["output"]

    undone = undo(totem)
    assert undone.code == 0, undone.stderr
    assert (totem.project / "f.txt").read_text() == "a line\n" and not (totem.project / "made.txt").exists()
