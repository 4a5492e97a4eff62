"""What a new user meets first through the real ``totem`` (issue 22): a typo in the config,
an unknown option of a subcommand, the sessions of the project they are in."""

from __future__ import annotations


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
