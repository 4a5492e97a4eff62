"""JSON from a hostile server through ``totem run``: a model probe nested 5,000 deep is refused by
the engine's bounded decoder (totem_engine/json_in.py), never a ``RecursionError`` that fails the
turn (issue 34, hole 9)."""

from __future__ import annotations

from tests.support.ollama_server import OllamaServer, text_reply


def test_a_show_answer_nested_5000_deep_does_not_fail_the_turn(totem):
    with OllamaServer() as ollama:
        ollama.show_body = "[" * 5000 + "]" * 5000
        ollama.enqueue(text_reply("Still here."))
        config = totem.home / "ollama.toml"
        config.write_text(
            'model = "deep/test-model"\nretry_max_wait = 1.0\nforge = false\n'
            f'[providers.deep]\nkind = "ollama"\nbase_url = "{ollama.base_url}"\n'
        )
        result = totem.run("run", "--cwd", str(totem.project), "--config", str(config), "--json", "hello")
        assert ollama.show_requests, "the model probe was not made"
    assert "RecursionError" not in result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert result.code == 0, result.stderr
    end = result.of("turnEnd")[-1]
    assert end["stopReason"] == "finished"
    assert end["text"] == "Still here."
