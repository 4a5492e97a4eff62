"""The step limit by the model's tier (seed 003 "Round budget by tier") through the real
``totem run``: a small model stops at the small budget, a larger one does not, and a max_steps
the user set wins over either. Each step the model reads another file, so every round brings
new information (the novelty guard stays quiet) and changes nothing (no extension)."""

from __future__ import annotations

import json

from tests.support.model_server import text_reply, tool_reply
from totem_engine.turn.terms import SMALL_MODEL_STEPS, TIER_STEPS

FILES = 40


def fence(name: str, arguments: dict) -> str:
    return "```json\n" + json.dumps({"name": name, "arguments": arguments}) + "\n```\n"


def config(totem, model: str, extra: str = "") -> str:
    path = totem.home / "budget.toml"
    path.write_text(
        f'{extra}model = "sim/{model}"\nforge = false\n'
        f'[providers.sim]\nkind = "openai"\nbase_url = "{totem.server.base_url}"\n'
    )
    return str(path)


def reading(totem, *, small: bool) -> None:
    """A project of FILES files, and a model that reads one after another, then answers."""
    for n in range(FILES):
        (totem.project / f"part{n:02}.txt").write_text(f"part {n}: {n * 7919}\n")
    for n in range(FILES):
        path = f"part{n:02}.txt"
        if small:  # a small model writes its calls as text (decisions.md "Small models")
            totem.server.enqueue(text_reply(fence("read", {"path": path})))
        else:
            totem.server.enqueue(tool_reply([("read", {"path": path})]))
    totem.server.enqueue(text_reply("Read them all."))


def run(totem, model: str, extra: str = ""):
    return totem.run("run", "--cwd", str(totem.project), "--config", config(totem, model, extra), "--json", "--yes", "Read the parts")


def test_a_small_model_stops_at_the_small_budget(totem):
    reading(totem, small=True)
    result = run(totem, "qwen2.5-coder-1.5b")

    assert result.code == 3, result.stderr
    assert len(totem.server.requests) == SMALL_MODEL_STEPS < TIER_STEPS["medium"]
    (end,) = result.of("turnEnd")
    assert end["stopReason"] == "step_limit"
    notice = " ".join(n["message"] for n in result.of("notice"))
    assert f"step limit ({SMALL_MODEL_STEPS} steps, the budget of a small or weak model" in notice


def test_a_max_steps_the_user_set_wins_over_the_small_budget(totem):
    reading(totem, small=True)
    result = run(totem, "qwen2.5-coder-1.5b", extra="max_steps = 24\n")

    assert result.code == 3, result.stderr
    assert len(totem.server.requests) == 24
    notice = " ".join(n["message"] for n in result.of("notice"))
    assert "step limit (24 steps)" in notice and "budget" not in notice


def test_a_medium_model_goes_past_the_small_budget(totem):
    reading(totem, small=False)
    result = run(totem, "test-model")

    assert result.code == 0, result.stderr
    assert len(totem.server.requests) == FILES + 1
    assert result.of("turnEnd")[0]["stopReason"] == "finished"


def test_a_small_model_still_making_changes_goes_on_past_its_budget(totem):
    """The extension rule on top of the tier's number: a run changing files at the limit goes on."""
    for n in range(SMALL_MODEL_STEPS + 3):
        totem.server.enqueue(text_reply(fence("bash", {"command": f"echo {n} > out{n}.txt"})))
    totem.server.enqueue(text_reply("Wrote them."))
    result = run(totem, "qwen2.5-coder-1.5b")

    assert result.code == 0, result.stderr
    assert len(totem.server.requests) == SMALL_MODEL_STEPS + 4
    notice = " ".join(n["message"] for n in result.of("notice"))
    assert f"Reached the step limit ({SMALL_MODEL_STEPS} steps) while still making changes" in notice
