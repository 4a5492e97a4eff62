"""Policy.decide: defaults, deny > ask > allow, session answers, plan mode, compound calls."""

from __future__ import annotations

import fnmatch

import pytest
from hypothesis import given
from hypothesis import strategies as st

from totem_engine.api.events import RuleRef
from totem_engine.permissions import DEFAULTS, NOT_SECRET, SECRET_FILES, Policy, is_secret, matches, rules_from_config


def rule(permission: str, pattern: str, action: str, source: str = "config") -> RuleRef:
    return RuleRef(source=source, permission=permission, pattern=pattern, action=action)


def decide(policy: Policy, permission: str, *patterns: str, changes: bool = True):
    return policy.decide(permission, list(patterns), changes=changes)


# --- defaults -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "permission, expected",
    [("read", "allow"), ("edit", "ask"), ("bash", "ask"), ("fetch", "ask"), ("never-heard-of-it", "ask")],
)
def test_defaults(permission: str, expected: str):
    decision = decide(Policy(), permission, "src/a.py", changes=permission in ("edit", "bash"))
    assert decision.action == expected
    assert decision.rule.source == "default"
    assert decision.rule.permission == permission


def test_read_only_commands_run_without_asking_and_plan_mode_denies_the_rest():
    allowed = decide(Policy(), "bash", "git status", changes=False)
    assert allowed.action == "allow" and allowed.rule.pattern == "read-only command"
    assert decide(Policy(plan_mode=True), "bash", "git status", changes=False).action == "allow"
    denied = decide(Policy(plan_mode=True), "bash", "npm install", changes=True)
    assert denied.action == "deny" and denied.rule.source == "mode"


@pytest.mark.parametrize("path", [".env", "config/.env.local", "certs/server.pem", "keys/app.key", "id_rsa", "aws/credentials"])
def test_reading_secret_files_asks(path: str):
    decision = decide(Policy(), "read", path, changes=False)
    assert decision.action == "ask" and decision.rule.pattern == "secret file"


@pytest.mark.parametrize("path", [".env.example", "id_rsa.pub", "src/environment.py", "keyboard.txt"])
def test_ordinary_files_are_not_secret(path: str):
    assert decide(Policy(), "read", path, changes=False).action == "allow"


_NAME_PIECES = [".env", ".", "id_", "pem", "key", "credentials", "netrc", "example", "sample", "template", "pub", "a", "\n", "/", "PEM"]


@given(st.lists(st.sampled_from(_NAME_PIECES), max_size=6).map("".join))
def test_secret_names_are_those_the_globs_match(path: str):
    # is_secret joins the globs into one regex; each glob on its own, with fnmatchcase, says the same.
    name = path.rsplit("/", 1)[-1]
    expected = any(fnmatch.fnmatchcase(name, glob) for glob in SECRET_FILES) and not any(
        fnmatch.fnmatchcase(name, glob) for glob in NOT_SECRET
    )
    assert is_secret(path) == expected


def test_a_read_rule_lifts_the_secret_default():
    policy = Policy(rules=[rule("read", ".env", "allow")])
    assert decide(policy, "read", ".env", changes=False).action == "allow"


def test_unknown_permission_is_not_in_defaults_and_asks():
    assert "frobnicate" not in DEFAULTS
    assert decide(Policy(), "frobnicate", "x").action == "ask"


def test_no_patterns_still_decides():
    assert Policy().decide("read", [], changes=False).action == "allow"
    assert Policy().decide("edit", [], changes=True).action == "ask"


# --- configured rules -----------------------------------------------------------------------


@pytest.mark.parametrize("deny_first", [True, False])
def test_deny_beats_allow_regardless_of_order(deny_first: bool):
    allow = rule("edit", "*", "allow")
    deny = rule("edit", "secrets/*", "deny")
    policy = Policy(rules=[deny, allow] if deny_first else [allow, deny])
    decision = decide(policy, "edit", "secrets/key.pem")
    assert decision.action == "deny"
    assert decision.rule == deny
    assert decide(policy, "edit", "src/a.py").action == "allow"


@pytest.mark.parametrize("ask_first", [True, False])
def test_ask_beats_allow_regardless_of_order(ask_first: bool):
    allow = rule("bash", "*", "allow")
    ask = rule("bash", "git push", "ask")
    policy = Policy(rules=[ask, allow] if ask_first else [allow, ask])
    assert decide(policy, "bash", "git push origin main").action == "ask"
    assert decide(policy, "bash", "git status").action == "allow"


def test_configured_allow_overrides_default_ask():
    policy = Policy(rules=[rule("edit", "docs/*", "allow")])
    assert decide(policy, "edit", "docs/a.md").action == "allow"
    assert decide(policy, "edit", "src/a.py").action == "ask"  # default


def test_configured_deny_overrides_default_allow():
    policy = Policy(rules=[rule("read", ".env", "deny")])
    assert decide(policy, "read", ".env").action == "deny"
    assert decide(policy, "read", "README.md").action == "allow"


def test_rule_of_another_permission_does_not_apply():
    policy = Policy(rules=[rule("read", "*", "deny")])
    assert decide(policy, "edit", "a.py").action == "ask"


def test_wildcard_permission_rule_applies_to_every_family():
    policy = Policy(rules=[rule("*", "secrets/*", "deny")])
    assert decide(policy, "read", "secrets/x").action == "deny"
    assert decide(policy, "edit", "secrets/x").action == "deny"
    assert decide(policy, "read", "src/x").action == "allow"


# --- session answers ------------------------------------------------------------------------


def test_session_allow_always_overrides_configured_ask():
    policy = Policy(rules=[rule("edit", "*", "ask")])
    remembered = policy.remember("edit", "src/*", "allow")
    decision = decide(policy, "edit", "src/a.py")
    assert decision.action == "allow"
    assert decision.rule == remembered
    assert decision.rule.source == "session"
    assert decide(policy, "edit", "tests/a.py").action == "ask"


def test_session_allow_always_never_overrides_configured_deny():
    deny = rule("edit", "src/secret.py", "deny")
    policy = Policy(rules=[deny])
    policy.remember("edit", "src/*", "allow")
    decision = decide(policy, "edit", "src/secret.py")
    assert decision.action == "deny"
    assert decision.rule == deny
    assert decide(policy, "edit", "src/other.py").action == "allow"


def test_session_reject_always_overrides_configured_allow():
    policy = Policy(rules=[rule("bash", "*", "allow")])
    policy.remember("bash", "rm *", "deny")
    assert decide(policy, "bash", "rm -rf build").action == "deny"
    assert decide(policy, "bash", "ls").action == "allow"


def test_session_deny_beats_session_allow():
    policy = Policy()
    policy.remember("edit", "src/*", "deny")
    policy.remember("edit", "*", "allow")
    assert decide(policy, "edit", "src/a.py").action == "deny"
    assert decide(policy, "edit", "b.py").action == "allow"


def test_session_answer_is_per_permission():
    policy = Policy()
    policy.remember("edit", "*", "allow")
    assert decide(policy, "bash", "make").action == "ask"


# --- plan mode ------------------------------------------------------------------------------


def test_plan_mode_denies_file_changes_with_source_mode():
    policy = Policy(rules=[rule("edit", "*", "allow")], plan_mode=True)
    policy.remember("edit", "*", "allow")
    decision = decide(policy, "edit", "src/a.py", changes=True)
    assert decision.action == "deny"
    assert decision.rule.source == "mode"


def test_plan_mode_still_allows_reads():
    policy = Policy(plan_mode=True)
    assert decide(policy, "read", "src/a.py", changes=False).action == "allow"


def test_build_mode_does_not_deny_file_changes():
    assert decide(Policy(), "edit", "a.py", changes=True).action == "ask"


# --- several patterns -----------------------------------------------------------------------


def test_several_patterns_take_the_strictest():
    policy = Policy(rules=rules_from_config({"bash": {"git status": "allow", "ls": "allow", "rm *": "deny"}}, "config"))
    assert decide(policy, "bash", "git status", "ls -la").action == "allow"
    assert decide(policy, "bash", "git status", "make").action == "ask"
    denied = decide(policy, "bash", "git status", "rm -rf /", "make")
    assert denied.action == "deny"
    assert denied.rule.pattern == "rm *"


def test_strictest_does_not_depend_on_pattern_order():
    policy = Policy(rules=[rule("bash", "echo *", "allow"), rule("bash", "curl *", "deny")])
    assert decide(policy, "bash", "curl x", "echo y").action == "deny"
    assert decide(policy, "bash", "echo y", "curl x").action == "deny"


# --- rules_from_config ----------------------------------------------------------------------


def test_rules_from_config_short_form():
    rules = rules_from_config({"edit": "deny", "bash": "allow"}, "user")
    assert rules == [
        RuleRef(source="user", permission="edit", pattern="*", action="deny"),
        RuleRef(source="user", permission="bash", pattern="*", action="allow"),
    ]


def test_rules_from_config_pattern_table():
    rules = rules_from_config({"bash": {"npm test": "allow", "rm *": "deny"}}, "project")
    assert rules == [
        RuleRef(source="project", permission="bash", pattern="npm test", action="allow"),
        RuleRef(source="project", permission="bash", pattern="rm *", action="deny"),
    ]


def test_rules_from_config_mixed_forms_drive_decisions():
    policy = Policy(rules=rules_from_config({"read": "deny", "edit": {"docs/*": "allow"}}, "config"))
    assert decide(policy, "read", "a.py").action == "deny"
    assert decide(policy, "edit", "docs/x.md").action == "allow"
    assert decide(policy, "edit", "src/x.py").action == "ask"


# --- pattern matching -----------------------------------------------------------------------


def test_command_pattern_matches_the_command_with_more_arguments():
    assert matches("npm test", "npm test")
    assert matches("npm test", "npm test -- -k x")
    assert not matches("npm test", "npm testing")
    assert not matches("npm test", "npm")
    assert not matches("npm test", "xnpm test")


def test_command_prefix_rule_in_a_policy():
    policy = Policy(rules=rules_from_config({"bash": {"npm test": "allow"}}, "config"))
    assert decide(policy, "bash", "npm test -- -k x").action == "allow"
    assert decide(policy, "bash", "npm install").action == "ask"


def test_glob_patterns():
    assert matches("src/*", "src/a.py")
    assert matches("*.py", "a.py")
    assert not matches("src/*", "tests/a.py")
    assert not matches("*.py", "a.pyc")


def test_a_read_only_command_that_is_not_safe_asks():
    # "cat .env" only reads, but reads a secret: the command tool leaves it out of the safe set.
    decision = Policy().decide("bash", ["cat .env"], changes=False, safe=frozenset())
    assert decision.action == "ask"
    assert Policy().decide("bash", ["cat a.py"], changes=False, safe=frozenset({"cat a.py"})).action == "allow"


@pytest.mark.parametrize("path", [".totem/config.toml", ".git/hooks/post-checkout", ".git/config"])
def test_the_projects_own_config_and_git_always_ask_even_when_edits_are_allowed(path: str):
    policy = Policy(rules=rules_from_config({"edit": "allow"}, "user"))
    decision = decide(policy, "edit", path)
    assert decision.action == "ask" and decision.rule.source == "protected"
    assert decide(policy, "edit", "src/app.py").action == "allow"
    # A configured deny still denies, and the user's own "always" answer in the session still allows.
    assert decide(Policy(rules=rules_from_config({"edit": {path: "deny"}}, "user")), "edit", path).action == "deny"
    policy.remember("edit", path.rsplit("/", 1)[0] + "/*", "allow")
    assert decide(policy, "edit", path).action == "allow"


def test_a_broad_always_answer_does_not_reach_protected_folders():
    policy = Policy()
    policy.remember("edit", "*", "allow")  # "allow always" on a file at the project root
    assert decide(policy, "edit", "README.md").action == "allow"
    assert decide(policy, "edit", ".git/hooks/pre-commit").action == "ask"
    assert decide(policy, "edit", ".totem/config.toml").action == "ask"
