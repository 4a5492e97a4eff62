"""What keeping a command's changes for undo costs, on 10 and on 100,000 small files.

For each tree size the script builds two identical git repositories of that many small files
(100 a folder, committed), then measures, alternating, `--runs` times after one warm-up:

- `git status`: plain `git status --porcelain` on each tree, the figure the capture stands against;
- capture: what Totem adds around a command that changes one file without the sandbox
  (command_changes.py: the tree captured before, the file changed, captured again and compared,
  the changed file's bytes read), the change itself not timed: on the first tree with the watch
  of the project's folders (tree_watch.py, what runs on Linux), on the second without it (every
  capture a full pass: what runs where the watch cannot); and on the first tree again with another
  file edited just before (untimed, as the agent's edit tool or the user would), so the watch
  names that file to the before-capture instead of proving nothing changed;
- and, where the sandbox works, a `bash -c 'echo … >> file'` run plain and run as a sandboxed
  `bash` is (the session's namespace joined, bwrap with the project overlaid, the overlay taken
  into the project): the overhead is the difference of their medians.

It prints the medians (wall time, and CPU time: user + system of the git processes, steadier on a
shared machine: their mean), the ratios capture/git status (each against its own tree's), the
warm-up's first capture (the private index seeded, the watch set up: once a session, wall time)
and the overlay's overhead for each size. Nothing is asserted but that each found the one changed
file.

    .venv/bin/python bench/command_snapshots.py [--sizes 10,100000] [--runs R]
"""

from __future__ import annotations

import argparse
import os
import resource
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


def children_cpu() -> float:
    """Seconds of CPU (user + system) of the child processes waited for so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def git_status(root: Path) -> tuple[float, float]:
    """Wall and CPU seconds of one ``git status``."""
    start, cpu = time.perf_counter(), children_cpu()
    subprocess.run(["git", "status", "--porcelain"], cwd=root, env=GIT_ENV, check=True, capture_output=True)
    return time.perf_counter() - start, children_cpu() - cpu


async def capture(changes: CommandChanges, target: Path, n: int, edited: Path | None = None) -> tuple[float, float]:
    """Wall and CPU seconds (its git processes) of the capture around one change of ``target``;
    the change itself untimed, and so the edit of ``edited`` before it."""
    if edited is not None:
        edited.write_text(f"edit {n}\n")
    start, cpu = time.perf_counter(), children_cpu()
    scope = await changes.scope("bench", command="echo >> f", may_change=True)
    middle = time.perf_counter()
    target.write_text(f"run {n}\n")
    resumed = time.perf_counter()
    taken = await scope.close()
    end = time.perf_counter()
    assert [c.path for c in taken] == [target.parent.name + "/" + target.name], taken
    return (middle - start) + (end - resumed), children_cpu() - cpu


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


def summary(samples: list[tuple[float, float]]) -> tuple[float, float]:
    """Wall: the median; CPU: the mean (getrusage counts in clock ticks on some kernels)."""
    return statistics.median(s[0] for s in samples), statistics.mean(s[1] for s in samples)


Summaries = dict[bool, tuple[tuple[float, float], tuple[float, float], float]]


async def measure(files: int, runs: int) -> tuple[Summaries, tuple[float, float], float | None]:
    """For the tree with the watch (True) and the one without (False): the summaries of ``git
    status`` and of the capture, and the first capture's wall time; the summary of the capture
    after an edit (the watched tree); and the overlay's overhead."""
    with (tempfile.TemporaryDirectory(prefix="totem-bench-", ignore_cleanup_errors=True) as watched,
          tempfile.TemporaryDirectory(prefix="totem-bench-", ignore_cleanup_errors=True) as unwatched):
        roots = {True: Path(watched), False: Path(unwatched)}
        changes, first = {}, {}
        for watch, root in roots.items():
            build(root, files)
            changes[watch] = CommandChanges(root, max_file_bytes=10 * 1024 * 1024, watch=watch)
            git_status(root)
            # Warm-up: the private index seeded (and the watch set up), caches filled.
            first[watch] = (await capture(changes[watch], root / "d0000" / "f00.txt", 0))[0]
        status: dict[bool, list] = {True: [], False: []}
        captured: dict[bool, list] = {True: [], False: []}
        after_edit = []
        for n in range(1, runs + 1):
            for watch, root in roots.items():
                status[watch].append(git_status(root))
                captured[watch].append(await capture(changes[watch], root / "d0000" / "f00.txt", n))
            edited = roots[True] / f"d{(files - 1) // 100:04}" / "f01.txt"
            after_edit.append(await capture(changes[True], roots[True] / "d0000" / "f00.txt", -n, edited))
        for each in changes.values():
            await each.aclose()
        found = {watch: (summary(status[watch]), summary(captured[watch]), first[watch]) for watch in roots}
        return found, summary(after_edit), await overlay_overhead(roots[True], runs)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="10,100000")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    for files in (int(size) for size in args.sizes.split(",")):
        found, after_edit, overlay = await measure(files, args.runs)
        for watch, (status, captured, first) in found.items():
            print(f"{files:>7} files, {'watched:  ' if watch else 'unwatched:'} git status {status[0] * 1000:7.1f} ms"
                  f" (CPU {status[1] * 1000:.0f})   capture {captured[0] * 1000:7.1f} ms (CPU {captured[1] * 1000:.0f})"
                  f"   capture/git status {captured[0] / status[0]:.2f} (CPU {captured[1] / max(status[1], 1e-9):.2f})"
                  f"   first capture {first * 1000:.0f} ms")
        status = found[True][0]
        print(f"{files:>7} files, watched, a file edited before: capture {after_edit[0] * 1000:7.1f} ms"
              f" (CPU {after_edit[1] * 1000:.0f})   capture/git status {after_edit[0] / status[0]:.2f}"
              f" (CPU {after_edit[1] / max(status[1], 1e-9):.2f})")
        shown = "no sandbox here" if overlay is None else f"{overlay * 1000:.1f} ms"
        print(f"{files:>7} files: overlay overhead {shown}")


if __name__ == "__main__":
    anyio.run(main)
