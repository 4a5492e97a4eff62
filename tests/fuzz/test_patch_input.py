"""The ``patch`` tool's reading of a model's unified diff (tools/patch.py ``recount`` and the
parse after it) under any text and under mutations of a good patch: the parsed files, or a
``ToolError`` for the model; never another exception."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from tests.fuzz.support import CHEAP, examples, no_hang
from totem_engine.tools.base import ToolError
from totem_engine.tools.patch import _blocks, _parse, _paths, recount

GOOD = (
    "--- a/app.py\n+++ b/app.py\n@@ -1,3 +1,3 @@\n def f():\n-    return 1\n+    return 2\n \n"
    "--- /dev/null\n+++ b/new.py\n@@ -0,0 +1,2 @@\n+x = 1\n+y = 2\n"
)
PIECES = ["--- a/x\n", "+++ b/x\n", "--- /dev/null\n", "+++ /dev/null\n", "@@ -1,2 +1,2 @@\n", "@@\n", "@@ -0,0 +1 @@\n",
          " ctx\n", "-old\n", "+new\n", "\n", "\\ No newline at end of file\n", "diff --git a/x b/x\n", "\r\n",
          "Binary files a/x and b/x differ\n", "@@ -99999999999999999999,1 +1 @@\n"]


@st.composite
def mutated(draw: st.DrawFn) -> str:
    lines = GOOD.splitlines(keepends=True)
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(lines)))
        op = draw(st.sampled_from(("insert", "delete", "replace", "cut")))
        if op == "insert" or not lines:
            lines.insert(at, draw(st.one_of(st.sampled_from(PIECES), st.text(max_size=12))))
        elif op == "delete":
            del lines[min(at, len(lines) - 1)]
        elif op == "replace":
            lines[min(at, len(lines) - 1)] = draw(st.sampled_from(PIECES))
        else:
            line = lines[min(at, len(lines) - 1)]
            lines[min(at, len(lines) - 1)] = line[: draw(st.integers(0, len(line)))]
    return "".join(lines)


patches = st.one_of(st.text(max_size=200), st.lists(st.sampled_from(PIECES), max_size=15).map("".join), mutated())


@settings(max_examples=examples(CHEAP))
@given(patches)
@example("--- /dev/null\n+++ /dev/null\n@@ -0 +0 @@\n-")  # found by make fuzz: an assert in the tool
def test_any_patch_text_is_files_or_a_tool_error(text):
    with no_hang():
        try:
            recounted, numbered = recount(text)
            files = _parse(recounted)
        except ToolError as refused:
            assert str(refused)
            return
        assert sum(len(f) for f in files) == len(numbered)
        for patched in files:
            source, target = _paths(patched)
            assert source is not None or target is not None
            for hunk in patched:
                _blocks(hunk)
