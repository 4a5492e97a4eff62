"""grep and glob against ripgrep on the same tree, side by side.

The tree is generated (20,000 files in 400 folders, `--files`): Python modules whose lines hold
a common word (`value`, about 15 matches a file) and a rare one (`needle`, one file in 50), plus
a `.gitignore`d folder, hidden files and secret-looking files that both sides must skip. With
`--sdist NAME==VERSION` the tree is instead that source distribution from PyPI, fetched once
with pip into ~/.cache/totem-bench/ (the package registry is the only network these machines
have).

Each search runs through the tool itself (prepare and apply, as the agent calls it, ripgrep
engine) and as the command it stands against, alternating, `--runs` times after one warm-up:

- grep PATTERN: `rg --json` with the search flags the tool builds (`grep.ripgrep_args`: the
  project's ignore rules, `workspace/ripgrep.py` `FLAGS`, the pattern, the path), its output read
  to the end: issue 23's reference. The tool itself runs `rg --count` with those flags, then
  `rg --json` on the few files whose lines it shows; that first run alone, `rg --count`, is
  timed too (the second ratio), the floor of the tool's way of searching;
- glob `**/*.py`: `rg --files --sortr modified` with the same flags (the tool lists the newest
  first).

It prints the medians and the ratio tool/command for each. Nothing is asserted but the tool's count
of matches equal to rg's.

    .venv/bin/python bench/search.py [--files N] [--runs R] [--sdist django==5.2.8]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from totem_engine.tools.base import ToolContext
from totem_engine.tools.glob import GlobTool
from totem_engine.tools.grep import COUNT_OUTPUT, GrepTool, ripgrep_args
from totem_engine.workspace.ripgrep import FLAGS
from totem_engine.workspace.files import DiskWorkspace
WORDS = "alpha beta gamma delta return self import from class def for in if else while".split()


def generate(root: Path, files: int) -> None:
    rng = random.Random(7)
    (root / ".gitignore").write_text("build/\n")
    for n in range(files):
        folder = root / f"pkg{n % 400:03d}" / f"sub{n % 7}"
        folder.mkdir(parents=True, exist_ok=True)
        lines = []
        for i in range(60):
            words = rng.choices(WORDS, k=6)
            if i % 4 == 0:
                words.insert(3, "value")
            if n % 50 == 0 and i == 30:
                words.append("needle")
            lines.append(" ".join(words))
        (folder / f"mod{n}.py").write_text("\n".join(lines) + "\n")
    for rel in ("build/gen.py", ".hidden/x.py", "keys/server.pem", ".env"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("value needle\n" * 50)


def sdist_tree(spec: str, into: Path) -> Path:
    cache = Path.home() / ".cache" / "totem-bench" / "sdists"
    cache.mkdir(parents=True, exist_ok=True)
    found = sorted(cache.glob(f"{spec.split('==')[0].replace('-', '_')}*.tar.gz")) + sorted(cache.glob(f"{spec.split('==')[0]}*.tar.gz"))
    if not found:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "-d", str(cache), spec],
            check=True, capture_output=True,
        )
        found = sorted(cache.glob("*.tar.gz"))
    with tarfile.open(found[-1]) as archive:
        archive.extractall(into, filter="data")
    (top,) = [p for p in into.iterdir() if p.is_dir()]
    return top


async def tool_run(tool, root: Path, **args) -> str:
    ctx = ToolContext(root=root, workspace=DiskWorkspace(), session_id="bench", call_id="c1", output_budget=50_000)
    action = await tool.prepare(tool.Input(**args), ctx)
    result = await action.apply(ctx)
    return result.summary


def timed(fn) -> tuple[float, object]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def rg_json(pattern: str) -> list[str]:
    """The reference: `rg --json` with the tool's search flags (ignore rules, pattern, path)."""
    return ripgrep_args("rg", ["--json"], pattern, [], ["."])


def rg_count(pattern: str) -> list[str]:
    """The tool's own first run (`grep.COUNT_OUTPUT`): the floor of its way of searching."""
    return ripgrep_args("rg", COUNT_OUTPUT, pattern, [], ["."])


def rg_matches(root: Path, pattern: str) -> tuple[int, int]:
    """rg's own count of matching lines and files (secret files included: the tool skips them)."""
    done = subprocess.run(rg_json(pattern), cwd=root, capture_output=True, check=False)
    stats = json.loads(done.stdout.rstrip(b"\n").rsplit(b"\n", 1)[-1])["data"]["stats"]
    return stats["matched_lines"], stats["searches_with_match"]


def compare(name: str, ours, theirs: dict[str, object], runs: int) -> None:
    """The tool and each command in ``theirs`` in turn, ``runs`` times: medians and ratios."""
    ours(), [run() for run in theirs.values()]  # warm-up: page cache, bytecode
    mine, other = [], {label: [] for label in theirs}
    for _ in range(runs):
        mine.append(timed(ours)[0])
        for label, run in theirs.items():
            other[label].append(timed(run)[0])
    a = statistics.median(mine)
    for label, times in other.items():
        b = statistics.median(times)
        print(f"{name:32} tool {a * 1000:8.1f} ms   {label} {b * 1000:8.1f} ms   ratio {a / b:5.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--sdist", help="a PyPI source distribution, NAME==VERSION, as the tree")
    args = parser.parse_args()
    if shutil.which("rg") is None:
        sys.exit("rg is not on PATH: run with the project's venv (the ripgrep wheel of the dev extra)")
    with tempfile.TemporaryDirectory(prefix="totem-search-") as tmp:
        root = Path(tmp) / "tree"
        root.mkdir()
        if args.sdist:
            root = sdist_tree(args.sdist, root)
        else:
            generate(root, args.files)
        files = sum(1 for _ in root.rglob("*") if _.is_file())
        print(f"tree: {root.name}, {files} files")
        for pattern in ("value", "needle"):  # many matches, few
            summary = asyncio.run(tool_run(GrepTool(), root, pattern=pattern))
            lines, with_match = rg_matches(root, pattern)
            print(f"grep {pattern!r}: tool says {summary}; rg says {lines} matches in {with_match} files")
            compare(
                f"grep {pattern!r}",
                lambda: asyncio.run(tool_run(GrepTool(), root, pattern=pattern)),
                {
                    "rg --json": lambda: subprocess.run(rg_json(pattern), cwd=root, capture_output=True),
                    "rg --count": lambda: subprocess.run(rg_count(pattern), cwd=root, capture_output=True),
                },
                args.runs,
            )
        compare(
            "glob '**/*.py'",
            lambda: asyncio.run(tool_run(GlobTool(), root, pattern="**/*.py")),
            {"rg --files": lambda: subprocess.run(["rg", "--files", *FLAGS, "--sortr", "modified", "--", "."], cwd=root, capture_output=True)},
            args.runs,
        )


if __name__ == "__main__":
    main()
