"""The official MCP conformance suite's client scenarios against Totem's MCP client: the suite
starts a scenario's server and runs tests/support/conformance_client.py with its URL, which
connects through mcp/connection.py (the OAuth login of mcp/login.py when the server asks for
one, its "browser" approving at once), lists the tools and calls them. At every revision the
suite has client scenarios for, every check passes except those listed with their reason in
conformance_client_expected_failures.txt; an entry that passes fails the test too, so the list
only shrinks. The suite and its Node come from scripts/setup-mcp-conformance.sh (the ``suite``
fixture of test_conformance.py)."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest

from tests.mcp_server.test_conformance import expected_failures, judged, suite  # noqa: F401 - suite: the fixture

HERE = Path(__file__).parent
ROOT = HERE.parent.parent
EXPECTED = HERE / "conformance_client_expected_failures.txt"
REVISIONS = ("2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28")
STAMP = re.compile(r"-\d{4}-\d\d-\d\dT[\d-]+Z$")


def client_scenarios(suite, revision: str | None, cwd: Path) -> set[str]:
    listed = suite.run(f"{suite.package}/dist/index.js", "list", "--client", *(["--spec-version", revision] if revision else []), cwd=cwd)
    assert listed.returncode == 0, listed.stderr
    return set(re.findall(r"^\s+- (\S+) \[", listed.stdout, re.MULTILINE))


def outcomes(results: Path) -> dict[str, dict[str, bool]]:
    """scenario -> check id -> passed (every occurrence; a warning or a skip is no failure).
    A scenario's results are in ``results/SCENARIO-TIMESTAMP`` (``auth/...`` one level deeper)."""
    found: dict[str, dict[str, bool]] = {}
    for checks in results.glob("**/checks.json"):
        scenario = STAMP.sub("", checks.parent.relative_to(results).as_posix())
        ran = found.setdefault(scenario, {})
        for check in json.loads(checks.read_text()):
            ran[check["id"]] = ran.get(check["id"], True) and check["status"] != "FAILURE"
    return found


@pytest.mark.parametrize("revision", REVISIONS)
def test_totems_client_passes_the_official_client_scenarios_but_for_the_listed(suite, tmp_path, revision):  # noqa: F811
    results = tmp_path / "results"
    command = f"{sys.executable} {ROOT / 'tests' / 'support' / 'conformance_client.py'}"
    # Its own config folder: the logins the scenarios make are kept there, not in the user's.
    env = dict(os.environ, XDG_CONFIG_HOME=str(tmp_path / "config"), XDG_DATA_HOME=str(tmp_path / "data"))
    run = suite.run(
        f"{suite.package}/dist/index.js", "client", "--command", command, "--suite", "all", "--spec-version", revision,
        "-o", str(results), cwd=tmp_path, env=env,
    )
    ran = outcomes(results)
    assert set(ran) == client_scenarios(suite, revision, tmp_path) and ran, run.stdout[-4000:] + run.stderr[-4000:]
    unexpected, stale = judged(ran, expected_failures(EXPECTED))
    summary = "\n".join(line for line in run.stdout.splitlines() if line.startswith(("✓", "✗", "Total")))
    assert not unexpected, f"failed at {revision}: {unexpected}\n{summary}"
    assert not stale, f"passes at {revision} now: remove from {EXPECTED.name}: {stale}"
    logins = tmp_path / "config" / "totem" / "keys.json"
    if logins.exists():  # the tokens the auth scenarios issued were kept privately
        assert logins.stat().st_mode & 0o077 == 0


def test_every_expected_client_failure_names_a_client_scenario_of_the_suite(suite, tmp_path):  # noqa: F811
    scenarios = client_scenarios(suite, None, tmp_path)
    named = {name.partition(":")[0] for name in expected_failures(EXPECTED)}
    assert named <= scenarios, f"not client scenarios of the suite: {sorted(named - scenarios)}"
