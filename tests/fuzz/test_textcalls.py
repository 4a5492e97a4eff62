"""The text tool-call scanner and the <think> filter under arbitrary text cut anywhere: they
raise nothing (a call that does not parse is counted as malformed, not raised), never hang, and
what they give out is chunks of the neutral types."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from tests.fuzz.support import CHEAP, aiter, check_answer, collect, examples
from totem_engine.textcalls import TextCallStats, text_tool_calls, think_filter
from totem_engine.vocab.chat import FinishChunk, ReasoningChunk, TextChunk, ToolCallChunk
from totem_engine.vocab.tools import ToolCall

TOOLS = ("read", "write", "edit", "bash")

# Pieces of every markup the scanner knows, so arbitrary text is mostly near-calls.
MARKUP = (
    "<tool_call>", "</tool_call>", "<function=read>", "<function=", "</function>",
    "<parameter=path>", "<parameter=", "</parameter>", "```json\n", "```python\n", "```\n", "```",
    '{"name": "read", "arguments": {"path": "a.py"}}', '{"name": "write", "arguments": ',
    '{"name": ', '"arguments": {', "}", "{", "\n", "a.py", "<think>", "</think>", "\\u00",
    "--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n", "\udcff", '"', "[" * 300,
)

texts = st.lists(st.one_of(st.sampled_from(MARKUP), st.text(max_size=12)), max_size=25).map("".join)


def pieces(text: str, cuts: list[int]) -> list[str]:
    at = sorted({c % (len(text) + 1) for c in cuts})
    bounds = [0, *at, len(text)]
    return [text[a:b] for a, b in zip(bounds, bounds[1:]) if b > a]


def answer(text: str, cuts: list[int], native: bool) -> list:
    chunks: list = [TextChunk(p) for p in pieces(text, cuts)]
    if native:
        chunks.append(ToolCallChunk(ToolCall("n1", "read", '{"path": "b.py"}')))
    return [*chunks, FinishChunk("stop", "m")]


@settings(max_examples=examples(CHEAP))
@given(texts, st.lists(st.integers(min_value=0), max_size=8), st.booleans(), st.booleans())
@example("```python\n\udcff", [], False, True)  # found by make fuzz: a TypeError from the JSON decoder
def test_text_tool_calls_take_any_text(text, cuts, native, file_blocks):
    stats = TextCallStats()
    stream = text_tool_calls(
        aiter(answer(text, cuts, native)), TOOLS, stats=stats, file_blocks=file_blocks, default_path="main.py" if file_blocks else None
    )
    check_answer(collect(stream))
    assert stats.emitted <= stats.parsed


@settings(max_examples=examples(CHEAP))
@given(st.text(alphabet=st.characters(blacklist_characters="<`{[\\\"")), st.lists(st.integers(min_value=0), max_size=8))
def test_text_without_markup_comes_out_as_it_went_in(text, cuts):
    chunks = collect(text_tool_calls(aiter(answer(text, cuts, False)), TOOLS))
    assert "".join(c.text for c in chunks if isinstance(c, TextChunk)) == text
    assert not [c for c in chunks if isinstance(c, ToolCallChunk)]


@settings(max_examples=examples(CHEAP))
@given(texts, st.lists(st.integers(min_value=0), max_size=8))
def test_think_filter_takes_any_text(text, cuts):
    chunks = collect(think_filter(aiter(answer(text, cuts, False))))
    check_answer(chunks)
    shown = "".join(c.text for c in chunks if isinstance(c, (TextChunk, ReasoningChunk)))
    assert len(shown) <= len(text)
