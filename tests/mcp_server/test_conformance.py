"""The official MCP conformance suite (npm ``@modelcontextprotocol/conformance``, installed with
the Node 24 it needs by scripts/setup-mcp-conformance.sh, cached under TOTEM_TEST_CACHE or
~/.cache/totem-test) against ``totem mcp serve --http`` on loopback, at every protocol revision
the suite has server scenarios for. Every check passes except the scenarios (or single checks)
listed with their reason in conformance_expected_failures.txt, features Totem does not offer; an
entry that passes fails the test too, so the list only shrinks.

The suite has no option for headers: conformance_bearer.mjs, preloaded into its Node, adds the
server's bearer token to every request it sends to the server under test.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.mcp_server.conftest import Served

HERE = Path(__file__).parent
ROOT = HERE.parent.parent
EXPECTED = HERE / "conformance_expected_failures.txt"
REVISIONS = ("2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28")
TOKEN = "conformance-token-" + "0123456789" * 3
RESULT_DIR = re.compile(r"^server-(?P<scenario>.+)-\d{4}-\d\d-\d\dT[\d-]+Z$")


@dataclass(frozen=True)
class Suite:
    node: str
    package: str

    def run(self, *args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [self.node, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=900, check=False,
        )

    def scenarios(self, revision: str, cwd: Path) -> set[str]:
        listed = self.run(f"{self.package}/dist/index.js", "list", "--server", "--spec-version", revision, cwd=cwd)
        assert listed.returncode == 0, listed.stderr
        return set(re.findall(r"^\s+- (\S+) \[", listed.stdout, re.MULTILINE))


@pytest.fixture(scope="module")
def suite() -> Suite:
    setup = subprocess.run(
        ["bash", str(ROOT / "scripts" / "setup-mcp-conformance.sh")], capture_output=True, text=True, timeout=900, check=False
    )
    assert setup.returncode == 0, f"scripts/setup-mcp-conformance.sh failed:\n{setup.stderr[-4000:]}"
    node, package = setup.stdout.strip().splitlines()[-2:]
    return Suite(node, package)


def expected_failures(listed: Path = EXPECTED) -> dict[str, str]:
    """``NAME`` (a scenario, or ``SCENARIO:CHECK``) -> the reason Totem fails it, as the file
    ``listed`` gives them (one a line, two spaces before the reason)."""
    entries = {}
    for line in listed.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, reason = line.partition("  ")
            assert reason.strip(), f"{listed.name}: {name} gives no reason"
            entries[name] = reason.strip()
    return entries


def outcomes(results: Path) -> dict[str, dict[str, bool]]:
    """scenario -> check id -> passed (a check that occurs more than once passes only if every
    occurrence does; a warning or a skip is not a failure)."""
    found: dict[str, dict[str, bool]] = {}
    for checks in results.glob("*/checks.json"):
        scenario = RESULT_DIR.match(checks.parent.name)
        assert scenario, checks.parent.name
        ran = found.setdefault(scenario["scenario"], {})
        for check in json.loads(checks.read_text()):
            ran[check["id"]] = ran.get(check["id"], True) and check["status"] != "FAILURE"
    return found


def judged(ran: dict[str, dict[str, bool]], expected: dict[str, str]) -> tuple[list[str], list[str]]:
    """The failures the list does not excuse, and the entries of the list that passed."""
    unexpected, stale = [], []
    for scenario, checks in sorted(ran.items()):
        failed = sorted(check for check, passed in checks.items() if not passed)
        if scenario in expected:
            if not failed:
                stale.append(scenario)
            continue
        unexpected += [f"{scenario}:{check}" for check in failed if f"{scenario}:{check}" not in expected]
        stale += [f"{scenario}:{check}" for check in checks if checks[check] and f"{scenario}:{check}" in expected]
    return unexpected, stale


@pytest.mark.parametrize("revision", REVISIONS)
def test_the_official_suite_passes_but_for_the_features_totem_does_not_offer(suite, served: Served, tmp_path, revision):
    config = served.serve_config()
    config.write_text(f'mcp_serve_token = "{TOKEN}"\n' + config.read_text())  # forge = false: served's config
    results = tmp_path / "results"
    with served.http(config=config) as server:
        env = dict(os.environ, CONFORMANCE_SUITE=suite.package, CONFORMANCE_URL=server.url, CONFORMANCE_TOKEN=TOKEN)
        run = suite.run(
            "--import", str(HERE / "conformance_bearer.mjs"), f"{suite.package}/dist/index.js", "server",
            "--url", server.url, "--suite", "all", "--spec-version", revision, "-o", str(results), cwd=tmp_path, env=env,
        )
        server.stop()
    ran = outcomes(results)
    # Every scenario of the revision ran (a run that reached none would pass vacuously).
    assert set(ran) == suite.scenarios(revision, tmp_path) and ran, run.stdout[-4000:] + run.stderr[-4000:]
    unexpected, stale = judged(ran, expected_failures())
    summary = "\n".join(line for line in run.stdout.splitlines() if line.startswith(("✓", "✗", "Total")))
    assert not unexpected, f"failed at {revision}: {unexpected}\n{summary}\n{run.stderr[-2000:]}"
    assert not stale, f"passes at {revision} now: remove from {EXPECTED.name}: {stale}"
    assert "Traceback" not in "".join(server.log), "".join(server.log)[-4000:]


def test_every_expected_failure_names_a_scenario_of_the_suite(suite, tmp_path):
    scenarios = set().union(*(suite.scenarios(revision, tmp_path) for revision in REVISIONS))
    named = {name.partition(":")[0] for name in expected_failures()}
    assert named <= scenarios, f"not scenarios of the suite: {sorted(named - scenarios)}"
