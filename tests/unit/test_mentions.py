"""mentions: the files a message names, shown to a small model with it."""

from __future__ import annotations

import anyio

from totem_engine.mentions import LISTED_FILES, mentions, named_files, project_files

FILES = ["README.md", "src/app.py", "src/util.py", "tests/test_app.py", "lib/util.py"]


def test_a_file_is_named_by_its_path_or_by_a_base_name_only_it_has():
    assert named_files("Fix src/app.py, then run tests/test_app.py.", FILES) == ["src/app.py", "tests/test_app.py"]
    assert named_files("the bug in app.py", FILES) == ["src/app.py"]
    assert named_files("util.py is odd", FILES) == []  # two files have that name
    assert named_files("see ./README.md and README.md again", FILES) == ["README.md"]
    assert named_files("version 1.2 of main.py", FILES) == []


async def read(path):
    return await anyio.Path(path).read_bytes()


async def test_named_files_are_shown_within_the_budget_and_the_rest_are_pointed_at(tmp_path):
    (tmp_path / "small.py").write_text("x = 1\n")
    (tmp_path / "big.py").write_text("y = 2\n" * 100)
    files = project_files(tmp_path)
    found = await mentions(tmp_path, "compare small.py with big.py", budget=200, read=read, files=files, listing=True)

    assert found is not None
    assert found.text.startswith("Files in the project (2): big.py, small.py\n\n")
    assert "small.py\n```\nx = 1\n```" in found.text
    assert "big.py is too large to show here; read it with the read tool." in found.text
    assert [rel for rel, _ in found.shown] == ["small.py"]


async def test_a_long_file_list_is_cut_and_nothing_named_without_a_listing_is_nothing(tmp_path):
    files = [f"f{i:03}.py" for i in range(LISTED_FILES + 5)]
    found = await mentions(tmp_path, "hello", budget=100, read=read, files=files, listing=True)
    assert found is not None and found.text.endswith(", and 5 more")
    assert await mentions(tmp_path, "hello", budget=100, read=read, files=files, listing=False) is None
