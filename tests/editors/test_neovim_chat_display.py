"""End to end in a real Neovim (issue 37, Neovim's items): what the chat shows of a message and
an answer, and what the editor sends for it. Uses test_neovim.py's fixtures and probes.
"""

from __future__ import annotations

from tests.editors.test_neovim import (  # noqa: F401 - fixtures
    CHAT_LINES,
    VISIBLE_CHAT,
    config_extra,
    model,
    neovim,
    project,
    table_cells,
    table_shown,
    wait_for_client,
    wait_idle,
)
from tests.support.model_server import text_reply

CODE_ROWS = [
    ["Key", "Default", "Meaning"],
    ["`permission_timeout`", "`30`", "how long a permission question waits before it is refused"],
    ["`sandbox_network`", "`false`", "whether commands in the **sandbox** reach the network at all"],
    ["`retry_max_wait`", "`60.0`", "the longest wait between two tries of a failed request"],
]
CODE_TABLE = "\n".join(["| " + " | ".join(CODE_ROWS[0]) + " |", "|---|---|---|",
                        *["| " + " | ".join(row) + " |" for row in CODE_ROWS[1:]]])

# The treesitter captures at each (row, column) given: their names.
CAPTURES = ("local buf = require('totem.chat').buf() vim.treesitter.highlighter.active[buf].tree:parse(true)"
            " local out = {} for _, at in ipairs(...) do"
            "   out[#out + 1] = vim.tbl_map(function(c) return c.capture end,"
            "     vim.treesitter.get_captures_at_pos(buf, at[1], at[2])) end return out")


def test_a_wide_table_with_inline_code_lines_up_as_shown_and_only_its_header_is_bold(neovim, project, model):
    """A table wider than the chat whose cells hold `inline code` and **strong** words: drawn to
    fit, every line as wide as the others as the window shows it (nothing of a cell concealed),
    a long code span cut into code spans, and no body row drawn as a header (bold)."""
    nv = neovim
    model.enqueue(text_reply(f"Settings:\n\n{CODE_TABLE}\n\nThat is all.", pieces=7))
    wait_for_client(nv)
    nv.command("TotemAsk Which settings?")
    lines = wait_idle(nv, "the answer", "That is all.")
    drawn = table_shown(lines, "| Key")
    assert len(drawn) > len(CODE_ROWS) + 1, drawn  # fitted: cells wrapped
    shown = table_shown(nv.lua(VISIBLE_CHAT), "| Key")
    widths = nv.lua("return vim.tbl_map(vim.fn.strdisplaywidth, ...)", shown)
    assert len(set(widths)) == 1, "\n".join(shown)  # the columns line up as shown
    # Read back, a code span's pieces joined: what the model wrote.
    read_back = [[cell.replace("``", "") for cell in row] for row in table_cells(drawn)]
    assert read_back == [[cell.replace(" ", "") for cell in row] for row in CODE_ROWS], drawn
    # A code span cut over two lines is a code span on each (backticks in pairs, none shown bare).
    assert all(line.count("`") % 2 == 0 for line in drawn), "\n".join(drawn)
    first = lines.index(drawn[0])
    headers, body = [], []
    for r, line in enumerate(drawn):
        for word in ("Key", "refused", "all", "request", "network"):
            at = line.find(word)
            if at > 0 and line[at - 1] == " ":
                (headers if r == 0 else body).append([first + r, len(line[:at].encode())])
    captured = nv.lua(CAPTURES, headers + body)
    assert "markup.heading" in captured[0], captured
    assert len(body) == 4 and not any("markup.heading" in c for c in captured[1:]), (drawn, captured)
