"""What keeping a command's changes for undo costs, on 10 and on 100,000 small files.

For each tree size the script builds a git repository of that many small files (100 a folder,
committed), then measures, alternating, `--runs` times after one warm-up:

- `git status`: plain `git status --porcelain` on the tree, the figure the capture stands against;
- capture: what Totem adds around a command that changes one file without the sandbox
  (command_changes.py: the tree captured before, the file changed, captured again and compared,
  the changed file's bytes read), the change itself not timed;
- and, where the sandbox works, a `bash -c 'echo … >> file'` run plain and run as a sandboxed
  `bash` is (the session's namespace joined, bwrap with the project overlaid, the overlay taken
  into the project): the overhead is the difference of their medians.

It prints the medians, the ratio capture/git status and the overlay's overhead for each size.
Nothing is asserted but that each found the one changed file.

    .venv/bin/python bench/command_snapshots.py [--sizes 10,100000] [--runs R]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import anyio

from totem_engine.command_changes import CommandChanges, SandboxSettings

GIT_ENV = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


def build(root: Path, files: int) -> None:
    for n in range(files):
        folder = root / f"d{n // 100:04}"
        if n % 100 == 0:
            folder.mkdir()
        (folder / f"f{n % 100:02}.txt").write_text(f"file {n}\n")
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "tree"]):
        subprocess.run(["git", *args], cwd=root, env=GIT_ENV, check=True)


def git_status(root: Path) -> float:
    start = time.perf_counter()
    subprocess.run(["git", "status", "--porcelain"], cwd=root, env=GIT_ENV, check=True, capture_output=True)
    return time.perf_counter() - start


async def capture(changes: CommandChanges, target: Path, n: int) -> float:
    """Seconds of capture around one change of ``target``; the change itself untimed."""
    start = time.perf_counter()
    scope = await changes.scope("bench", command="echo >> f", may_change=True)
    middle = time.perf_counter()
    target.write_text(f"run {n}\n")
    resumed = time.perf_counter()
    taken = await scope.close()
    end = time.perf_counter()
    assert [c.path for c in taken] == [target.parent.name + "/" + target.name], taken
    return (middle - start) + (end - resumed)


async def run(argv: list[str], root: Path) -> None:
    await anyio.run_process(argv, cwd=root, check=True)


async def overlay_overhead(root: Path, runs: int) -> float | None:
    """Median seconds a sandboxed one-file command takes more than the same command plain; None
    where the sandbox does not work."""
    changes = CommandChanges(root, max_file_bytes=10 * 1024 * 1024, sandbox=SandboxSettings(mode="auto"))
    if not await changes.sandboxed("bench"):
        return None
    argv = ["/bin/bash", "-c", "echo x >> d0000/f01.txt"]

    async def sandboxed() -> float:
        start = time.perf_counter()
        scope = await changes.scope("bench", command=argv[-1], may_change=True)
        await run(scope.argv(argv), root)
        taken = await scope.close()
        assert [c.path for c in taken] == ["d0000/f01.txt"], taken
        return time.perf_counter() - start

    async def plain() -> float:
        start = time.perf_counter()
        await run(argv, root)
        return time.perf_counter() - start

    await sandboxed()  # warm-up: the session's namespace holder started
    inside, outside = [], []
    for _ in range(runs):
        inside.append(await sandboxed())
        outside.append(await plain())
    await changes.aclose()
    return statistics.median(inside) - statistics.median(outside)


async def measure(files: int, runs: int) -> tuple[float, float, float | None]:
    with tempfile.TemporaryDirectory(prefix="totem-bench-", ignore_cleanup_errors=True) as folder:
        root = Path(folder)
        build(root, files)
        changes = CommandChanges(root, max_file_bytes=10 * 1024 * 1024)
        target = root / "d0000" / "f00.txt"
        git_status(root)
        await capture(changes, target, 0)  # warm-up: the private index seeded, caches filled
        status, captured = [], []
        for n in range(1, runs + 1):
            status.append(git_status(root))
            captured.append(await capture(changes, target, n))
        await changes.aclose()
        return statistics.median(status), statistics.median(captured), await overlay_overhead(root, runs)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="10,100000")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    for files in (int(size) for size in args.sizes.split(",")):
        status, captured, overlay = await measure(files, args.runs)
        shown = "no sandbox here" if overlay is None else f"{overlay * 1000:.1f} ms"
        print(f"{files:>7} files: git status {status * 1000:7.1f} ms   capture {captured * 1000:7.1f} ms"
              f"   capture/git status {captured / status:.2f}   overlay overhead {shown}")


if __name__ == "__main__":
    anyio.run(main)
