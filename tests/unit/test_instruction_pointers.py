"""AGENTS.md and its pointers (seed 000): the files the root AGENTS.md names are loaded into the
system prompt once, from the project only, within a size limit, and the prompt says which were
loaded and which not, and why."""

from __future__ import annotations

import datetime
import re
from pathlib import Path

import pytest

from totem_engine.instruction_pointers import PER_FILE, SMALL_SHARE, TOTAL, pointers_in
from totem_engine.prompt import system_prompt

DAY = datetime.date(2024, 5, 6)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "CONVENTIONS.md").write_text("Name tables in the singular.\n")
    return root


def prompt_of(project: Path, agents: str, **options) -> str:
    (project / "AGENTS.md").write_text(agents)
    return system_prompt(project, "build", DAY, **options)


def note(text: str) -> str:
    found = re.search(r"<pointers>\n(.*?)\n</pointers>", text, re.DOTALL)
    assert found, text
    return found.group(1)


def test_a_pointer_in_words_in_a_link_and_in_backticks_is_followed_once(project: Path):
    (project / "docs" / "TESTING.md").write_text("Run the tests with make check.\n")
    (project / "STYLE.txt").write_text("Four spaces.\n")
    text = prompt_of(
        project,
        "See docs/CONVENTIONS.md before you start.\nThe [testing guide](docs/TESTING.md#running) too,\n"
        "and `STYLE.txt`. Again: docs/CONVENTIONS.md. Run `npm test` and `make lint`.\n",
    )
    assert text.count('<instructions from="docs/CONVENTIONS.md">\nName tables in the singular.\n</instructions>') == 1
    assert '<instructions from="docs/TESTING.md">\nRun the tests with make check.\n</instructions>' in text
    assert '<instructions from="STYLE.txt">\nFour spaces.\n</instructions>' in text
    assert text.index('from="AGENTS.md"') < text.index('from="docs/CONVENTIONS.md"') < text.index("<pointers>")
    assert "Loaded above: docs/CONVENTIONS.md, docs/TESTING.md, STYLE.txt" in note(text)
    assert "Not loaded: none" in note(text)


def test_pointers_outside_the_project_to_secrets_urls_and_missing_files_are_not_followed(project: Path, tmp_path: Path):
    (tmp_path / "outside.md").write_text("OUTSIDE TEXT\n")
    (project / ".env").write_text("API_KEY=sk-live-1234567890\n")
    (project / "docs" / "link.md").symlink_to(tmp_path / "outside.md")
    text = prompt_of(
        project,
        "Read ../outside.md, [the keys](.env), docs/link.md, the [guide](https://example.com/GUIDE.md),\n"
        f"https://example.com/other/RULES.md, {tmp_path / 'outside.md'} and docs/MISSING.md.\n",
    )
    assert "OUTSIDE TEXT" not in text and "sk-live" not in text
    said = note(text)
    assert "Loaded above: none" in said
    assert "../outside.md (outside the project)" in said
    assert ".env (a secret file)" in said
    assert "docs/link.md (outside the project)" in said
    assert "https://example.com/GUIDE.md (a URL: instructions are read from the project only)" in said
    assert "https://example.com/other/RULES.md (a URL" in said and "example.com/other/RULES.md (not found)" not in said
    assert f"{tmp_path / 'outside.md'} (outside the project)" in said
    assert "docs/MISSING.md (not found)" in said


def test_what_a_pointed_file_points_to_is_not_followed(project: Path):
    (project / "docs" / "CONVENTIONS.md").write_text("See docs/DEEPER.md for more.\n")
    (project / "docs" / "DEEPER.md").write_text("DEEPER TEXT\n")
    text = prompt_of(project, "See docs/CONVENTIONS.md.\n")
    assert "See docs/DEEPER.md for more." in text and "DEEPER TEXT" not in text


def test_a_file_the_rules_would_ask_about_is_left_out(project: Path):
    (project / "docs" / "private.md").write_text("PRIVATE\n")
    text = prompt_of(project, "See docs/private.md and docs/CONVENTIONS.md.\n", readable=lambda rel: "private" not in rel)
    assert "PRIVATE" not in text and "Name tables" in text
    assert "docs/private.md (the permission rules do not let it be read without asking)" in note(text)


def test_the_size_limits_cut_each_file_and_all_of_them(project: Path):
    line = "x" * 99 + "\n"
    (project / "docs" / "big.md").write_text(line * (PER_FILE // 100 + 50))
    (project / "docs" / "second.md").write_text(line * (PER_FILE // 100 + 50))
    (project / "docs" / "third.md").write_text("THIRD\n")
    text = prompt_of(project, "docs/big.md docs/second.md docs/third.md\n")
    big = text.split('<instructions from="docs/big.md">\n', 1)[1].split("</instructions>", 1)[0]
    assert big.count(line) <= PER_FILE // 100 and "[cut: the first" in big and "read the file for the rest" in big
    assert "THIRD" not in text  # the two cut files took the whole of TOTAL
    said = note(text)
    assert "Loaded above: docs/big.md (cut), docs/second.md (cut)" in said
    assert f"docs/third.md (over the limit of {TOTAL} characters for all pointed files)" in said


def test_a_small_model_gets_a_quarter_of_the_room(project: Path):
    (project / "docs" / "big.md").write_text(("y" * 99 + "\n") * (PER_FILE // 100))
    text = prompt_of(project, "docs/big.md\n", small=True)
    big = text.split('<instructions from="docs/big.md">\n', 1)[1].split("</instructions>", 1)[0]
    assert big.count("y" * 99) <= PER_FILE // SMALL_SHARE // 100 and "(cut)" in note(text)


def test_no_pointers_no_note(project: Path):
    text = prompt_of(project, "Run `make check` before finishing.\n")
    assert "<pointers>" not in text and text.endswith("</instructions>")


def test_what_counts_as_a_pointer():
    assert pointers_in("see docs/A.md, `b/C.rst`, [d](e/F.py), [top](#usage), `npm test`, v1.2 and x.md.bak") == [
        "docs/A.md", "b/C.rst", "e/F.py",
    ]
