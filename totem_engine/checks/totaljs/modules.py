"""Modules: no require() of the app's own files, its config, or Node built-ins the framework wraps."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import PurePosixPath

from totem_engine.checks.totaljs.engine import ANTI_PATTERNS_URL, ARCHITECTURE_URL, Hit, Rule, Source, rule

RULES: list[Rule] = []

_CONFIG_NAMES = {"config", "env", ".env", "settings", "configuration"}
BUILTINS = {
    "fs": "`PATH.fs` with `PATH.root()`, `PATH.temp()`, `PATH.public()` (or `file.read()` for uploads)",
    "path": "`PATH.join()`, `PATH.root()`, `PATH.public()`, `PATH.temp()`",
    "http": "`RESTBuilder.GET(url).promise($)` (or `Total.Http` only if RESTBuilder cannot do it)",
    "https": "`RESTBuilder.POST(url, payload).promise($)` (or `Total.Https` only if RESTBuilder cannot do it)",
    "crypto": "`HASH(value)`, `value.sha256()`, `UID()` / `GUID()` or `Total.Crypto`",
}


def _imports(src: Source) -> Iterator[tuple[object, str]]:
    """``(node to flag, module name)`` for each ``require('x')`` and ``import ... from 'x'``."""
    for call in src.nodes("call_expression"):
        if src.call_name(call) != "require":
            continue
        args = src.arguments(call)
        name = src.string_value(args[0]) if args else None
        if name is not None:
            yield call, name
    for node in src.nodes("import_statement"):
        name = src.string_value(node.child_by_field_name("source"))
        if name is not None:
            yield node, name


def _relative(name: str) -> bool:
    return name.startswith(("./", "../", "/")) or name in (".", "..")


def _stem(name: str) -> str:
    base = PurePosixPath(name).name
    for ext in (".json", ".js"):
        base = base.removesuffix(ext)
    return base


@rule(RULES, "TJS020", "warning", "no require() of the app's own modules", ANTI_PATTERNS_URL)
def own_modules(src: Source) -> Iterator[Hit]:
    """``require('./x')`` or ``require('../modules/x')`` in application code.

    Source: Total.js anti-patterns, "Sharing code with require()": internal modules are
    auto-loaded, reach them through ``MODS``; shared functions go on ``FUNC``
    (totaljs/aicontext totaljs/anti-patterns.md, totaljs/architecture.md "require() policy").
    Application code only: the start script, tests, scripts and browser code are not checked.
    """
    if not src.role.server:
        return
    for node, name in _imports(src):
        stem = _stem(name)
        if not _relative(name) or stem in _CONFIG_NAMES or stem.startswith("config"):
            continue
        yield Hit(
            node.start_byte,
            node.end_byte,
            f"Do not require() the app's own code: modules/ is auto-loaded as `MODS{_ident(stem)}`,"
            " shared functions belong on `FUNC.*` (in definitions/).",
        )


@rule(RULES, "TJS021", "warning", "no require() of the config: use CONF", ANTI_PATTERNS_URL)
def config_files(src: Source) -> Iterator[Hit]:
    """``require('../config.json')`` or ``require('./env')`` in application code.

    Source: Total.js anti-patterns, "Configuration wrappers": read ``CONF.key``, loaded from the
    ``config`` file (totaljs/aicontext totaljs/anti-patterns.md, architecture.md "Configuration").
    """
    if not src.role.server:
        return
    for node, name in _imports(src):
        stem = _stem(name)
        if _relative(name) and (stem in _CONFIG_NAMES or stem.startswith("config")):
            yield Hit(
                node.start_byte,
                node.end_byte,
                "Do not require() configuration: put the keys in the `config` file and read `CONF.key`.",
            )


@rule(RULES, "TJS022", "warning", "no Node built-ins the framework provides", ARCHITECTURE_URL)
def builtins(src: Source) -> Iterator[Hit]:
    """``require('fs')``, ``'path'``, ``'http'``, ``'https'``, ``'crypto'`` (also ``node:`` and
    ``fs/promises``) in application code.

    Source: Total.js anti-patterns, "Node built-in imports inside the app" and architecture.md
    "require() policy": use ``PATH``, ``RESTBuilder``, ``HASH()`` (totaljs/aicontext). Tests,
    scripts and migrations that run outside ``Total.run()`` may use them and are not checked.
    """
    if not src.role.server:
        return
    for node, name in _imports(src):
        module = name.removeprefix("node:").split("/")[0]
        if module in BUILTINS:
            yield Hit(
                node.start_byte,
                node.end_byte,
                f"Do not use Node's `{module}` in app code: Total.js provides {BUILTINS[module]}.",
            )


def _ident(stem: str) -> str:
    """A module file name as the key under MODS (``ai-engine`` stays as it is, quoted)."""
    return f".{stem}" if stem.replace("_", "a").isalnum() else f"['{stem}']"

