"""End to end in a real Neovim (issue 37, Neovim's items): what the chat shows of a message and
an answer, and what the editor sends for it. Uses test_neovim.py's fixtures and probes.
"""

from __future__ import annotations

from tests.editors import test_neovim as base
from tests.editors.test_neovim import (
    CHAT_LINES,
    NOTIFIED_LEVELS,
    VISIBLE_CHAT,
    WINDOW_OF_CHAT,
    table_cells,
    table_shown,
    wait_for_client,
    wait_for_input,
    wait_idle,
)
from tests.support.model_server import text_reply, tool_reply
from tests.support.reminder import sent_messages

# test_neovim.py's fixtures: a Neovim with the plugin on a Total.js project, a scripted model.
neovim, project, model, config_extra = base.neovim, base.project, base.model, base.config_extra

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


def last_user_text(request: dict) -> str:
    return sent_messages(request)[-1]["content"]


def test_selection_typed_in_the_chat_attaches_the_files_last_selection_and_the_chat_says_what_was_attached(
        neovim, project, model):
    """`#selection` typed in the chat's input (opened from the chat, not from Visual mode) sends
    the last Visual selection of the file the user was in; the user's message in the chat names
    what its mentions attached, live and when the session is shown again; `#selection` in a file
    never selected in sends no lines and says so."""
    nv = neovim
    wait_for_client(nv)
    nv.lua(NOTIFIED_LEVELS)
    # Lines 5 and 6 selected in the file, then Visual mode left; then into the chat.
    nv.input("5GVj<Esc>")
    nv.wait(lambda: nv.lua("return vim.fn.mode()") == "n", "Normal mode")
    model.enqueue(text_reply("It builds the greeting."))
    nv.command("TotemChat")
    nv.lua(WINDOW_OF_CHAT + " vim.api.nvim_set_current_win(win)")
    nv.input("i")
    wait_for_input(nv)
    nv.input("What does #selection do with @package.json?<C-s>")
    lines = wait_idle(nv, "the answer", "It builds the greeting.")
    sent = last_user_text(model.requests[-1])
    assert '<context file="controllers/api.js" lines="5-6">\nfunction hello() {\n\tvar name' in sent, sent
    assert '<context file="package.json">' in sent, sent
    you = lines.index("## You")
    told = "*(attached: #selection controllers/api.js:5-6, @package.json)*"
    assert lines[you + 1: you + 4] == ["What does #selection do with @package.json?", "", told], lines
    assert nv.lua("return _G.notified") == []

    # Shown again from the store: the same line, from what the server attached.
    live = nv.lua(CHAT_LINES)
    nv.lua("vim.ui.select = function(items, opts, on_choice) on_choice(items[1], 1) end")
    nv.command("TotemNew")
    nv.command("TotemSessions")
    nv.wait(lambda: nv.lua(CHAT_LINES) == live, "the session shown again, as it was")

    # A file never selected in: nothing attached, and the user is told.
    nv.command("edit package.json")
    model.enqueue(text_reply("Nothing selected."))
    nv.command("TotemAsk Explain #selection")
    lines = wait_idle(nv, "the second answer", "Nothing selected.")
    assert 'lines="' not in last_user_text(model.requests[-1])  # the file named as context, no lines
    assert not any(line.startswith("*(attached:") for line in lines[lines.index("Explain #selection"):]), lines
    warn = nv.lua("return vim.log.levels.WARN")
    assert nv.lua("return _G.notified")[0] == [
        "Totem: #selection: package.json has no selection to attach; select lines in Visual mode first", warn]


def test_the_proposals_diff_tab_is_labelled_with_its_file_and_the_tab_line_given_back(neovim, project, model):
    """`e` on a file change opens the proposal in a tab that the tab line names `Totem review:
    controllers/api.js` (Neovim's own label was `t//p/c/api.js`); once it is closed (`q`), the
    user's tab line ('tabline' empty) is theirs again."""
    nv = neovim
    changed = project / "controllers" / "api.js"
    model.enqueue(tool_reply([("read", {"path": "controllers/api.js"})]))
    model.enqueue(tool_reply([("write", {"path": "controllers/api.js",
                                         "content": changed.read_text().replace("'Hello '", "'Hi '")})]))
    model.enqueue(text_reply("Changed."))
    wait_for_client(nv)
    nv.command("TotemAsk Say hi")
    nv.wait(lambda: nv.lua("local p = require('totem.permission').current return p and p.win and p.files ~= nil"),
            "the review window")
    nv.input("e")
    nv.wait(lambda: nv.lua("return vim.fn.tabpagenr('$')") == 2 and nv.lua("return vim.bo.buftype") == "acwrite",
            "the proposal's tab")
    line = nv.lua("return vim.api.nvim_eval_statusline(vim.o.tabline, { use_tabline = true }).str")
    assert "Totem review: controllers/api.js" in line and "t//p" not in line, line
    if nv.tmux:
        top = nv.wait(lambda: (screen := nv.capture()) and "Totem review:" in screen.split("\n")[0] and screen.split("\n")[0],
                      "the label on the screen's tab line")
        assert "Totem review: controllers/api.js" in top and "c/api.js" in top, top  # the other tab as Neovim names it
    nv.input("q")
    nv.wait(lambda: nv.lua("return vim.fn.tabpagenr('$')") == 1, "the proposal's tab closed")
    nv.wait(lambda: nv.lua("return vim.o.tabline") == "", "the user's tab line back")
    nv.wait(lambda: nv.lua("local p = require('totem.permission').current return p and p.win"), "the review again")
    nv.input("a")
    wait_idle(nv, "the end of the turn", "Changed.")


def test_a_question_names_its_session_and_brings_its_chat_forward(neovim, project, model):
    """The ask tool's question (totem/question) while another chat is shown: the prompt names the
    asking session (its chat's title), as a permission question does, and its chat is the one
    shown when the question is put; a free answer's prompt names it too."""
    nv = neovim
    model.enqueue(tool_reply([("ask", {"question": "Which colour?", "options": ["red", "blue"]})]))
    model.enqueue(tool_reply([("ask", {"question": "Which shade?"})]))
    model.enqueue(text_reply("Blue, navy."))
    wait_for_client(nv)
    # Answered once the chats are swapped: the first chat asks while the second is shown.
    nv.lua("_G.asked = {}"
           " local function shown() return require('totem.chat').state.n end"
           " vim.ui.select = function(items, opts, on_choice)"
           "   table.insert(_G.asked, { opts.prompt, shown() }) on_choice(items[2], 2) end"
           " vim.ui.input = function(opts, on_confirm)"
           "   table.insert(_G.asked, { opts.prompt, shown() }) on_confirm('navy') end")
    nv.lua("vim.cmd('TotemAsk Pick a colour')"
           " local chat = require('totem.chat') chat.show(chat.add_chat())")
    asked = nv.wait(lambda: len(nv.lua("return _G.asked")) == 2 and nv.lua("return _G.asked"), "both questions")
    assert asked == [["Pick a colour · Totem asks: Which colour?", 1], ["Pick a colour · Totem asks: Which shade? ", 1]], asked
    wait_idle(nv, "the answer", "Blue, navy.")
