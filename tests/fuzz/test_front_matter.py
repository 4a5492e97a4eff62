"""Agent and command files (agents.py, commands.py) under any text: a definition, or the
ValueError that names what is wrong (the file is then skipped with a notice), never another
exception."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.fuzz.support import CHEAP, examples, no_hang
from totem_engine.agents import parse_agent, render_agent
from totem_engine.commands import parse_command

KEYS = ["name", "description", "tools", "allow", "deny", "max_steps", "model", "agent", "argument-hint", "x"]
VALUES = ["", "reviewer", "Reviews code", "read, grep", '"read", "bash *"', "[read, grep]", "12", "-1", "x1",
          "p/m", "nomodel", "'quoted'", '"', "  ", "bash(git *)"]
lines = st.one_of(
    st.builds(lambda k, v, pad: f"{pad}{k}:{v}", st.sampled_from(KEYS), st.one_of(st.sampled_from(VALUES), st.text(max_size=15)),
              st.sampled_from(["", " ", "  "])),
    st.sampled_from(["---", "--- ", "", "  - read", "- grep", "#", "\r"]),
    st.text(max_size=20),
)
files = st.one_of(
    st.text(max_size=200),
    st.lists(lines, max_size=12).map("\n".join),
    st.tuples(st.lists(lines, max_size=8), st.text(max_size=40)).map(lambda p: "---\n" + "\n".join(p[0]) + "\n---\n" + p[1]),
)


@settings(max_examples=examples(CHEAP))
@given(files)
def test_any_agent_file_is_a_definition_or_says_what_is_wrong(text):
    with no_hang():
        try:
            definition = parse_agent(text, source="project", path="a.md", fallback_name="fallback")
        except ValueError as problem:
            assert str(problem)
            return
        # What Totem writes back (totem agents) reads back as the same agent.
        again = parse_agent(render_agent(definition), source="project", path="a.md", fallback_name="fallback")
    assert (again.name, again.description, again.max_steps, again.model) == (
        definition.name, definition.description, definition.max_steps, definition.model,
    )


@settings(max_examples=examples(CHEAP))
@given(files)
def test_any_command_file_is_a_command_or_says_what_is_wrong(text):
    with no_hang():
        try:
            parse_command(text, source="project", path="c.md", fallback_name="fallback")
        except ValueError as problem:
            assert str(problem)
