"""Secret files and credential variables kept from commands the user did not allow (issue 34,
holes 2 and 8), through the real ``totem run``: in the sandbox a command run unasked sees every
secret file of the project empty, whatever its arguments; outside it, a ``grep`` or ``diff`` that
can reach a folder asks; a variable that looks like a credential is not printed unasked, and
``command_env_pass`` lets one through."""

from __future__ import annotations

import json

import pytest

from tests.cli.test_sandbox import configured
from tests.support.model_server import text_reply, tool_reply

ENV_SECRET = "env-secret-4711"
KEY_SECRET = "key-secret-0815"


def secret_project(project) -> None:
    (project / "notes.txt").write_text("SECRET is a word in the notes\n")
    (project / ".env").write_text(f"SECRET={ENV_SECRET}\n")
    (project / "conf").mkdir()
    (project / "conf" / "server.key").write_text(f"SECRET {KEY_SECRET}\n")
    (project / "left").mkdir()
    (project / "right").mkdir()
    (project / "left" / ".env").write_text(f"SECRET={ENV_SECRET}-left\n")
    (project / "right" / ".env").write_text(f"SECRET={ENV_SECRET}-right\n")
    (project / "left" / "same.txt").write_text("same\n")
    (project / "right" / "same.txt").write_text("same\n")


def run_bash(totem, command: str, extra: tuple[str, ...] = ()):
    """One bash call; the run, the call's end and the permission said for it."""
    totem.server.enqueue(tool_reply([("bash", {"command": command})]))
    totem.server.enqueue(text_reply("Done."))
    result = totem.agent("look", extra=extra)
    # A question nobody could answer ends the run there (exit 3), the refusal its last event.
    assert result.code in (0, 3), result.stderr
    [end] = [e for e in result.of("toolEnd") if e["tool"] == "bash"]
    [permission] = [e for e in result.of("permission") if e["callId"] == end["callId"]]
    return result, end, permission


def sent_after_the_call(totem) -> str:
    """What the model was sent after the command ran: the request with its result, if any."""
    return json.dumps(totem.server.requests[1:])


UNASKED = {"source": "default", "permission": "bash", "pattern": "read-only command", "action": "allow"}


@pytest.mark.parametrize("command", ["grep -r SECRET .", "grep -d recurse SECRET .", "diff left right", "grep -rn SECRET conf"])
def test_a_read_only_command_run_unasked_in_the_sandbox_sees_secret_files_empty(totem, command):
    secret_project(totem.project)
    _, end, permission = run_bash(totem, command, extra=("--yes",))
    assert permission["rule"] == UNASKED  # it ran unasked: --yes answered no question
    sent = sent_after_the_call(totem)
    assert ENV_SECRET not in sent and KEY_SECRET not in sent, end["output"]
    if command.startswith("grep -r"):
        assert "SECRET is a word in the notes" in end["output"] or command.endswith("conf"), end["output"]
    assert (totem.project / ".env").read_text() == f"SECRET={ENV_SECRET}\n"  # the file itself is untouched
    assert end["changed"] == []


def test_a_command_the_user_allowed_sees_the_secret_file(totem):
    secret_project(totem.project)
    _, end, permission = run_bash(totem, "python3 -c \"print(open('.env').read())\"", extra=("--yes",))
    assert permission["rule"]["source"] == "answer"
    assert ENV_SECRET in end["output"]


def test_a_secret_file_made_during_the_session_is_hidden_too(totem):
    secret_project(totem.project)
    totem.server.enqueue(tool_reply([("bash", {"command": "mkdir -p later && echo SECRET=made-later-99 > later/.env"})]))
    totem.server.enqueue(tool_reply([("bash", {"command": "grep -r SECRET later"})]))
    totem.server.enqueue(text_reply("Done."))
    result = totem.agent("look", extra=("--yes",))
    assert result.code == 0, result.stderr
    made, searched = [e for e in result.of("toolEnd") if e["tool"] == "bash"]
    assert (totem.project / "later" / ".env").exists(), made["output"]
    # The request holds the first command's text, which names the value: the grep's result must not.
    assert "made-later-99" not in searched["output"] and "[exit code 1]" in searched["output"], searched["output"]


@pytest.mark.parametrize("command", ["grep -r SECRET .", "grep -d recurse SECRET .", "diff left right", "grep SECRET -R ."])
def test_outside_the_sandbox_a_command_that_can_reach_a_folder_asks(totem, command):
    configured(totem, 'sandbox = "never"')
    secret_project(totem.project)
    _, end, permission = run_bash(totem, command)  # no --yes, no terminal: a question is refused
    assert permission["decision"] == "reject" and end["status"] == "denied"
    sent = sent_after_the_call(totem)
    assert ENV_SECRET not in sent and KEY_SECRET not in sent


def test_outside_the_sandbox_a_file_named_runs_unasked(totem):
    configured(totem, 'sandbox = "never"')
    secret_project(totem.project)
    _, end, permission = run_bash(totem, "grep SECRET notes.txt left/same.txt")
    assert permission["rule"] == UNASKED
    assert "SECRET is a word in the notes" in end["output"]


CREDENTIALS = {
    "DATABASE_URL": "postgres://app:db-pass-1234@localhost/app",
    "PGPASS": "pg-pass-2345",
    "MYSQL_PWD": "mysql-pwd-3456",
    "GITHUB_PAT": "ghp_pat-4567",
    "SERVICE_DSN": "https://dsn-key-5678@sentry.example/1",
}


@pytest.mark.parametrize("sandbox", ["auto", "never"])
def test_credential_variables_are_not_printed_unasked(totem, monkeypatch, sandbox):
    configured(totem, f'sandbox = "{sandbox}"')
    for name, value in CREDENTIALS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("PLAIN_SETTING", "plain-value-6789")
    _, end, permission = run_bash(totem, "echo $PLAIN_SETTING; " + "; ".join(f"echo ${name}" for name in CREDENTIALS))
    assert permission["decision"] == "reject"
    sent = sent_after_the_call(totem)
    assert not [value for value in CREDENTIALS.values() if value in sent]


def test_command_env_pass_lets_a_credential_variable_through_unasked(totem, monkeypatch):
    for name, value in CREDENTIALS.items():
        monkeypatch.setenv(name, value)
    configured(totem, 'command_env_pass = ["GITHUB_PAT"]')
    _, end, permission = run_bash(totem, "echo $GITHUB_PAT")
    assert permission["rule"] == UNASKED
    assert CREDENTIALS["GITHUB_PAT"] in end["output"]
    _, end, permission = run_bash(totem, "echo $GITHUB_PAT $PGPASS")
    assert permission["decision"] == "reject"  # PGPASS is not passed: the command asks
