"""AGENTS.md and its pointers through the real ``totem run``: the pointed file is in the system
prompt the model gets; one the user's rules deny to ``read`` is not, and the prompt says why."""

from __future__ import annotations

from tests.support.model_server import text_reply


def test_the_model_gets_the_files_agents_md_points_to_but_not_one_the_rules_deny(totem):
    (totem.project / "docs").mkdir()
    (totem.project / "docs" / "CONVENTIONS.md").write_text("Name tables in the singular.\n")
    (totem.project / "docs" / "private.md").write_text("PRIVATE PLANS\n")
    (totem.project / "AGENTS.md").write_text("See docs/CONVENTIONS.md and [plans](docs/private.md).\n")
    config = totem.home / "rules.toml"
    config.write_text(totem.config.read_text() + '[permission]\nread = { "docs/private.md" = "deny" }\n')
    totem.server.enqueue(text_reply("Noted."))
    result = totem.run("run", "--cwd", str(totem.project), "--config", str(config), "--json", "Hello")

    assert result.code == 0, result.stderr
    system = totem.server.requests[0]["messages"][0]["content"]
    assert '<instructions from="docs/CONVENTIONS.md">\nName tables in the singular.\n</instructions>' in system
    assert "PRIVATE PLANS" not in system
    assert "Loaded above: docs/CONVENTIONS.md" in system
    assert "docs/private.md (the permission rules do not let it be read without asking)" in system
