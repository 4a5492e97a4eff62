"""The VS Code extension end to end, in a real VS Code: code-server 4.139.1 with the .vsix
installed, the workbench driven by Playwright in headless Chromium (tests/editors/vscode/drive.mjs),
against the real ``totem lsp`` and a loopback model server that scripts a streamed answer, an
``edit`` tool call and a final answer.

scripts/setup-editors.sh installs Node 24, code-server, Chromium and builds the .vsix (cached
under ~/.cache/totem-test, so a second run takes seconds); this test runs it first.
Screenshots go to build/artifacts/ (and docs/images/vscode-chat.png when it is missing or
TOTEM_DOCS_SCREENSHOTS=1).
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
import urllib.request
import zlib
from pathlib import Path

import pytest

from tests.editors.scenario import EDITED, NEW, OLD, ORIGINAL
from tests.support.processes import processes_with
from tests.support.model_server import ModelServer, Reply, text_reply, tool_reply
from tests.support.reminder import sent_messages
from totem_engine.tools.job import FORWARD

ROOT = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("TOTEM_TEST_CACHE") or Path.home() / ".cache" / "totem-test")
ARTIFACTS = ROOT / "build" / "artifacts"
DOCS_IMAGE = ROOT / "docs" / "images" / "vscode-chat.png"

FILE = "controllers/api.js"
QUESTION = "Change the greeting"
FIRST = "I will change the greeting in controllers/api.js."
ANSWER = "Done: hello() now answers Hello there, world!"
FINDING = "TJS010"
# Then, in the chat view: a sub-agent, a slash command, the agents panel.
WHERE = "Where is the greeting built?"
SUB_ANSWER = "The greeting is built in hello() of controllers/api.js."
PARENT_ANSWER = "Found it: hello() in controllers/api.js builds the greeting."
FIXED = "Fixed the login bug."
# Then the rough edges of issue 25, in a new chat.
LONG_Q = "Explain the project at length"
FIRST_PARAGRAPH = "First paragraph: the project serves one route, GET /api/hello/."
LONG_LAST = "That is the whole answer."
LONG_ANSWER = "\n\n".join(
    [FIRST_PARAGRAPH]
    + [f"Paragraph {n}: more about how the handler builds its greeting and answers plain text." for n in range(2, 26)]
    + [
        "```python\ndef greet(name):\n    # say hello\n    return 'Hello ' + name\n```",
        (
            "| route | handler | method | answers | notes about the route | more notes | and more notes | last column |\n"
            "|---|---|---|---|---|---|---|---|\n"
            "| /api/hello/ | hello | GET | plain text | the greeting with the name | nothing else to add | really nothing | end |"
        ),
        LONG_LAST,
    ]
)
REASONING = "First I read the route.\nThen I read the handler."
BASH_Q = "Run the checks"
# Said before the first command, slowly: the user turns to the first chat before it asks.
BASH_SAYS = "Running the checks now."
BASH_OK = "python3 -c 'print(42)'"
BASH_FAIL = "python3 -c 'import sys; print(\"boom\"); sys.exit(3)'"
BASH_ANSWER = "The first check printed 42, the second failed."
PATCH_Q = "Add two notes"
TWO_FILES = (
    "--- /dev/null\n+++ b/notes/alpha.md\n@@ -0,0 +1 @@\n+alpha\n"
    "--- /dev/null\n+++ b/notes/beta.md\n@@ -0,0 +1 @@\n+beta\n"
)
FEEDBACK = "Put both notes in README.md instead."
PATCH_ANSWER = "Understood: no notes folder."
AUTH_Q = "Try once more"
RETRIED = "The key works again."
# Then a background job in a new chat (issue 19): a loopback HTTP server, stopped from the list.
JOB_Q = "Start the dev server"
JOB_ANSWER = "The server runs in the background."
# Issue 37: the same with the sandbox's network off (totem.config), started with its ports forwarded.
FWD_Q = "Start it with its ports forwarded"
FWD_ANSWER = "The server runs in the sandbox; its port is on your loopback."
# Then issue 21 in a new chat: a mention, a two-hunk review, regenerate, a restart, a rewind.
REVIEW_FILE = "config/settings.js"
REVIEW_ORIGINAL = "".join(f"exports.{k} = {v};\n" for k, v in [
    ("port", 8000), ("host", "'127.0.0.1'"), ("workers", 1), ("timeout", 30), ("debug", "false"), ("name", "'demo'"), ("cache", "true"),
])
REVIEW_PROPOSED = REVIEW_ORIGINAL.replace("port = 8000", "port = 8080").replace("cache = true", "cache = false")
REVIEW_TAKEN = REVIEW_ORIGINAL.replace("port = 8000", "port = 8080")
REVIEW_TYPED = "Tidy @config/sett"
REVIEW_REST = "please"
REVIEW_FIRST = "I will change the port and the cache."
REVIEW_ANSWER = "Kept your version: the port only."
REVIEW_SECOND = "Here is another answer: nothing to change."
STILL_Q = "Still there?"
STILL_ANSWER = "Yes, the same session."
# Issue 37: a command stopped as it runs; a model typed in the picker; a provider added before a restart.
STOP_Q = "Wait for a while"
STOP_COMMAND = "sleep 30"
TYPED_MODEL = "sim/typed-model"
FAILED_IMAGE = ROOT / "docs" / "images" / "vscode-failed-command.png"


def _png_square(size: int, rgb: tuple[int, int, int]) -> bytes:
    """A PNG of one colour, `size` pixels a side (PNG spec: IHDR, one IDAT, IEND)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    rows = b"".join(b"\x00" + bytes(rgb) * size for _ in range(size))
    header = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


SQUARE = _png_square(48, (0x2E, 0x8B, 0x57))


def _totem() -> str:
    beside = Path(sys.executable).parent / "totem"
    return str(beside) if beside.exists() else (shutil.which("totem") or "totem")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def tools() -> dict[str, str]:
    """Runs the set-up (seconds when the caches are warm) and returns what it wrote."""
    setup = subprocess.run(
        ["bash", str(ROOT / "scripts" / "setup-editors.sh"), "vscode"],
        capture_output=True, text=True, timeout=1200,
    )
    assert setup.returncode == 0, f"scripts/setup-editors.sh vscode failed:\n{setup.stderr[-4000:]}"
    values = dict(line.split("=", 1) for line in (CACHE / "vscode.env").read_text().splitlines() if "=" in line)
    for key in ("NODE", "CODE_SERVER", "CHROMIUM", "VSIX"):
        assert Path(values[key]).exists(), f"{key} missing: {values[key]}"
    return values


def test_vscode_node_tests(tools):
    """The extension's Node tests (protocol client and chat state against a real totem lsp)."""
    env = dict(os.environ, PATH=f"{Path(tools['NODE']).parent}:{os.environ.get('PATH', '')}", TOTEM_PATH=_totem())
    run = subprocess.run(
        ["npm", "test", "--silent"], cwd=ROOT / "editors" / "vscode", env=env,
        capture_output=True, text=True, timeout=300,
    )
    (ARTIFACTS.mkdir(parents=True, exist_ok=True), (ARTIFACTS / "vscode-node-tests.log").write_text(run.stdout + run.stderr))
    assert run.returncode == 0, (run.stdout + run.stderr)[-4000:]
    assert "ℹ fail 0" in run.stdout


def _wait_http(url: str, proc: subprocess.Popen, log: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"code-server exited ({proc.returncode}):\n{log.read_text()[-3000:]}")
        try:
            urllib.request.urlopen(url, timeout=2)
            return
        except urllib.error.HTTPError:
            return  # it answers (a redirect to the workbench counts)
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"code-server did not answer at {url}:\n{log.read_text()[-3000:]}")


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    # Children (extension host, totem lsp) share the group: make sure none is left.
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def test_vscode_chat_edit_accept_and_problem(tmp_path, tools):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    project = tmp_path / "project"
    (project / "controllers").mkdir(parents=True)
    # A Total.js project: package.json depends on total5, so Totem's convention checks apply.
    (project / "package.json").write_text(json.dumps({"name": "demo", "dependencies": {"total5": "^0.0.9"}}) + "\n")
    (project / FILE).write_text(ORIGINAL)
    (project / ".totem" / "commands").mkdir(parents=True)
    (project / ".totem" / "commands" / "fix.md").write_text("---\ndescription: Fix a bug\n---\nFind and fix $ARGUMENTS.\n")
    (project / ".totem" / "agents").mkdir(parents=True)
    (project / ".totem" / "agents" / "reviewer.md").write_text("---\ndescription: Reviews a change\ntools: [read, grep]\n---\nReview it.\n")
    home = tmp_path / "home"
    user_data = tmp_path / "code-server" / "user-data"
    extensions = tmp_path / "code-server" / "extensions"
    (user_data / "User").mkdir(parents=True)
    extensions.mkdir(parents=True)
    port = _free_port()
    (tmp_path / "code-server" / "config.yaml").write_text(f"bind-addr: 127.0.0.1:{port}\nauth: none\ncert: false\n")
    (user_data / "User" / "settings.json").write_text(json.dumps({
        "chat.disableAIFeatures": True,
        "totem.path": _totem(),
        "totem.autoSave": True,
        "workbench.startupEditor": "none",
        "workbench.tips.enabled": False,
        "workbench.welcomePage.walkthroughs.openOnInstall": False,
        "extensions.autoCheckUpdates": False,
        "extensions.autoUpdate": False,
        "extensions.ignoreRecommendations": True,
        "update.mode": "none",
        "telemetry.telemetryLevel": "off",
        "files.autoSave": "off",
        "git.enabled": False,
        "diffEditor.useInlineViewWhenSpaceIsLimited": False,
        "workbench.secondarySideBar.defaultVisibility": "hidden",
        "remote.autoForwardPorts": False,
    }, indent=2))

    with ModelServer() as model:
        (home / "config" / "totem").mkdir(parents=True)
        (home / "config" / "totem" / "config.toml").write_text(
            # The host's network in the sandbox: the test reaches a job's server from outside it. A
            # Total.js project: no Forge start.
            'model = "sim/test-model"\nretry_max_wait = 1.0\nsandbox_network = true\nforge = false\n\n'
            f'[providers.sim]\nkind = "openai"\nbase_url = "{model.base_url}"\n\n'
            # A window far above what the test's requests take (no compaction): the ring has a share.
            # It sees images, for the one pasted into the chat.
            '[models."sim/test-model"]\ncontext_window = 200000\nvision = true\n\n'
            # A hook "Totem: Show Hooks" lists; the scenario calls no fetch, so it never runs.
            '[[hooks.PostToolUse]]\nmatcher = "fetch"\ncommand = "true"\n'
        )
        # A URL MCP server, off (no turn starts it): "Log in to MCP server" offers it.
        (home / "config" / "totem" / "mcp.json").write_text(json.dumps(
            {"servers": {"docs": {"url": "http://127.0.0.1:9/mcp", "enabled": False}}}
        ))
        (project / "config").mkdir()
        (project / REVIEW_FILE).write_text(REVIEW_ORIGINAL)
        model.enqueue(tool_reply(
            [("edit", {"path": FILE, "old_string": OLD, "new_string": NEW})],
            text=FIRST,
        ))
        model.enqueue(text_reply(ANSWER, reasoning="The user accepted the edit.", pieces=6))
        model.enqueue(tool_reply([("task", {"agent": "explore", "prompt": "Find where the greeting is built", "description": "find the greeting"})]))
        model.enqueue(text_reply(SUB_ANSWER, pieces=4))
        model.enqueue(text_reply(PARENT_ANSWER, pieces=3))
        model.enqueue(text_reply(FIXED, pieces=2))
        # The rough edges: a slow long answer, two commands, a two-file patch, a 401 and its retry.
        slow = text_reply(LONG_ANSWER, reasoning=REASONING, pieces=80)
        slow.delay = 0.05
        model.enqueue(slow)
        asking = tool_reply([("bash", {"command": BASH_OK})], text=BASH_SAYS)
        asking.delay = 0.5
        model.enqueue(asking)
        model.enqueue(tool_reply([("bash", {"command": BASH_FAIL})]))
        model.enqueue(text_reply(BASH_ANSWER))
        model.enqueue(tool_reply([("patch", {"patch": TWO_FILES})]))
        model.enqueue(text_reply(PATCH_ANSWER))
        model.enqueue(Reply(status=401, body=json.dumps({"error": {"message": "Incorrect API key provided"}})))
        model.enqueue(text_reply(RETRIED))
        job_port = _free_port()
        job_command = f"python3 -m http.server {job_port} --bind 127.0.0.1"
        model.enqueue(tool_reply([("job", {"action": "start", "command": job_command})]))
        model.enqueue(text_reply(JOB_ANSWER))
        model.enqueue(tool_reply([("bash", {"command": STOP_COMMAND})]))
        fwd_port = _free_port()
        fwd_command = f"python3 -m http.server {fwd_port} --bind 127.0.0.1"
        model.enqueue(tool_reply([("job", {"action": "start", "command": fwd_command})]))
        model.enqueue(text_reply(FWD_ANSWER))
        model.enqueue(tool_reply([("write", {"path": REVIEW_FILE, "content": REVIEW_PROPOSED})], text=REVIEW_FIRST))
        model.enqueue(text_reply(REVIEW_ANSWER))
        model.enqueue(text_reply(REVIEW_SECOND))
        model.enqueue(text_reply(STILL_ANSWER))
        # Issue 37: a held answer while two messages are queued, the edited one's answer, then a
        # held answer stopped with a message queued.
        model.enqueue(_held(Q_WORKING, 12), text_reply(Q_SECOND_ANSWER), _held(Q_SLOW, 60))

        node_bin = str(Path(tools["NODE"]).parent)
        env = dict(
            os.environ,
            PATH=f"{node_bin}:{os.environ.get('PATH', '')}",
            HOME=str(home),
            XDG_CONFIG_HOME=str(home / "config"),
            XDG_DATA_HOME=str(home / "data"),
            XDG_CACHE_HOME=str(home / "cache"),
        )
        common = [
            "--user-data-dir", str(user_data),
            "--extensions-dir", str(extensions),
            "--config", str(tmp_path / "code-server" / "config.yaml"),
        ]
        install = subprocess.run(
            [tools["CODE_SERVER"], *common, "--install-extension", tools["VSIX"]],
            env=env, capture_output=True, text=True, timeout=120,
        )
        assert install.returncode == 0, install.stdout + install.stderr
        assert any(p.name.startswith("totem.totem-") for p in extensions.iterdir()), install.stdout

        log = ARTIFACTS / "code-server.log"
        with log.open("w") as out:
            server = subprocess.Popen(
                [tools["CODE_SERVER"], *common,
                 "--auth", "none", "--disable-telemetry", "--disable-update-check",
                 "--disable-workspace-trust", "--reconnection-grace-time", "5",
                 "--bind-addr", f"127.0.0.1:{port}", str(project)],
                env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            )
        try:
            _wait_http(f"http://127.0.0.1:{port}/healthz", server, log)
            docs_image = DOCS_IMAGE if (os.environ.get("TOTEM_DOCS_SCREENSHOTS") or not DOCS_IMAGE.exists()) else None
            docs_dir = DOCS_IMAGE.parent if os.environ.get("TOTEM_DOCS_SCREENSHOTS") else None
            if docs_image:
                docs_image.parent.mkdir(parents=True, exist_ok=True)
            args = {
                "url": f"http://127.0.0.1:{port}/?folder={project}",
                "file": FILE,
                "question": QUESTION,
                "answer": ANSWER,
                "finding": FINDING,
                "chromium": tools["CHROMIUM"],
                "artifacts": str(ARTIFACTS),
                "docsImage": str(docs_image) if docs_image else None,
                "subAgent": {"question": WHERE, "answer": PARENT_ANSWER},
                "command": {"args": "the login bug", "answer": FIXED},
                "agent": "reviewer",
                "hook": "PostToolUse [fetch]",
                "docsDir": str(docs_dir) if docs_dir else None,
                "rough": {
                    "long": {"question": LONG_Q, "firstParagraph": FIRST_PARAGRAPH, "last": LONG_LAST},
                    "bash": {"question": BASH_Q, "says": BASH_SAYS, "answer": BASH_ANSWER},
                    "patch": {"question": PATCH_Q, "feedback": FEEDBACK, "answer": PATCH_ANSWER},
                    "auth": {"question": AUTH_Q, "answer": RETRIED},
                    "typedModel": TYPED_MODEL,
                },
                "failedCommandImage": str(FAILED_IMAGE) if (os.environ.get("TOTEM_DOCS_SCREENSHOTS") or not FAILED_IMAGE.exists()) else None,
                "job": {
                    "question": JOB_Q, "answer": JOB_ANSWER, "command": job_command, "url": f"http://127.0.0.1:{job_port}/",
                    "stop": {"question": STOP_Q, "command": STOP_COMMAND},
                    "forward": {
                        "question": FWD_Q, "answer": FWD_ANSWER, "command": fwd_command, "url": f"http://127.0.0.1:{fwd_port}/",
                        "label": FORWARD.label, "settings": str(user_data / "User" / "settings.json"),
                    },
                },
                "review": {
                    "file": REVIEW_FILE, "path": str(project / REVIEW_FILE), "original": REVIEW_ORIGINAL,
                    "typed": REVIEW_TYPED, "rest": REVIEW_REST, "answer": REVIEW_ANSWER, "second": REVIEW_SECOND,
                    "still": STILL_Q, "stillAnswer": STILL_ANSWER, "image": base64.b64encode(SQUARE).decode(),
                    "config": str(home / "config" / "totem" / "config.toml"), "addedModel": "sim2/test-model",
                    "addedProvider": f'\n[providers.sim2]\nkind = "openai"\nbase_url = "{model.base_url}"\n',
                },
                "queue": {
                    "first": Q_FIRST, "working": Q_WORKING, "second": Q_SECOND, "drop": Q_DROP, "edited": Q_EDITED,
                    "secondAnswer": Q_SECOND_ANSWER, "third": Q_THIRD, "slow": Q_SLOW, "never": Q_NEVER,
                    "model": "sim/test-model", "unknownVision": "sim2/test-model",
                },
                "pgid": server.pid,
            }
            drive = subprocess.run(
                [tools["NODE"], str(ROOT / "tests" / "editors" / "vscode" / "drive.mjs"), json.dumps(args)],
                env=dict(env, HOME=os.environ.get("HOME", str(home))),
                capture_output=True, text=True, timeout=720,
            )
            (ARTIFACTS / "vscode-drive.log").write_text(drive.stderr)
            assert drive.returncode == 0, drive.stderr[-3000:]
            seen = json.loads(drive.stdout.strip().splitlines()[-1])
            (ARTIFACTS / "vscode-seen.json").write_text(json.dumps(seen, indent=2))
            assert seen["ok"], f"{seen.get('error')}\nsteps: {seen['steps']}\nsee {ARTIFACTS}/vscode-failure.png"
            # Stopped from the list while VS Code still runs: nothing of the job is left.
            assert not processes_with(job_command) and not processes_with(fwd_command)
        finally:
            _kill_group(server)

        _assert_queue(seen, model)
        # The diff editor showed the file against Totem's proposal.
        assert "Totem's proposal" in seen["diffTab"]
        assert "this.plain('Hello ' + name);" in seen["diffText"]
        assert "this.plain('Hello ' + name);" not in seen["diffModified"]
        assert "const greeting = 'Hello there, ';" in seen["diffModified"]
        assert "this.plain(greeting + name + '!');" in seen["diffModified"]
        assert seen["diffClosed"], "the diff editor stayed open after Accept"
        # No toast asks to turn on diffEditor.codeLens: each hunk is labelled without it (the edit
        # adds a line, then changes one two lines further).
        assert not any("codeLens" in t for t in seen["toasts"]), seen["toasts"]
        assert [m.split(" · ")[0] for m in seen["firstMarks"]] == ["Hunk 1 of 2", "Hunk 2 of 2"], seen["firstMarks"]
        assert all(m.endswith("hover: Take or Leave") for m in seen["firstMarks"]), seen["firstMarks"]
        # The chat view: the question, the streamed first text, the tool line, the final answer, the model.
        chat = seen["chat"]
        tool_line = f"▸ Edit {FILE}"
        assert QUESTION in chat
        assert FIRST in chat
        assert tool_line in chat
        assert "ok: " in chat
        assert ANSWER in chat
        assert "— sim/test-model" in chat
        assert chat.index(FIRST) < chat.index(tool_line) < chat.index(ANSWER)
        assert seen["reasoningCollapsed"] is True
        assert seen["chatTitle"] == QUESTION
        assert "sim/test-model · idle" in seen["statusAfter"]
        # The edit was applied in the editor and saved (totem.autoSave): the disk holds exactly it.
        assert (project / FILE).read_text() == EDITED
        # The convention finding on the `const` the edit added, in the Problems view, source totem:
        # the row reads "<message> totem TJS010 [Ln 6, Col 2]" (source, code, position), its
        # accessible label "Warning: <message> at line 6 and character 2. generated by totem".
        line = EDITED.splitlines().index("\tconst greeting = 'Hello there, ';") + 1
        problem, label = seen["problem"], seen["problemLabel"]
        assert "instead of `const` inside functions" in problem, problem
        assert f"totem TJS010 [Ln {line}, Col 2]" in problem, problem
        assert label.startswith("Warning:") and label.endswith("generated by totem"), label
        assert "api.js" in seen["problems"]
        assert (ARTIFACTS / "vscode-chat.png").stat().st_size > 10_000

        # The sub-agent's thread: a collapsed block above the answer; its text only in it.
        block = seen["agentBlock"]
        assert block["open"] is False
        assert block["summary"] == "explore on sim/test-model", block
        assert SUB_ANSWER in block["text"]
        assert any(PARENT_ANSWER in a for a in seen["answers"]), seen["answers"]
        assert not any(SUB_ANSWER in a for a in seen["answers"]), seen["answers"]
        assert seen["blockBeforeAnswer"] is True
        subagent_request = next(r for r in model.requests if sent_messages(r)[-1]["content"] == "Find where the greeting is built")
        assert not any(QUESTION in str(m.get("content")) for m in subagent_request["messages"])
        # The slash commands: chips above the box, completion as "/" is typed, the expansion sent.
        assert {"/fix", "/init", "/undo"} <= set(seen["chips"]), seen["chips"]
        assert seen["afterChip"] == "/fix "
        assert seen["completions"] and seen["completions"][0].startswith("/fix") and "Fix a bug" in seen["completions"][0], seen["completions"]
        assert seen["afterTab"] == "/fix "
        assert any(str(sent_messages(r)[-1]["content"]).endswith("Find and fix the login bug.") for r in model.requests)
        assert "/fix the login bug" in seen["chatAfterCommand"] and FIXED in seen["chatAfterCommand"]
        # The agents panel lists the project's agent with its source, and opened its file.
        assert any(a.startswith("reviewer, project, Reviews a change") for a in seen["agents"]), seen["agents"]
        assert any(a.startswith("explore, built-in") for a in seen["agents"]), seen["agents"]
        assert "reviewer.md" in seen["agentTab"], seen["agentTab"]
        # "Show Hooks" lists the user's hook with its file (~: the home directory) and opened it.
        assert seen["hooks"] == ["PostToolUse [fetch], true, ~/config/totem/config.toml · active"], seen["hooks"]
        assert "config.toml" in seen["hookTab"], seen["hookTab"]
        _assert_rough_edges(seen, project, model)
        _assert_background_job(seen, job_command)
        _assert_forwarded_job(seen, fwd_command, fwd_port)
        _assert_review(seen, project, model)
        _assert_forks(seen, project, env)
        assert model.pending == 0


def _assert_review(seen: dict, project: Path, model: ModelServer) -> None:
    """Issue 21 in VS Code, as the user saw it."""
    r = seen["review"]
    # "@config/sett" completed to the file, a chip in the box and on the sent message; the model got the file.
    assert any(c.startswith(REVIEW_FILE) for c in r["completions"]), r["completions"]
    assert r["afterTab"] == f"Tidy @{REVIEW_FILE} ", r["afterTab"]
    assert r["inputChips"] == [f"@{REVIEW_FILE}"], r["inputChips"]
    assert r["userChips"] == [f"@{REVIEW_FILE}"], r["userChips"]
    # The pasted image: a chip before sending, drawn in the sent message, in the model's request.
    assert r["attachVisible"] and len(r["attachmentChips"]) == 1 and r["attachmentChips"][0].startswith("square.png"), r
    # The config's [models] entry says the model sees images: not "(vision unknown)".
    assert r["attachLabel"] == "Image…", r["attachLabel"]

    assert r["userImages"] == [["square.png", 48]], r["userImages"]
    assert r["attachmentsAfterSend"] == 0
    mention = next(q for q in model.requests if f"Tidy @{REVIEW_FILE} please" in json.dumps(q["messages"][-1]))
    assert f'<context file=\\"{REVIEW_FILE}\\">' in json.dumps(mention["messages"][-1]), mention["messages"][-1]
    assert base64.b64encode(SQUARE).decode() in json.dumps(mention["messages"][-1]) and "image_url" in json.dumps(mention["messages"][-1])
    # The two-hunk review: a label a hunk (no setting needed); one left from its hover, one taken
    # from the title bar; the file holds exactly the taken hunk.
    assert sum("Hunk 1 of 2" in m for m in r["lenses"]) == 1 and sum("Hunk 2 of 2" in m for m in r["lenses"]) == 1, r["lenses"]
    assert "Take" in r["hover"] and "Leave" in r["hover"], r["hover"]
    assert len(r["lensesAfter"]) == 1 and r["lensesAfter"][0].startswith("Hunk 1 of 1 · taken"), r["lensesAfter"]
    assert r["reviewBefore"] == f"{REVIEW_FILE}: keeps all 2 hunks", r["reviewBefore"]
    assert r["reviewAfter"] == f"{REVIEW_FILE}: keeps 1 of 2 hunks", r["reviewAfter"]
    assert r["disk"] == REVIEW_TAKEN
    assert r["diffTabsAfter"] == 0
    # The chat says what was taken; the model was told what the user changed of its proposal.
    assert r["toolReview"] == [f"You took 1 of 2 hunks of {REVIEW_FILE}"], r["toolReview"]
    assert any("-exports.cache = false;" in json.dumps(q["messages"]) for q in model.requests)
    # The context ring: used of the window, from the context event.
    assert r["ring"]["label"].endswith("%") and "of 200,000 tokens" in r["ring"]["title"], r["ring"]
    # Regenerate shows a second variant; switching back shows the first, review line and all.
    assert any(REVIEW_SECOND in a for a in r["secondAnswers"]) and not any(REVIEW_ANSWER in a for a in r["secondAnswers"]), r["secondAnswers"]
    assert any(REVIEW_ANSWER in a for a in r["firstAnswers"]) and not any(REVIEW_SECOND in a for a in r["firstAnswers"]), r["firstAnswers"]
    assert r["firstReview"] == r["toolReview"]
    # Tabs: one a chat; the mode picked for this session stays with it.
    assert len(r["tabs"]) >= 3 and any(QUESTION in t for t in r["tabs"]), r["tabs"]
    assert r["firstTabTitle"] == QUESTION
    assert r["modeAfter"] == "plan"
    # The killed server came back and the chat reopened its session, which answers again.
    assert r["lspProcesses"] == 1
    # The provider added to the config before the restart: its model is in the dropdown after it.
    assert "sim2/test-model" not in r["modelsBeforeRestart"] and "sim2/test-model" in r["modelsAfterRestart"], r["modelsAfterRestart"]
    assert "restarted" in r["afterRestart"] and REVIEW_ANSWER in r["afterRestart"], r["afterRestart"]
    # Rewound with the files: the file as it was, the message back in the box.
    assert r["diskAfterRewind"] == REVIEW_ORIGINAL
    assert r["inputAfterRewind"] == f"Tidy @{REVIEW_FILE} please"
    # Back before the first message, the session has no title: not in the header, the tab or the list.
    assert r["titleAfterRewind"] != f"Tidy @{REVIEW_FILE} please" and "Tidy" not in r["tabAfterRewind"], r
    current = [row for row in r["sessionRowsAfterRewind"] if "current" in row]
    assert len(current) == 1 and "(untitled)" in current[0] and "Tidy" not in current[0], r["sessionRowsAfterRewind"]
    for name in ("vscode-review.png", "vscode-review-left.png", "vscode-variants.png", "vscode-mention.png", "vscode-tabs.png"):
        assert (ARTIFACTS / name).stat().st_size > 10_000, name


def _stored(project: Path, env: dict) -> dict[str, dict]:
    """The project's sessions as the store holds them (``totem sessions export``), by id."""
    def totem(*args: str) -> str:
        run = subprocess.run([_totem(), "sessions", *args], env=env, capture_output=True, text=True, timeout=60)
        assert run.returncode == 0, run.stderr
        return run.stdout
    ids = [line.split("\t")[0] for line in totem("list", "--cwd", str(project)).splitlines() if line]
    return {i: json.loads(totem("export", i)) for i in ids}


def _branch(export: dict, last: str) -> list[dict]:
    """The messages of ``export`` on the branch that ends at ``last``, oldest first."""
    by_id = {m["id"]: m for m in export["messages"]}
    branch = []
    while last:
        branch.append(by_id[last])
        last = by_id[last]["parentId"]
    return branch[::-1]


def _content(messages: list[dict]) -> list:
    return [(m["role"], [(p["type"], (p["data"] or {}).get("text")) for p in m["parts"]]) for m in messages]


Q_FIRST, Q_WORKING = "Count the routes", "Counting the routes now."
Q_SECOND, Q_EDITED, Q_DROP = "Then list them", "Then list them by method", "Forget this one"
Q_SECOND_ANSWER = "GET /api/hello/ is the only route."
Q_THIRD, Q_SLOW, Q_NEVER = "Read every file", "Reading every file slowly.", "Never send this"


def _held(text: str, seconds: float) -> Reply:
    """An answer whose stream stays open ``seconds`` after its first (and only) words."""
    reply = text_reply(text, pieces=1)
    reply.events, reply.hold = reply.events[:2], seconds
    return reply


def _assert_queue(seen: dict, model: ModelServer) -> None:
    """Issue 37: while a turn runs, Send is Queue and a sent message waits under the chat (not a
    request, the box emptied); Remove drops one, Edit changes one (an input box with its text);
    when the turn ends the edited one is the next request. Stop with one queued asks; Drop drops it.
    Before that, in its new chat: a model of unknown vision picked, the attach button says so."""
    q = seen["queue"]
    assert q["sendLabel"] == "Queue", q
    # Picked in the dropdown, a model of which neither its [models] entry nor its provider says
    # whether it sees images: the attach button says so; back on sim/test-model (vision = true) not.
    assert q["attachUnknown"] == {"label": "Image… (vision unknown)", "visible": True}, q["attachUnknown"]
    assert q["attachBack"] == "Image…", q["attachBack"]
    assert q["queued"] == [Q_SECOND, Q_DROP] and q["inputAfterQueue"] == "" and q["usersWhileQueued"] == 1, q
    assert q["editValue"] == Q_SECOND and q["afterEdit"] == [Q_EDITED], q
    assert len(q["users"]) == 2 and Q_EDITED in q["users"][1] and q["queueAfter"] == 0, q
    assert "Drop the 1 queued message?" in q["stopDialog"], q["stopDialog"]
    assert q["queueAfterStop"] == 0 and not any(Q_NEVER in u for u in q["usersAfterStop"]), q
    texts = [json.dumps(r["messages"]) for r in model.requests]
    asked = [t for t in texts if Q_EDITED in t]
    assert asked and sent_messages(next(r for r in model.requests if Q_EDITED in json.dumps(r["messages"])))[-1]["content"].endswith(Q_EDITED)
    assert not any(Q_DROP in t or Q_NEVER in t for t in texts)
    assert (ARTIFACTS / "vscode-queued.png").stat().st_size > 10_000


def _assert_forks(seen: dict, project: Path, env: dict) -> None:
    """Fork on the mention's message: a new session holding that request and its whole answer
    (the answer shown, not the other variant, nor what followed), shown in a tab of its own;
    "Totem: Fork Session": the conversation as it stood. The original keeps its messages."""
    r = seen["review"]
    assert all("Fork" in a and "Rewind" in a for a in r["forkButtons"]) and len(r["forkButtons"]) == 2, r["forkButtons"]
    before, fork, whole = r["beforeFork"], r["fork"], r["forkWhole"]
    assert fork["current"] == before["tabs"] and whole["current"] == before["tabs"] + 1, (before, fork, whole)
    assert fork["inStrip"], "the fork's tab is not scrolled into the tab strip"
    assert [u["text"] for u in fork["users"]] == [before["users"][0]["text"]], fork["users"]
    assert any(REVIEW_ANSWER in a for a in fork["answers"]) and not any(STILL_ANSWER in a or REVIEW_SECOND in a for a in fork["answers"]), fork
    assert "a fork of" in fork["status"] and "up to that message" in fork["status"], fork["status"]
    assert [u["text"] for u in whole["users"]] == [u["text"] for u in before["users"]], whole["users"]

    sessions = _stored(project, env)
    holding = {m["id"]: sid for sid, e in sessions.items() for m in e["messages"]}
    original_id = holding[before["users"][0]["id"]]
    forked_id, whole_id = holding[fork["users"][0]["id"]], holding[whole["users"][0]["id"]]
    assert len({original_id, forked_id, whole_id}) == 3
    original, forked, copied = sessions[original_id], sessions[forked_id], sessions[whole_id]
    assert fork["status"].endswith(f"({original_id})"), fork["status"]
    # The fork: copies of the original's branch up to the end of the first exchange.
    assert forked["session"]["parentId"] == original_id
    at = forked["session"]["forkedFromMessage"]
    kept = _branch(original, at)
    assert kept[0]["id"] == before["users"][0]["id"] and [m["role"] for m in kept].count("user") == 1, kept
    assert REVIEW_ANSWER in json.dumps(kept[-1]) and REVIEW_SECOND not in json.dumps(kept), kept[-1]
    after = [m for m in original["messages"] if m["parentId"] == at and m["role"] == "user"]
    assert after and STILL_Q in json.dumps(after[0]), "the fork did not end where the next request starts"
    assert _content(forked["messages"]) == _content(kept)
    assert not {m["id"] for m in forked["messages"]} & {m["id"] for m in original["messages"]}
    # The palette's fork: the whole conversation as it stood (the rewind came after).
    assert copied["session"]["parentId"] == original_id
    assert STILL_ANSWER in json.dumps(copied["messages"][-1]), copied["messages"][-1]
    assert _content(copied["messages"]) == _content(_branch(original, copied["session"]["forkedFromMessage"]))
    assert (ARTIFACTS / "vscode-fork.png").stat().st_size > 10_000


def _assert_background_job(seen: dict, command: str) -> None:
    """Issue 19: the chat view lists a job the model started; its Stop ends it."""
    job = seen["job"]
    assert f"Command: {command}" in job["modal"], job["modal"]  # started like bash: asked first
    assert job["running"] == {"id": "job1", "command": command, "state": "running", "exit": 0, "button": "Stop"}, job
    assert job["status"] == 200 and job["processesWhileRunning"] >= 1, job
    assert job["title"] == ["Jobs (1 running)", "Jobs"], job["title"]
    assert job["stopped"] == {"state": "stopped", "exit": "exit code -15", "button": "Dismiss"}, job
    assert job["processesAfterStop"] == 0 and job["statusAfterStop"] == 0, job
    assert job["jobsAfterDismiss"] == {"rows": 0, "shown": False}, job
    # Issue 37: the chat's session tools listed; a 128K window offers every built-in tool, job included.
    tools = seen["tools"]
    assert tools["title"].startswith("Tools of sim/test-model (build mode"), tools
    assert tools["placeholder"] == "Every built-in tool", tools
    names = [row.split(",", 1)[0].strip() for row in tools["rows"]]
    assert {"bash", "job", "read", "write", "fetch"} <= set(names), tools["rows"]
    assert not any("Narrowed" in row for row in tools["rows"]), tools["rows"]
    # Stopped as it ran: a failure, and `interrupted` said once.
    assert job["stopCard"]["title"].count("interrupted") == 1 and "failed" in job["stopCard"]["cls"], job["stopCard"]
    assert (ARTIFACTS / "vscode-jobs.png").stat().st_size > 10_000


def _assert_forwarded_job(seen: dict, command: str, port: int) -> None:
    """Issue 37: with the sandbox's network off the job's question offers the loopback forward
    after "Allow once"; that answer starts it, its row names the port, and the server answers on
    this machine's 127.0.0.1 while it runs."""
    fwd = seen["forward"]
    assert f"Command: {command}" in fwd["modal"], fwd["modal"]
    # The dialog lays its buttons out last to first, with Cancel beside the first.
    buttons = [b.strip() for b in reversed(fwd["buttons"]) if b.strip() != "Cancel"]
    assert buttons[:3] == ["Allow once", FORWARD.label, "Allow always (bash python3)"], fwd["buttons"]
    assert f"ports forwarded to 127.0.0.1: {port}" in fwd["network"], fwd["network"]
    assert fwd["state"] == "running" and fwd["status"] == 200, fwd
    assert fwd["stopped"] == "stopped" and fwd["statusAfterStop"] == 0, fwd


def _assert_rough_edges(seen: dict, project: Path, model: ModelServer) -> None:
    """What issue 25 asked of the VS Code chat, as the user saw it."""
    r = seen["rough"]
    # Before the first turn the status bar names the model, not "default model".
    assert "sim/test-model · idle" in seen["statusBefore"], seen["statusBefore"]
    # "New Chat" from the palette revealed the (closed) chat view, empty.
    assert r["newChatVisible"] and r["newChatEmpty"] and r["newChatTitle"] == "New chat", r
    # During the turn: the header shows the session's title; "answering" while text streams.
    assert r["titleDuringTurn"] == LONG_Q
    assert "answering" in " ".join(r["statesDuringTurn"]), r["statesDuringTurn"]
    assert not any(s.endswith("· thinking") for s in r["statesDuringTurn"]), r["statesDuringTurn"]
    # A selection made while the answer streamed survived the chunks that followed.
    assert r["selected"].strip() == FIRST_PARAGRAPH
    assert r["grewWhileSelected"], "the answer did not stream while the text was selected"
    assert r["selectedAfterChunks"] == r["selected"]
    # After a long answer the end is in view: the chat followed it.
    assert r["scrolledAfterLong"] > 500 and r["gapAfterLong"] < 24, r
    # Code blocks: highlighted, with a copy button; a wide table scrolls in its own box.
    assert r["highlighted"] >= 2 and r["copyLabel"] == "Copied" and r["copied"], r
    assert r["table"]["overflowX"] == "auto" and r["table"]["scrollWidth"] > r["table"]["clientWidth"], r["table"]
    assert r["messagesOverflow"] <= 1, r["messagesOverflow"]
    # The reasoning keeps its line breaks.
    assert r["reasoningBreaks"] >= 1 and "First I read the route.\nThen I read the handler." in r["reasoningText"], r
    # A message the user sends while scrolled up is scrolled to.
    assert r["gapAfterSend"] < 24, r["gapAfterSend"]
    # The bash permission: the command verbatim, its patterns as patterns, what "always" adds.
    modal = r["bashModal"]
    assert f"Command: {BASH_OK}" in modal, modal
    # Asked while the first chat was in front: the modal names the asking chat, which comes forward.
    assert r["titleWhenAsked"] == QUESTION, r["titleWhenAsked"]
    assert f'(asked in the chat "{LONG_Q}")' in modal, modal
    assert r["inFrontWhileAsking"]["title"] == LONG_Q and LONG_Q in r["inFrontWhileAsking"]["tab"], r["inFrontWhileAsking"]
    assert "Command patterns (as the rules see them): python3 -c print(42)" in modal and "Files:" not in modal, modal
    assert "adds the session rule: bash python3" in modal, modal
    assert "Allow always (bash python3)" in r["bashButtons"], r["bashButtons"]
    # Cancel answered nothing: the chat still asks, and "Show question" put the modal up again.
    assert r["afterCancel"] == {"panel": True, "showLabel": "Show question", "outputs": 0}, r["afterCancel"]
    assert r["bashModalAgain"] == modal
    assert r["chatAlways"] == "Always (bash python3)", r["chatAlways"]
    # The commands' output under their lines: folded when it worked, open when it failed.
    ok, failed = r["outputs"]
    assert ok["text"].strip() == "42" and ok["open"] is False and ok["visible"] is False, ok
    assert r["firstOutputVisibleAfterClick"].strip() == "42"
    assert "boom" in failed["text"] and "[exit code 3]" in failed["text"] and failed["open"] and failed["visible"], failed
    # Each card shows the command that ran; the one that exited 3 is drawn as a failure.
    # (no description from the model: the command is the card's title)
    assert ok["line"] == f"▸ $ {BASH_OK}" and failed["line"] == f"▸ $ {BASH_FAIL}", (ok, failed)
    assert ok["cls"] == "tool ok" and failed["cls"] == "tool ok failed", (ok, failed)
    assert r["gapAfterBash"] < 24, "the chat stopped following after the permission panel"
    # A two-file change: the panel lists both, Accept says it takes the whole change.
    assert "2 files in this change" in r["pendingFiles"], r["pendingFiles"]
    assert "notes/alpha.md" in r["pendingFiles"] and "notes/beta.md" in r["pendingFiles"], r["pendingFiles"]
    assert r["acceptLabel"] == "Accept all 2 files"
    # The diff tabs closed, "Show diff" opened both again.
    assert r["showDiffLabel"] == "Show diff" and r["diffTabsReopened"] == 2, r
    assert any("(1 of 2 files)" in t for t in r["diffTabs"]) and any("(2 of 2 files)" in t for t in r["diffTabs"]), r["diffTabs"]
    assert not (project / "notes").exists()
    # The rejection's feedback is in the transcript (and reached the model).
    assert r["feedbackShown"] == [f"Your feedback: {FEEDBACK}"], r["feedbackShown"]
    assert r["diffTabsAfter"] == 0
    assert any(FEEDBACK in json.dumps(req["messages"]) for req in model.requests)
    # A 401: which provider, which key, the command; Retry sent the message again.
    assert "AuthenticationError" in r["errorText"], r["errorText"]
    assert "providers.sim" in r["errorText"] and "totem auth set sim" in r["errorText"], r["errorText"]
    assert r["retryHidden"]
    assert r["gapAfterError"] < 24 and r["gapAfterRetry"] < 24, (r["gapAfterError"], r["gapAfterRetry"])
    # The reopened session renders as the live one: one footer per turn, the same text.
    # Retry took up the failed turn (totem/retry): no second copy of the message.
    assert len(r["liveFooters"]) == r["liveUsers"] == 4, r
    assert r["reopenedFooters"] == r["liveFooters"], (r["reopenedFooters"], r["liveFooters"])
    assert r["reopenedUsers"] == r["liveUsers"]
    assert FEEDBACK in r["reopenedText"] and "42" in r["reopenedText"]
    # The pickers mark the current session and model.
    current = [row for row in r["sessionRows"] if "current" in row]
    assert len(current) == 1 and LONG_Q in current[0], r["sessionRows"]
    assert "current" in r["modelRows"][0] and "sim/test-model" in r["modelRows"][0], r["modelRows"]
    # A model typed as provider/model is offered and taken (totem/setModel).
    assert r["typedRow"].startswith(TYPED_MODEL) and "typed" in r["typedRow"], r["typedRow"]
    assert f"{TYPED_MODEL} · idle" in r["statusTyped"] and r["dropdownTyped"] == TYPED_MODEL, r
    # "Log in to MCP server" offers the declared URL servers.
    assert [row.split(",")[0].split(" ")[0] for row in r["mcpRows"]] == ["docs"], r["mcpRows"]
