"""What a new user meets first through the real ``totem`` (issue 22): a typo in the config,
an unknown option of a subcommand, the sessions of the project they are in."""

from __future__ import annotations

import subprocess

from tests.support.model_server import text_reply


def test_a_swapped_pair_of_letters_in_a_config_key_suggests_that_key(totem):
    config = totem.home / "typo.toml"
    config.write_text('modle = "sim/test-model"\n')
    result = totem.run("run", "--cwd", str(totem.project), "--config", str(config), "hi")
    assert result.code == 2
    assert f'{config}: unknown key "modle"; did you mean "model"?' in result.stderr
    assert totem.server.requests == []


def test_an_unknown_option_of_a_subcommand_prints_that_subcommands_usage(totem):
    result = totem.run("run", "--bogus", "hi")
    assert result.code == 2
    assert result.stderr.startswith("usage: totem run [-h] [--cwd CWD]")
    assert "totem run: error: unrecognized arguments: --bogus" in result.stderr
    assert "{run,lsp," not in result.stderr  # not the top-level usage

    nested = totem.run("sessions", "list", "--bogus")
    assert nested.code == 2
    assert nested.stderr.startswith("usage: totem sessions list [-h]")
    assert "totem sessions list: error: unrecognized arguments: --bogus" in nested.stderr


def test_sessions_list_shows_the_projects_sessions_and_all_of_them_with_all(totem):
    other = totem.project.parent / "other"
    other.mkdir()
    totem.server.enqueue(text_reply("here"))
    here = totem.agent("a question here").events[0]["sessionId"]
    totem.server.enqueue(text_reply("there"))
    there = totem.run("run", "--cwd", str(other), "--config", str(totem.config), "--json", "a question there")
    there_id = there.events[0]["sessionId"]

    # Inside the project (its folder as the current directory), as a user types it.
    inside = subprocess.run(
        totem.command("sessions", "list"), capture_output=True, text=True, env=totem.env, cwd=totem.project, check=False
    )
    assert inside.returncode == 0, inside.stderr
    assert here in inside.stdout and there_id not in inside.stdout
    assert "a question here" in inside.stdout

    every = totem.run("sessions", "list", "--all")
    assert every.code == 0
    lines = {line.split("\t")[0]: line.split("\t") for line in every.stdout.splitlines()}
    assert lines[here][3:] == [str(totem.project), "a question here"]
    assert lines[there_id][3:] == [str(other), "a question there"]

    empty = totem.project.parent / "empty"
    empty.mkdir()
    none = totem.run("sessions", "list", "--cwd", str(empty))
    assert none.code == 0 and none.stdout == ""
    assert "no session in" in none.stderr and "--all" in none.stderr
