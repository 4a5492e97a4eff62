"""command_env.py: which variables look like credentials, and the environment of an unasked command;
secret_files.py: the project's secret files kept current; seccomp.py: the program per machine."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from totem_engine.command_env import command_environ, is_credential
from totem_engine.sandbox import seccomp
from totem_engine.sandbox.secret_files import SecretFiles


@pytest.mark.parametrize("name, value", [
    ("DATABASE_URL", "postgres://app:pw@db/app"), ("PGPASS", "x"), ("PGPASSWORD", "x"), ("MYSQL_PWD", "x"),
    ("GITHUB_PAT", "x"), ("OPENAI_API_KEY", "x"), ("AWS_SECRET_ACCESS_KEY", "x"), ("NPM_TOKEN", "x"),
    ("SSH_AUTH_SOCK", "/run/x"), ("SENTRY_DSN", "https://k@s/1"), ("ANYTHING", "redis://:pw@cache:6379"),
    ("GOOGLE_APPLICATION_CREDENTIALS", "/k.json"),
])
def test_credentials_are_recognised(name, value):
    assert is_credential(name, value)


@pytest.mark.parametrize("name, value", [
    ("PWD", "/p"), ("OLDPWD", "/q"), ("PATH", "/usr/bin"), ("HOME", "/home/u"), ("DATABASE_URL", "postgres://db/app"),
    ("KEYBOARD_LAYOUT", "us"), ("LANG", "C.UTF-8"), ("HTTP_PROXY", "http://proxy:3128"),
])
def test_plain_variables_are_not(name, value):
    assert not is_credential(name, value)


def test_an_unasked_command_goes_without_credentials_but_those_passed():
    base = {"PATH": "/bin", "GITHUB_PAT": "p", "PGPASS": "q"}
    assert command_environ(unasked=True, base=base) == {"PATH": "/bin"}
    assert command_environ(unasked=True, passed=["PGPASS"], base=base) == {"PATH": "/bin", "PGPASS": "q"}
    assert command_environ(unasked=False, base=base) == base


def test_secret_files_are_found_ignored_ones_too_and_kept_current(tmp_path):
    (tmp_path / ".gitignore").write_text(".env\nbuild/\n")
    (tmp_path / ".env").write_text("A=1\n")
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "server.key").write_text("k\n")
    (tmp_path / ".env.example").write_text("A=\n")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "id_x").write_text("not walked\n")
    found = SecretFiles(tmp_path)
    assert found.refresh() == [tmp_path / ".env", tmp_path / "build" / "server.key"]
    (tmp_path / "build" / "server.key").rename(tmp_path / "build" / "server.pem")
    (tmp_path / "new").mkdir()
    (tmp_path / "new" / "credentials").write_text("c\n")
    assert found.refresh() == [tmp_path / ".env", tmp_path / "build" / "server.pem", tmp_path / "new" / "credentials"]


def test_a_folder_not_changed_since_a_settled_listing_is_not_listed_again(tmp_path, monkeypatch):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / ".env").write_text("A=1\n")
    old = time.time() - 60
    for folder in (tmp_path, tmp_path / "sub"):
        os.utime(folder, (old, old))
    found = SecretFiles(tmp_path)
    found.refresh()
    listed = []
    monkeypatch.setattr(os, "scandir", lambda path: listed.append(path) or pytest.fail("listed again"))
    assert found.refresh() == [tmp_path / "sub" / ".env"]
    assert listed == []


def test_the_filter_exists_for_the_known_machines_only():
    assert len(seccomp.program("x86_64")) % 8 == 0 and seccomp.program("aarch64") != seccomp.program("x86_64")
    assert seccomp.program("mips") is None
    assert seccomp.loaded(["bwrap", "--x", "--", "sh"], None) == ["bwrap", "--x", "--", "sh"]
    assert seccomp.loaded(["bwrap", "--", "sh"], Path("/f")) == [
        "/bin/sh", "-c", f'exec "$@" {seccomp.FD}<"$0"', "/f", "bwrap", "--seccomp", str(seccomp.FD), "--", "sh"]
