"""``totem run`` on the local model: a question answered from a file, and the README's main job
(an edit that makes the sample's failing test pass)."""

from __future__ import annotations

import re
import subprocess

from tests.local.conftest import TASK, run_log, sample_tests, save_log, totem_run


def test_a_question_is_answered_from_the_file_it_names(project, agent_env, model_id, request):
    result = totem_run(
        agent_env, project,
        "How many units of one item must an order have to get the bulk discount in pricing.py? Answer with the number.",
    )
    log = save_log(request, run_log(result))

    # The number is in no prompt and cannot be guessed: it came from pricing.py (the engine shows
    # a small model the files a request names, or the agent read it).
    assert result.code == 0, log
    end = result.of("turnEnd")[0]
    assert end["stopReason"] == "finished" and end["model"] == f"local/{model_id}", log
    assert "144" in end["text"], log


def test_a_question_is_answered_by_finding_the_file(project, agent_env, request):
    result = totem_run(
        agent_env, project,
        "From how many units of one item does this project give the bulk discount? Answer with the number.",
    )
    log = save_log(request, run_log(result))

    # No file is named: the agent has to find it. Totem shows a small model the files that share
    # the question's rarer words (mentions.py), or the model looks (read, grep, …); either way the
    # number, which cannot be guessed, came from pricing.py.
    assert result.code == 0, log
    end = result.of("turnEnd")[0]
    assert end["stopReason"] == "finished" and "144" in end["text"], log


def test_the_main_job_adds_the_missing_function_and_the_tests_pass(project, agent_env, request):
    before = (project / "test_inventory.py").read_text()
    assert "1 failed, 5 passed" in sample_tests(project).stdout  # the task is still to do

    result = totem_run(agent_env, project, TASK)
    checked = sample_tests(project)
    log = save_log(request, f"{run_log(result)}\n--- the sample's tests afterwards\n{checked.stdout}{checked.stderr}"
                            f"\n--- report.py afterwards\n{(project / 'report.py').read_text()}")

    # Done by the code, not by the test: the test file is as it was, and every test passes.
    assert (project / "test_inventory.py").read_text() == before, log
    assert checked.returncode == 0 and "6 passed" in checked.stdout, log
    assert result.code == 0 and result.of("turnEnd")[0]["stopReason"] == "finished", log


def test_init_writes_agents_md_with_the_test_command_it_found(project, agent_env, request):
    assert not (project / "AGENTS.md").exists()
    result = totem_run(agent_env, project, "/init")
    written = (project / "AGENTS.md").read_text() if (project / "AGENTS.md").exists() else "(no AGENTS.md)"
    log = save_log(request, f"{run_log(result)}\n--- AGENTS.md\n{written}")

    assert result.code == 0 and result.of("turnEnd")[0]["stopReason"] == "finished", log
    # A command the file names in backticks or a code block that runs the sample's tests: run it
    # here and see pytest collect the sample's six tests (one of them fails until the main job).
    commands = re.findall(r"`([^`\n]*pytest[^`\n]*)`", written) + re.findall(r"^\s*\$?\s*(\S*pytest.*)$", written, re.MULTILINE)
    assert commands, log
    ran = subprocess.run(
        commands[0].strip(), shell=True, cwd=project, capture_output=True, text=True, timeout=120, check=False,
        env=dict(agent_env),
    )
    assert "1 failed, 5 passed" in ran.stdout, f"{log}\n--- {commands[0]}\n{ran.stdout}{ran.stderr}"
