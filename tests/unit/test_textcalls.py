"""think_filter and text_tool_calls: thoughts and tool calls written into the text."""

from __future__ import annotations

import json

import pytest

from totem_engine.textcalls import (
    MAX_HOLD,
    TextCallStats,
    as_written,
    looks_like_a_call,
    split_think,
    text_tool_calls,
    think_filter,
)
from totem_engine.vocab.chat import FinishChunk, ReasoningChunk, TextChunk, ToolCallChunk, UsageChunk
from totem_engine.vocab.messages import Message
from totem_engine.vocab.tools import ToolCall

TOOLS = {"read", "write", "edit", "bash", "todo"}


class Source:
    """A fake provider stream that records how far it has been read when each output arrives."""

    def __init__(self, chunks):
        self.chunks = list(chunks)
        self.progress = -1

    async def stream(self):
        for index, chunk in enumerate(self.chunks):
            self.progress = index
            yield chunk


async def run(wrap, chunks):
    """(outputs, progress at each output)."""
    source = Source(chunks)
    outputs, progress = [], []
    async for chunk in wrap(source.stream()):
        outputs.append(chunk)
        progress.append(source.progress)
    return outputs, progress


def text_of(chunks, kind=TextChunk):
    return "".join(c.text for c in chunks if isinstance(c, kind))


def calls_of(chunks):
    return [c.call for c in chunks if isinstance(c, ToolCallChunk)]


def splits(text, *, three=False):
    """Every way to cut ``text`` in two (and in three when asked) pieces."""
    for i in range(len(text) + 1):
        yield [text[:i], text[i:]]
        if three:
            for j in range(i, len(text) + 1):
                yield [text[:i], text[i:j], text[j:]]


def with_finish(pieces):
    return [TextChunk(p) for p in pieces] + [UsageChunk(3, 4), FinishChunk("stop", "m")]


def think(stream):
    return think_filter(stream)


def calls(stream, stats=None, schemas=None):
    return text_tool_calls(stream, TOOLS, stats=stats, schemas=schemas)


# ---------------------------------------------------------------------------------------------
# think_filter
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "<think>I should read a.py first.</think>\n\nHere is the answer.",
        "I should read a.py first.</think>\n\nHere is the answer.",  # the template opened it
        "\n<think>\nI should read a.py first.\n</think>Here is the answer.",
    ],
)
async def test_think_split_anywhere(text):
    for pieces in splits(text, three=True):
        out, _ = await run(think, with_finish(pieces))
        assert text_of(out, ReasoningChunk).strip() == "I should read a.py first.", pieces
        assert text_of(out) == "Here is the answer.", pieces
        assert "<think>" not in text_of(out, ReasoningChunk)
        # reasoning strictly before the answer, the answer before usage and finish
        kinds = [type(c).__name__ for c in out]
        last_reasoning = max(i for i, k in enumerate(kinds) if k == "ReasoningChunk")
        assert all(k != "TextChunk" for k in kinds[:last_reasoning]), pieces
        assert kinds[-2:] == ["UsageChunk", "FinishChunk"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<think>I should read a.py first.</think>\n\nHere is the answer.", ("I should read a.py first.", "Here is the answer.")),
        ("I should read a.py first.</think>\n\nHere is the answer.", ("I should read a.py first.", "Here is the answer.")),
        ("Preamble <think>thoughts</think> answer", ("Preamble thoughts", "answer")),
        ("<think>never closed", ("never closed", "")),
        ("<this is not a thought", ("", "<this is not a thought")),
        ("Just an answer.", ("", "Just an answer.")),
    ],
)
async def test_split_think_splits_a_whole_text_as_the_filter_splits_its_stream(text, expected):
    assert split_think(text) == expected
    out, _ = await run(think, with_finish([text]))
    assert (text_of(out, ReasoningChunk), text_of(out)) == expected


async def test_opened_thoughts_stream_as_they_come():
    chunks = with_finish(["<think>", "step one, ", "step two", "</think>", "Done."])
    out, progress = await run(think, chunks)
    first = next(i for i, c in enumerate(out) if isinstance(c, ReasoningChunk))
    assert out[first].text == "step one, "
    assert progress[first] == 1  # given out while the model still writes, not at the tag
    assert text_of(out) == "Done."


async def test_without_the_tag_the_text_waits_for_the_end_of_the_step():
    chunks = with_finish(["Just ", "an answer ", "with a < sign."])
    out, progress = await run(think, chunks)
    assert text_of(out) == "Just an answer with a < sign."
    assert not any(isinstance(c, ReasoningChunk) for c in out)
    first = next(i for i, c in enumerate(out) if isinstance(c, TextChunk))
    assert progress[first] == chunks.index(next(c for c in chunks if isinstance(c, FinishChunk)))
    assert isinstance(out[-1], FinishChunk)


async def test_without_a_finish_chunk_the_text_is_released_when_the_stream_ends():
    out, _ = await run(think, [TextChunk("plain "), TextChunk("text")])
    assert out == [TextChunk("plain text")]


async def test_a_start_that_only_looks_like_the_tag_is_held_then_released_as_text():
    out, _ = await run(think, with_finish(["<thi", "s is not a thought"]))
    assert text_of(out) == "<this is not a thought"
    assert not any(isinstance(c, ReasoningChunk) for c in out)


async def test_held_text_is_released_once_40000_characters_are_held():
    block = "a" * 1000
    chunks = [TextChunk(block) for _ in range(45)] + [TextChunk("</think>tail"), FinishChunk("stop")]
    out, progress = await run(think, chunks)
    first = next(i for i, c in enumerate(out) if isinstance(c, TextChunk))
    assert progress[first] == MAX_HOLD // 1000 - 1  # released as the 40th block arrived
    assert len(out[first].text) == MAX_HOLD
    # after the release the text passes as it is, tag included, and nothing becomes reasoning
    assert text_of(out) == block * 45 + "</think>tail"
    assert not any(isinstance(c, ReasoningChunk) for c in out)


async def test_unclosed_opened_thoughts_stay_thoughts():
    out, _ = await run(think, with_finish(["<think>still ", "thinking when cut"]))
    assert text_of(out, ReasoningChunk) == "still thinking when cut"
    assert text_of(out) == ""


async def test_native_reasoning_switches_the_filter_off():
    chunks = [ReasoningChunk("native"), TextChunk("a</think>b"), TextChunk("c"), FinishChunk("stop")]
    out, progress = await run(think, chunks)
    assert out[0] == ReasoningChunk("native")
    assert text_of(out) == "a</think>bc"
    assert progress[1] == 1  # text streams again, nothing held


async def test_empty_thoughts_give_no_reasoning_chunk():
    out, _ = await run(think, with_finish(["<think>\n\n</think>\n\nHi"]))
    assert not any(isinstance(c, ReasoningChunk) for c in out)
    assert text_of(out) == "Hi"


# ---------------------------------------------------------------------------------------------
# text_tool_calls
# ---------------------------------------------------------------------------------------------

READ = ToolCall(id="call_text_0", name="read", arguments=json.dumps({"path": "a.py"}))

HERMES = '<tool_call>\n{"name": "read", "arguments": {"path": "a.py"}}\n</tool_call>'
QWEN = "<function=read>\n<parameter=path>\na.py\n</parameter>\n</function>"
QWEN_IN_TAG = "<tool_call>\n" + QWEN + "\n</tool_call>"
FENCE = '```json\n{"name": "read", "arguments": {"path": "a.py"}}\n```'
BARE_FENCE = '```\n{"name": "read", "arguments": {"path": "a.py"}}\n```'


@pytest.mark.parametrize("markup", [HERMES, QWEN, QWEN_IN_TAG, FENCE, BARE_FENCE])
async def test_a_call_split_anywhere_with_text_around_it(markup):
    text = "Let me look.\n" + markup + "\nDone."
    for pieces in splits(text):
        stats = TextCallStats()
        out, _ = await run(lambda s: calls(s, stats), with_finish(pieces))
        assert calls_of(out) == [READ], pieces
        assert text_of(out) == "Let me look.\n\nDone.", pieces
        assert (stats.parsed, stats.emitted, stats.malformed, stats.native) == (1, 1, 0, 0)
        assert [type(c).__name__ for c in out[-3:]] == ["UsageChunk", "ToolCallChunk", "FinishChunk"]


@pytest.mark.parametrize("markup", [HERMES, QWEN_IN_TAG, FENCE])
async def test_a_call_cut_in_three_anywhere(markup):
    text = "A\n" + markup + "\nB"
    for pieces in splits(text, three=True):
        out, _ = await run(calls, with_finish(pieces))
        assert calls_of(out) == [READ], pieces
        assert text_of(out) == "A\n\nB", pieces


async def test_two_calls_in_one_answer():
    text = "First:\n" + HERMES + "\nthen\n" + '```json\n{"name": "bash", "arguments": {"command": "ls"}}\n```'
    for pieces in splits(text):
        out, _ = await run(calls, with_finish(pieces))
        assert calls_of(out) == [READ, ToolCall("call_text_1", "bash", json.dumps({"command": "ls"}))], pieces
        assert text_of(out) == "First:\n\nthen\n"


async def test_ordinary_text_streams_without_waiting():
    pieces = ["Hello ", "a < b ", "and `x` ", "then\n", "done"]
    out, progress = await run(calls, [TextChunk(p) for p in pieces])
    assert text_of(out) == "".join(pieces)
    # each piece is out before the next one is read (only "<" waits for one character)
    assert progress[0] == 0 and progress[-1] == len(pieces) - 1
    assert sorted(set(progress)) == list(range(len(pieces)))


@pytest.mark.parametrize(
    "fence",
    [
        '```json\n{"name": "deploy", "arguments": {"env": "prod"}}\n```',  # unknown tool
        '```json\n{"name": "read", "arguments": {"path": "a.py"}, "id": 1}\n```',  # extra key
        '```json\n{"name": "read"}\n```',  # no arguments
        '```json\n{"name": "my-app", "version": "1.0.0"}\n```',  # a package.json
        '```json\n[{"name": "read", "arguments": {}}]\n```',  # not one object
        '```python\n{"name": "read", "arguments": {"path": "a.py"}}\n```',  # code, not a call
        '```\nrm -rf build\n```',
    ],
)
async def test_fences_that_are_not_calls_stay_text(fence):
    text = "See:\n" + fence + "\nok"
    for pieces in splits(text):
        stats = TextCallStats()
        out, _ = await run(lambda s: calls(s, stats), with_finish(pieces))
        assert calls_of(out) == [], pieces
        assert text_of(out) == text, pieces
        assert stats.parsed == 0 and stats.malformed == 0


async def test_a_fence_that_cannot_be_a_call_is_released_before_it_closes():
    chunks = [TextChunk('```json\n{"name": "my-app",'), TextChunk(' "version": "1"}\n'), TextChunk("```\n")]
    out, progress = await run(calls, chunks)
    assert progress[0] == 0  # the unknown name decided it: no waiting for the closing fence
    assert text_of(out) == "".join(c.text for c in chunks)


async def test_calls_inside_an_ordinary_code_block_are_never_taken():
    block = "Example:\n```xml\n" + HERMES + "\n" + QWEN + "\n```\n"
    for pieces in splits(block + "and now\n" + BARE_FENCE):
        out, _ = await run(calls, with_finish(pieces))
        # the block's closing fence ends the code: the call after it is a call again
        assert calls_of(out) == [READ], pieces
        assert text_of(out) == block + "and now\n", pieces


async def test_a_fence_only_counts_at_the_start_of_a_line():
    text = 'inline ```json {"name": "read", "arguments": {"path": "a.py"}}\n``` here'
    out, _ = await run(calls, with_finish([text]))
    assert calls_of(out) == [] and text_of(out) == text


async def test_malformed_call_stays_text_and_is_counted():
    text = 'Try:\n<tool_call>{"name": "read", "arguments": {path: a.py}}</tool_call>\nEnd'
    stats = TextCallStats()
    out, _ = await run(lambda s: calls(s, stats), with_finish([text]))
    assert calls_of(out) == [] and text_of(out) == text
    assert stats.malformed == 1 and stats.parsed == 0


async def test_the_tag_named_in_prose_is_text_and_does_not_hold_the_stream():
    chunks = [TextChunk("Wrap calls in <tool_call> tags, "), TextChunk("or <function=name> "), TextChunk("blocks.")]
    stats = TextCallStats()
    out, progress = await run(lambda s: calls(s, stats), chunks)
    assert text_of(out) == "".join(c.text for c in chunks)
    assert calls_of(out) == [] and stats.malformed == 0
    assert progress[0] == 0


async def test_an_unclosed_call_at_the_end_of_the_stream_is_still_a_call():
    out, _ = await run(calls, with_finish(['<tool_call>{"name": "read", "arguments": {"path": "a.py"}}']))
    assert calls_of(out) == [READ] and text_of(out) == ""


async def test_an_unfinished_markup_at_the_end_is_given_back_as_text():
    for tail in ["<tool_", "<function=re", "\n``", '```json\n{"name": "re']:
        out, _ = await run(calls, with_finish(["x", tail]))
        assert text_of(out) == "x" + tail and calls_of(out) == [], tail


async def test_a_native_call_wins_and_the_markup_is_given_back():
    native = ToolCall("call_abc", "bash", '{"command": "ls"}')
    chunks = [TextChunk("A\n" + FENCE + "\nB"), ToolCallChunk(native), FinishChunk("tool_calls")]
    stats = TextCallStats()
    out, _ = await run(lambda s: calls(s, stats), chunks)
    assert calls_of(out) == [native]
    assert text_of(out) == "A\n\nB" + FENCE
    assert (stats.native, stats.parsed, stats.emitted) == (1, 1, 0)


async def test_hermes_arguments_given_as_json_text_and_unknown_names_in_tags():
    text = '<tool_call>{"name": "lint", "arguments": "{\\"fix\\": true}"}</tool_call>'
    out, _ = await run(calls, with_finish([text]))
    assert calls_of(out) == [ToolCall("call_text_0", "lint", '{"fix": true}')]


async def test_qwen_parameters_are_typed_by_the_schema():
    markup = (
        "<function=read>\n<parameter=path>\nsrc/a b.py\n</parameter>\n"
        "<parameter=offset>\n10\n</parameter>\n<parameter=limit>\n5\n</parameter>\n</function>"
    )
    schemas = {"read": {"properties": {"path": {"type": "string"}, "offset": {"type": "integer"}}}}
    out, _ = await run(lambda s: calls(s, schemas=schemas), with_finish([markup]))
    assert json.loads(calls_of(out)[0].arguments) == {"path": "src/a b.py", "offset": 10, "limit": "5"}
    out, _ = await run(calls, with_finish([markup.replace("10", "[1, 2]")]))
    assert json.loads(calls_of(out)[0].arguments)["offset"] == [1, 2]


async def test_multiline_parameter_values_keep_their_inner_newlines():
    markup = "<function=write>\n<parameter=path>\na.py\n</parameter>\n<parameter=content>\nx = 1\n\ny = 2\n</parameter>\n</function>"
    out, _ = await run(calls, with_finish([markup]))
    assert json.loads(calls_of(out)[0].arguments) == {"path": "a.py", "content": "x = 1\n\ny = 2"}


async def test_a_long_call_in_small_pieces_is_parsed_once():
    content = "line of code\n" * 20_000  # 260,000 characters
    markup = "<tool_call>" + json.dumps({"name": "write", "arguments": {"path": "big.py", "content": content}}) + "</tool_call>"
    pieces = [markup[i:i + 7] for i in range(0, len(markup), 7)]
    out, _ = await run(calls, with_finish(pieces))
    assert json.loads(calls_of(out)[0].arguments)["content"] == content


async def test_thoughts_then_calls_compose():
    text = "<think>read it</think>\n" + HERMES + "\nok"
    for pieces in splits(text):
        out, _ = await run(lambda s: calls(think_filter(s)), with_finish(pieces))
        assert text_of(out, ReasoningChunk) == "read it"
        assert calls_of(out) == [READ]
        assert text_of(out) == "\nok"


@pytest.mark.parametrize("wrap", [think, calls])
async def test_closing_the_filter_closes_the_provider_stream(wrap):
    closed = []

    async def provider():
        try:
            yield UsageChunk(1, 1)  # passes through both filters at once
            yield TextChunk("second")
        finally:
            closed.append(True)

    wrapped = wrap(provider())
    assert await wrapped.__anext__() == UsageChunk(1, 1)
    assert closed == []
    await wrapped.aclose()
    assert closed == [True]


def test_the_tool_prompt_teaches_the_form_the_filter_reads():
    from totem_engine.textcalls import tool_prompt
    from totem_engine.vocab.tools import ToolSpec

    spec = ToolSpec("read", "Read a file.\n\nLong details.", {"type": "object", "properties": {"path": {"type": "string"}}})
    prompt = tool_prompt([spec])
    assert "- read: Read a file." in prompt and "Long details" not in prompt
    assert '"properties":{"path":{"type":"string"}}' in prompt
    example = prompt[prompt.index("<tool_call>"): prompt.index("</tool_call>") + len("</tool_call>")]
    assert example.startswith("<tool_call>\n{") and example.endswith("}\n</tool_call>")


# ---------------------------------------------------------------------------------------------
# Bare JSON lines and file blocks (the small-model forms)
# ---------------------------------------------------------------------------------------------

BARE = 'Let me look.\n{"name": "read", "arguments": {"path": "calc.py"}}\n'


async def test_a_bare_json_line_is_a_call_wherever_the_stream_is_cut():
    for pieces in splits(BARE):
        out, _ = await run(calls, with_finish(pieces))
        assert [(c.name, json.loads(c.arguments)) for c in calls_of(out)] == [("read", {"path": "calc.py"})], pieces
        assert text_of(out) == "Let me look.\n\n"


async def test_a_bare_json_object_that_is_not_a_known_call_stays_text():
    for text in ('{"name": "Ada", "age": 3}\n', 'Example: {"name": "read", "arguments": {}}\n', '{"name": "read", "argu'):
        out, _ = await run(calls, with_finish([text]))
        assert calls_of(out) == [] and text_of(out) == text


async def test_a_bare_call_waits_for_its_closing_brace_without_holding_ordinary_text():
    source = [TextChunk("ok\n"), TextChunk('{"name": "bash", "arguments": {"command": "ls'), TextChunk('"}}'), FinishChunk("stop", "m")]
    out, progress = await run(calls, source)
    assert text_of(out) == "ok\n" and progress[0] == 0
    assert [c.name for c in calls_of(out)] == ["bash"]


def blocks(stream, stats=None):
    return text_tool_calls(stream, TOOLS, stats=stats, file_blocks=True)


FILE_BLOCK = "Here is the new file.\n\ncalc.py\n```python\ndef add(a, b):\n    return a + b\n```\nDone."


async def test_a_path_line_and_a_fence_are_a_whole_file_write_wherever_the_stream_is_cut():
    for pieces in splits(FILE_BLOCK):
        out, _ = await run(blocks, with_finish(pieces))
        found = [(c.name, json.loads(c.arguments)) for c in calls_of(out)]
        assert found == [("write", {"path": "calc.py", "content": "def add(a, b):\n    return a + b\n"})], pieces
        assert text_of(out) == "Here is the new file.\n\ncalc.py\n\nDone."


@pytest.mark.parametrize("line", ["`src/calc.py`", "**src/calc.py**", "### src/calc.py", "src/calc.py:", "File: src/calc.py"])
async def test_the_path_line_may_carry_markdown(line):
    out, _ = await run(blocks, with_finish([f"{line}\n```\nx = 1\n```\n"]))
    assert [json.loads(c.arguments)["path"] for c in calls_of(out)] == ["src/calc.py"]


@pytest.mark.parametrize(
    "text",
    [
        "Run it like this:\n```python\nadd(1, 2)\n```\n",  # no path before the fence
        "See calc.py for details\n```python\nadd(1, 2)\n```\n",  # a sentence, not a path line
        "../outside.py\n```python\nx = 1\n```\n",  # a path that leaves the folder
    ],
)
async def test_a_fence_after_anything_but_a_path_line_stays_text(text):
    out, _ = await run(blocks, with_finish([text]))
    assert calls_of(out) == [] and text_of(out) == text


async def test_file_blocks_are_off_unless_asked_for():
    out, _ = await run(calls, with_finish([FILE_BLOCK]))
    assert calls_of(out) == [] and text_of(out) == FILE_BLOCK


async def test_a_call_fence_after_a_path_line_is_still_the_call():
    text = 'calc.py\n```json\n{"name": "read", "arguments": {"path": "calc.py"}}\n```\n'
    out, _ = await run(blocks, with_finish([text]))
    assert [(c.name, json.loads(c.arguments)) for c in calls_of(out)] == [("read", {"path": "calc.py"})]


@pytest.mark.parametrize(
    "intro", ["Here's the updated `stats.py` file:\n\n", "The fixed `stats.py`:\n", "stats.py\n\n"]
)
async def test_a_sentence_quoting_one_path_introduces_a_file_block_too(intro):
    out, _ = await run(blocks, with_finish([f"{intro}```python\nx = 1\n```\n"]))
    assert [json.loads(c.arguments)["path"] for c in calls_of(out)] == ["stats.py"]


@pytest.mark.parametrize(
    "intro", ["Compare `a.py` with `b.py`:\n", "Here is `stats.py`.\n", "stats.py\n\n\n"]
)
async def test_a_sentence_quoting_two_paths_or_not_ending_in_a_colon_does_not(intro):
    out, _ = await run(blocks, with_finish([f"{intro}```python\nx = 1\n```\n"]))
    assert calls_of(out) == []


@pytest.mark.parametrize(
    "text",
    [
        "```\nstats.py\n```\n```python\nx = 1\n```\n",  # the path in a fence of its own
        "```\nstats.py\n```\n\n```\nx = 1\n```\n",
        "```python stats.py\nx = 1\n```\n",  # in the info string
        "```stats.py\nx = 1\n```\n",
        "```python\n# stats.py\nx = 1\n```\n",  # in a comment on the first line, which is dropped
        "```js\n// File: stats.py\nx = 1\n```\n",
    ],
)
async def test_the_path_may_sit_in_a_fence_before_in_the_info_string_or_in_a_first_line_comment(text):
    for pieces in splits(text):
        out, _ = await run(blocks, with_finish(pieces))
        found = [(c.name, json.loads(c.arguments)) for c in calls_of(out)]
        assert found == [("write", {"path": "stats.py", "content": "x = 1\n"})], pieces


@pytest.mark.parametrize(
    "text",
    [
        "```python\n# compute the total\nx = 1\n```\n",
        "```python\nx = 1  # stats.py\n```\n",
        "```\nnot a path\n```\n```python\nx = 1\n```\n",
    ],
)
async def test_a_block_with_a_comment_that_names_no_path_stays_text(text):
    out, _ = await run(blocks, with_finish([text]))
    assert calls_of(out) == [] and text_of(out) == text


def one_file(stream, stats=None):
    return text_tool_calls(stream, TOOLS | {"patch"}, stats=stats, file_blocks=True, default_path="calc.py")


async def test_a_block_that_names_no_file_is_the_one_file_shown_with_the_request():
    text = "Here is the fix.\n```python\ndef add(a, b):\n    return a + b\n```\nDone."
    for pieces in splits(text):
        out, _ = await run(one_file, with_finish(pieces))
        found = [(c.name, json.loads(c.arguments)) for c in calls_of(out)]
        assert found == [("write", {"path": "calc.py", "content": "def add(a, b):\n    return a + b\n"})], pieces


@pytest.mark.parametrize("text", ["Run:\n```bash\npython calc.py\n```\n", "Output:\n```text\n3\n```\n", "```js\nx()\n```\n"])
async def test_a_block_in_another_language_is_not_taken_for_the_file(text):
    out, _ = await run(one_file, with_finish([text]))
    assert calls_of(out) == [] and text_of(out) == text


async def test_a_fence_holding_only_a_path_labels_the_next_block():
    out, _ = await run(one_file, with_finish(["```\nother.py\n```\n```python\nx = 1\n```\n"]))
    assert [(c.name, json.loads(c.arguments)["path"]) for c in calls_of(out)] == [("write", "other.py")]
    assert text_of(out).startswith("```\nother.py\n```")


async def test_a_diff_block_is_a_patch_of_its_file_with_the_header_added_when_missing():
    diff = "@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n"
    out, _ = await run(one_file, with_finish([f"```diff\n{diff}```\n"]))
    (call,) = calls_of(out)
    assert call.name == "patch"
    assert json.loads(call.arguments) == {"patch": f"--- a/calc.py\n+++ b/calc.py\n{diff}"}


@pytest.mark.parametrize(
    "fence",
    [
        '```json\n{"name": "bash", "arguments": ["ls", "-l"]}\n```',  # arguments not an object
        '```json\n{"name": "read", "arguments": "a.py"}\n```',
        '```json\n{"name": "write", "arguments": {"content": "a = """x""""}}\n```',  # not JSON
    ],
)
async def test_a_json_fence_naming_a_tool_that_does_not_parse_is_counted_as_malformed(fence):
    text = f"Run:\n{fence}\n"
    for pieces in splits(text):
        stats = TextCallStats()
        out, _ = await run(lambda s: calls(s, stats), with_finish(pieces))
        assert calls_of(out) == [] and text_of(out) == text, pieces
        assert stats.malformed == 1, pieces


async def test_arguments_sent_as_a_list_fill_the_one_required_string_argument():
    schemas = {
        "bash": {"properties": {"command": {"type": "string"}, "timeout": {"type": "integer"}}, "required": ["command"]},
        "grep": {"properties": {"pattern": {"type": "string"}, "path": {"type": "string"}}, "required": ["pattern", "path"]},
    }
    text = '```json\n{"name": "bash", "arguments": ["sed -i s/a/b/ x.py", "sed -i s/a/b/ y.py"]}\n```\n'
    out, _ = await run(lambda s: calls(s, schemas=schemas), with_finish([text]))
    assert [(c.name, json.loads(c.arguments)) for c in calls_of(out)] == [
        ("bash", {"command": "sed -i s/a/b/ x.py\nsed -i s/a/b/ y.py"})
    ]
    # two required arguments: no guessing which string is which
    stats = TextCallStats()
    text = '```json\n{"name": "grep", "arguments": ["x", "."]}\n```\n'
    out, _ = await run(lambda s: text_tool_calls(s, {"grep"}, stats=stats, schemas=schemas), with_finish([text]))
    assert calls_of(out) == [] and stats.malformed == 1


async def test_the_shell_called_by_another_name_or_a_program_called_as_a_tool_runs_as_bash():
    def fenced(name, arguments):
        return f'```json\n{json.dumps({"name": name, "arguments": arguments})}\n```\n'

    async def called(text, known=("bash", "read")):
        stats = TextCallStats()
        out, _ = await run(lambda s: text_tool_calls(s, set(known), stats=stats), with_finish([text]))
        return [(c.name, json.loads(c.arguments)) for c in calls_of(out)], stats.malformed

    run_tests = "python -m pytest -v test_inventory.py"
    assert await called(fenced("python", [run_tests])) == ([("bash", {"command": run_tests})], 0)
    assert await called(fenced("shell", {"command": "ls -la"})) == ([("bash", {"command": "ls -la"})], 0)
    assert await called(fenced("execute_command", ["cd src", "ls"])) == ([("bash", {"command": "cd src\nls"})], 0)
    # Python code under the program's name is not a command line: never run, left as text (which
    # the small-model policy asks again for, since it looks like a call)
    for arguments in ({"code": "print(1)"}, ["print(1)"]):
        assert (await called(fenced("python", arguments)))[0] == []
        assert looks_like_a_call(fenced("python", arguments))
    # without a bash tool to run it, no other name stands for one
    assert await called(fenced("shell", ["ls"]), known=("read",)) == ([], 0)
    # a name that is not a string is no call, and no crash
    assert (await called('```json\n{"name": ["shell"], "arguments": ["ls"]}\n```\n'))[0] == []


def test_a_fenced_call_left_as_text_is_recognised():
    assert looks_like_a_call('Run it:\n```json\n{\n  "name": "python",\n  "arguments": ["-m", "pytest"]\n}\n```')
    assert looks_like_a_call('```\n{"name": "read", "arguments": {"path": 1}}\n```')
    assert not looks_like_a_call('```json\n{"name": "my-app", "version": "1.0.0"}\n```')
    assert not looks_like_a_call('Use {"name": "x", "arguments": {}} in prose.')


# ---------------------------------------------------------------------------------------------
# script blocks (code mode)
# ---------------------------------------------------------------------------------------------


def scripts(stream, stats=None):
    return text_tool_calls(stream, TOOLS | {"run_script"}, stats=stats, file_blocks=True, scripts=True)


SCRIPT_BLOCK = "I look first.\n\n```python\nimport totem\nprint(totem.files())\n```\n"


async def test_a_python_block_naming_no_file_is_a_script_wherever_the_stream_is_cut():
    for pieces in splits(SCRIPT_BLOCK):
        out, _ = await run(scripts, with_finish(pieces))
        found = [(c.name, json.loads(c.arguments)) for c in calls_of(out)]
        assert found == [("run_script", {"script": "import totem\nprint(totem.files())\n"})], pieces
        assert text_of(out) == "I look first.\n\n\n"


async def test_in_code_mode_a_named_block_is_still_a_file_and_a_comment_atop_a_script_stays_in_it():
    out, _ = await run(scripts, with_finish([FILE_BLOCK]))
    assert [c.name for c in calls_of(out)] == ["write"]
    out, _ = await run(scripts, with_finish(["```python\n# calc.py\nimport totem\nprint(1)\n```\n"]))
    assert [json.loads(c.arguments) for c in calls_of(out)] == [{"script": "# calc.py\nimport totem\nprint(1)\n"}]


async def test_a_shell_block_is_text_even_in_code_mode():
    out, _ = await run(scripts, with_finish(["Run:\n```bash\nls\n```\n"]))
    assert not calls_of(out) and text_of(out) == "Run:\n```bash\nls\n```\n"


async def test_without_write_only_scripts_are_read_and_a_named_file_is_text():
    def only_scripts(stream):
        return text_tool_calls(stream, {"run_script"}, scripts=True)

    out, _ = await run(only_scripts, with_finish([FILE_BLOCK]))
    assert not calls_of(out) and "def add" in text_of(out)
    out, _ = await run(only_scripts, with_finish([SCRIPT_BLOCK]))
    assert [c.name for c in calls_of(out)] == ["run_script"]


def test_a_script_is_replayed_as_the_block_it_was_read_from_and_its_output_as_what_it_printed():
    script = 'import totem\nprint("```")\n'
    call = ToolCall(id="c1", name="run_script", arguments=json.dumps({"script": script}))
    replayed = as_written([
        Message(role="user", text="fix it"),
        Message(role="assistant", text="Looking.", tool_calls=(call,)),
        Message(role="tool", tool_call_id="c1", name="run_script", text="```\n[No changes]"),
    ])
    assert [m.role for m in replayed] == ["user", "assistant", "user"]
    # A fence longer than any the script holds, so the replay reads back as one block.
    assert replayed[1].text == f"Looking.\n\n````python\n{script.rstrip()}\n````"
    assert replayed[2].text == "The script printed:\n```\n[No changes]"
