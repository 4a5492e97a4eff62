"""mentions: the files a message names, shown to a small model with it."""

from __future__ import annotations

import anyio

from totem_engine.mentions import LISTED_FILES, mentions, named_files, project_files, unasked_reads
from totem_engine.permissions import Policy, RuleRef

FILES = ["README.md", "src/app.py", "src/util.py", "tests/test_app.py", "lib/util.py"]


def test_a_file_is_named_by_its_path_or_by_a_base_name_only_it_has():
    assert named_files("Fix src/app.py, then run tests/test_app.py.", FILES) == ["src/app.py", "tests/test_app.py"]
    assert named_files("the bug in app.py", FILES) == ["src/app.py"]
    assert named_files("util.py is odd", FILES) == []  # two files have that name
    assert named_files("see ./README.md and README.md again", FILES) == ["README.md"]
    assert named_files("version 1.2 of main.py", FILES) == []


async def read(path):
    return await anyio.Path(path).read_bytes()


def ANY(rel: str) -> bool:
    return True


async def test_a_secret_file_is_named_never_shown_unless_a_rule_allows_reading_it(tmp_path):
    (tmp_path / ".env").write_text("API_KEY=hunter2\n")
    (tmp_path / "server.key").write_text("-----BEGIN PRIVATE KEY-----\n")
    (tmp_path / "notes.txt").symlink_to(tmp_path / "server.key")  # the secret under another name
    (tmp_path / "app.py").write_text("print('app')\n")
    files = [".env", "app.py", "notes.txt", "server.key"]
    asked = "check .env, server.key and notes.txt against app.py"
    found = await mentions(tmp_path, asked, budget=10_000, read=read, files=files, first_turn=True,
                           readable=unasked_reads(Policy(), tmp_path), others_budget=10_000)
    assert found is not None and [rel for rel, _ in found.shown] == ["app.py"]
    assert "hunter2" not in found.text and "PRIVATE KEY" not in found.text
    assert "server.key is not shown here: the read tool asks" in found.text
    allowed = Policy(rules=[RuleRef(source="config", permission="read", pattern="server.key", action="allow")])
    found = await mentions(tmp_path, "check server.key", budget=10_000, read=read, files=files, first_turn=False,
                           readable=unasked_reads(allowed, tmp_path))
    assert found is not None and "PRIVATE KEY" in found.text


async def test_named_files_are_shown_within_the_budget_and_the_rest_are_pointed_at(tmp_path):
    (tmp_path / "small.py").write_text("x = 1\n")
    (tmp_path / "big.py").write_text("y = 2\n" * 100)
    files = project_files(tmp_path)
    found = await mentions(tmp_path, "compare small.py with big.py", budget=200, read=read, files=files, first_turn=True, readable=ANY)

    assert found is not None
    assert found.text.startswith("Files in the project (2): big.py, small.py\n\n")
    assert "small.py\n```\nx = 1\n```" in found.text
    assert "big.py is too large to show here; read it with the read tool." in found.text
    assert [rel for rel, _ in found.shown] == ["small.py"]


async def test_the_file_list_is_for_a_first_message_and_is_cut_when_long(tmp_path):
    files = [f"f{i:03}.py" for i in range(LISTED_FILES + 5)]
    found = await mentions(tmp_path, "hello", budget=100, read=read, files=files, first_turn=True, readable=ANY)
    assert found is not None and found.text.startswith("Files in the project (65): f000.py, f001.py")
    assert found.text.endswith(", and 5 more")
    assert await mentions(tmp_path, "hello", budget=100, read=read, files=files, first_turn=False, readable=ANY) is None


async def test_a_message_naming_no_file_is_shown_the_files_that_share_its_rarer_words(tmp_path):
    (tmp_path / "pricing.py").write_text('"""Prices: a bulk discount for large orders."""\nBULK_MIN_UNITS = 144\n')
    (tmp_path / "orders.py").write_text('"""Orders of units."""\nimport pricing\nLIMIT = pricing.BULK_MIN_UNITS\n')
    (tmp_path / "report.py").write_text('"""Reports of orders."""\n')
    (tmp_path / "logo.png").write_bytes(b"\x89PNG\x00bulk discount")
    files = project_files(tmp_path)
    question = "From how many units does the bulk discount start?"

    reads = []

    async def counted(path):
        reads.append(path.name)
        return await read(path)

    found = await mentions(tmp_path, question, budget=1000, read=counted, files=files, first_turn=True, readable=ANY, others_budget=1000)

    assert sorted(reads) == sorted(files)  # each read once: to score it, and pricing.py to show it
    # pricing.py has "bulk", "discount" and "units"; orders.py only "bulk" and "units", under half
    # as rare a match; report.py nothing; the image is never text.
    assert found is not None and found.named == []
    assert [rel for rel, _ in found.shown] == ["pricing.py"]
    assert "pricing.py\n```\n" in found.text and "BULK_MIN_UNITS = 144" in found.text
    # Not on later turns, and not when nothing matches.
    assert await mentions(tmp_path, question, budget=1000, read=read, files=files, first_turn=False, readable=ANY, others_budget=1000) is None
    quiet = await mentions(tmp_path, "hello", budget=1000, read=read, files=files, first_turn=True, readable=ANY, others_budget=1000)
    assert quiet is not None and quiet.shown == []
