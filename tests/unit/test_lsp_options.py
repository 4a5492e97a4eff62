"""The language server's ``initializationOptions`` as a typed value (totem_lsp.options)."""

from __future__ import annotations

from collections import namedtuple

from totem_lsp.options import InitializationOptions


def test_the_fields_the_editor_sends():
    options, problems = InitializationOptions.from_wire(
        {"token": "kq3", "model": "sim/m", "config": {"max_steps": 40}, "unknown": 1}
    )
    assert options == InitializationOptions(token="kq3", model="sim/m", config={"max_steps": 40})
    assert problems == []


def test_anything_but_an_object_gives_the_defaults():
    for raw in (None, "x", 3, [1, 2]):
        assert InitializationOptions.from_wire(raw) == (InitializationOptions(), [])
    assert InitializationOptions() == InitializationOptions(token=None, model=None, config=None)


def test_a_field_of_the_wrong_type_is_left_at_its_default_and_said():
    options, problems = InitializationOptions.from_wire({"token": 5, "model": "sim/m", "config": "max_steps=3"})
    assert options == InitializationOptions(model="sim/m")
    assert problems == [
        "initializationOptions.token: expected a string, got int; ignored",
        "initializationOptions.config: expected an object, got str; ignored",
    ]


def test_nulls_are_unset_and_pygls_namedtuples_are_read():
    assert InitializationOptions.from_wire({"model": None, "config": None}) == (InitializationOptions(), [])
    Options = namedtuple("Options", ["model", "config"])
    Config = namedtuple("Config", ["max_steps"])
    options, _ = InitializationOptions.from_wire(Options(model="sim/m", config=Config(max_steps=40)))
    assert options == InitializationOptions(model="sim/m", config={"max_steps": 40})
