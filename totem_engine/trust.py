"""Project trust: a cloned repository's own config must not grant itself power.

Until the user trusts a project root, its ``.totem/config.toml`` may only do what each key's
``Untrusted`` class in the config schema allows (config.py): tighten permissions (``ask``,
``deny``), tighten limits (the stricter of its value and the user's), and set options that run
nothing and send nothing. Its ``allow`` rules, provider definitions (a ``base_url`` could send
code and keys elsewhere), model choice and looser limits are dropped, with one notice saying so. The user config, ``--config FILE`` and the editor's settings
come from the user and are trusted. Trust is asked once per root and remembered in
``<user data dir>/trusted.json``.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import platformdirs

from totem_engine.config import DROPPED, Config, ConfigError, ConfigLayer, LoadedConfig, Untrusted, merge_layers, untrusted_class
from totem_engine.workspace.files import write_atomically

AskTrust = Callable[[Path, list[str]], Awaitable[bool]]


def trust_file() -> Path:
    return Path(platformdirs.user_data_dir("totem")) / "trusted.json"


def _read_trusted() -> list[str]:
    try:
        data = json.loads(trust_file().read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError):
        return []
    return [str(p) for p in data.get("roots", [])] if isinstance(data, dict) else []


async def is_trusted(root: Path) -> bool:
    return str(root.resolve()) in await anyio.to_thread.run_sync(_read_trusted)


async def trust(root: Path) -> None:
    def _add() -> None:
        roots = _read_trusted()
        key = str(root.resolve())
        if key not in roots:
            roots.append(key)
        write_atomically(trust_file(), json.dumps({"roots": sorted(roots)}, indent=2).encode("utf-8"))

    await anyio.to_thread.run_sync(_add)


def restrict(data: dict[str, Any], base: Config | None = None) -> tuple[dict[str, Any], list[str]]:
    """What an untrusted project layer keeps, and a description of each thing it loses.

    Each key is treated as its ``Untrusted`` class in the config schema says. ``base`` is what
    the layers before the project make of the config (None: the defaults): a limit the project
    may only tighten is kept at the stricter of its value and the base's.
    """
    base = base if base is not None else Config()
    kept: dict[str, Any] = {}
    dropped: list[str] = []
    for key, value in data.items():
        rule = untrusted_class(key) if key in Config.model_fields else DROPPED
        if rule.kind == "kept":
            kept[key] = value
        elif rule.kind == "tighten":
            earlier = getattr(base, key)
            stricter = _stricter(rule, value, earlier)
            kept[key] = stricter
            if stricter != value:
                dropped.append(f"{key} = {_toml(value)} (looser than {_toml(earlier)})")
        elif rule.kind == "rules":
            rules, loosened = _tightening_only(value)
            if rules:
                kept[key] = rules
            dropped.extend(f"permission {name} = allow" for name in loosened)
        else:
            dropped.append(key if not isinstance(value, dict) else f"[{key}]")
    return kept, dropped


def _stricter(rule: Untrusted, value: Any, earlier: Any) -> Any:
    """The stricter of the project's ``value`` and the ``earlier`` layers' for a ``tighten`` key."""
    if rule.order:
        return max(value, earlier, key=lambda v: rule.order.index(v) if v in rule.order else len(rule.order))
    if rule.no_limit is not None:
        if value == rule.no_limit:
            return earlier  # "no limit" is the loosest value, never the minimum
        if earlier == rule.no_limit:
            return value
    return min(value, earlier)


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return f'"{value}"' if isinstance(value, str) else f"{value:g}" if isinstance(value, float) else str(value)


def _tightening_only(table: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    rules: dict[str, Any] = {}
    loosened: list[str] = []
    for permission, value in table.items():
        if isinstance(value, dict):
            strict = {pattern: action for pattern, action in value.items() if action != "allow"}
            loosened += [f"{permission} {pattern!r}" for pattern, action in value.items() if action == "allow"]
            if strict:
                rules[permission] = strict
        elif value == "allow":
            loosened.append(permission)
        else:
            rules[permission] = value
    return rules, loosened


async def apply_trust(
    root: Path, loaded: LoadedConfig, ask: AskTrust | None, *, files: Sequence[str] = ()
) -> tuple[LoadedConfig, str | None]:
    """The config with an untrusted project layer restricted, and the notice to show (or None).

    ``ask(root, reasons)`` asks the user whether to trust the project (True: trusted, and
    remembered); None means there is no way to ask, so the project stays untrusted. ``files``:
    the project's agent and command files (agents.project_files), which ask for trust like a
    config; what they lose untrusted is said where they are read (agents.discover_agents).
    """
    project = next((layer for layer in loaded.layers if layer.kind == "project"), None)
    if project is None and not files:
        return loaded, None
    kept: dict[str, Any] = {}
    dropped: list[str] = []
    if project is not None:
        try:
            base: Config | None = merge_layers(loaded.layers[: loaded.layers.index(project)])
        except ConfigError:  # the earlier layers are only complete with the project's (a trusted one)
            base = None
        kept, dropped = restrict(project.data, base)
    if not (dropped or files) or await is_trusted(root):
        return loaded, None
    if ask is not None and await ask(root, [*dropped, *files]):
        await trust(root)
        return loaded, None
    if project is None or not dropped:
        return loaded, None
    layers: list[ConfigLayer] = [replace(layer, data=kept) if layer is project else layer for layer in loaded.layers]
    notice = (
        f"{project.source} is not trusted, so these settings of it were ignored: {', '.join(dropped)}. "
        f"Run `totem trust {root}` to trust this project."
    )
    return LoadedConfig(config=merge_layers(layers), layers=layers), notice
