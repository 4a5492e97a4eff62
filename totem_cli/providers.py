"""``totem providers add|templates``, ``totem auth set|remove``: the providers of the user config and their keys.

``providers add TEMPLATE NAME`` appends a ``[providers.NAME]`` table to the user config file as
text, so comments and the layout of the rest of the file stay as they were; it refuses a NAME the
file already has, and re-reads the result before writing so it never leaves a file Totem cannot
read. The key is asked on a terminal (not echoed) and goes to the key store
(``totem_engine.keys``), never into the config file.

Exit codes: 0 done, 1 refused or nothing to remove, 2 usage error (unknown template, bad name,
missing address), 130 interrupted.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

EXIT_REFUSED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

_NAME = re.compile(r"[A-Za-z0-9_-]+")


def add_subcommands(sub: argparse._SubParsersAction, command: str | None) -> None:
    """The ``providers`` and ``auth`` subcommands, added to ``totem``'s subparsers. (This module
    is imported by every ``totem`` start, ``--help`` too: what only a command needs is imported
    in the command.) Their actions are added only when ``command`` is theirs (main.build_parser)."""
    providers = sub.add_parser("providers", help="add a provider from a template, list the templates")
    auth = sub.add_parser("auth", help="store or remove a provider's API key (system keyring or a private file)")
    if command == "providers":
        _provider_actions(providers)
    elif command == "auth":
        _auth_actions(auth)


def _provider_actions(providers: argparse.ArgumentParser) -> None:
    actions = providers.add_subparsers(dest="action", required=True)
    add = actions.add_parser("add", help="write [providers.NAME] into your user config from a template")
    add.add_argument("template", help="a template name (see: totem providers templates)")
    add.add_argument("name", help="the provider's name, written before the / in model")
    add.add_argument("--base-url", help="the server's address (default: the template's)")
    add.add_argument("--no-key", action="store_true", help="do not ask for a key")
    actions.add_parser("templates", help="list the provider templates")


def _auth_actions(auth: argparse.ArgumentParser) -> None:
    auth_actions = auth.add_subparsers(dest="action", required=True)
    put = auth_actions.add_parser("set", help="store a key: typed on a terminal, else read from stdin")
    put.add_argument("provider")
    remove = auth_actions.add_parser("remove", help="remove a stored key")
    remove.add_argument("provider")


def run(args: argparse.Namespace) -> int:
    if args.command == "providers":
        return templates_command() if args.action == "templates" else add_command(args)
    return auth_set_command(args) if args.action == "set" else auth_remove_command(args)


# ---------------------------------------------------------------------------------------------
# providers
# ---------------------------------------------------------------------------------------------


def templates_command() -> int:
    from totem_engine.api.setup import TEMPLATES

    for t in TEMPLATES:
        if t.base_url:
            where = t.base_url
        elif t.asks_url:
            where = "(asks for the address: --base-url)"
        else:
            where = f"(the usual address of kind {t.kind})"
        flags = ", ".join(f for f in ("local" if t.probe else "", "no key" if not t.needs_key else "") if f)
        print(f"{t.name}\t{t.label}\tkind={t.kind}\t{where}" + (f"\t{flags}" if flags else ""))
    return 0


def add_command(args: argparse.Namespace) -> int:
    from totem_engine.api.setup import (
        TEMPLATES,
        ProviderConfig,
        find_template,
        user_config_path,
    )
    from totem_engine.api.workspace import write_atomically
    from totem_engine.config_error import ConfigError

    template = find_template(args.template)
    if template is None:
        names = ", ".join(t.name for t in TEMPLATES)
        return _fail(f'unknown template "{args.template}"; templates: {names}', EXIT_USAGE)
    if not _NAME.fullmatch(args.name):
        return _fail(f'"{args.name}": a provider name is letters, digits, "-" and "_"', EXIT_USAGE)
    import tomllib
    from urllib.parse import urlsplit

    base_url = args.base_url or template.base_url
    if template.asks_url and not base_url:
        if not sys.stdin.isatty():
            return _fail(f"template {template.name} needs the server's address: add --base-url URL", EXIT_USAGE)
        base_url = input("Base URL (e.g. http://127.0.0.1:8080/v1): ").strip()
        if not base_url:
            return _fail("no address given; nothing written", EXIT_USAGE)
    if base_url and urlsplit(base_url).scheme not in ("http", "https"):
        return _fail(f'"{base_url}": expected an http:// or https:// address', EXIT_USAGE)

    path = user_config_path()
    shown = _display(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    try:
        current = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        return _fail(f"{shown}: invalid TOML ({exc}); fix it first, nothing written", EXIT_REFUSED)
    if args.name in (current.get("providers") or {}):
        return _fail(f"[providers.{args.name}] already exists in {shown}; choose another name or edit the file")

    table: dict[str, str] = {"kind": template.kind}
    if base_url:
        table["base_url"] = base_url
    lines = [f"[providers.{args.name}]"] + [f"{key} = {_toml_string(value)}" for key, value in table.items()]
    new_text = (text.rstrip("\n") + "\n\n" if text.strip() else "") + "\n".join(lines) + "\n"
    try:
        # The file as it will be: it must parse and hold exactly the new table.
        written = tomllib.loads(new_text)["providers"][args.name]
        ProviderConfig.model_validate(written)
        assert written == table
    except (tomllib.TOMLDecodeError, KeyError, TypeError, AssertionError, ValueError):
        return _fail(f"{shown}: cannot add [providers.{args.name}] to this file as text (its providers are"
                     " written another way); add the table by hand")
    write_atomically(path, new_text.encode("utf-8"))
    print(f"added [providers.{args.name}] ({template.label}) to {shown}")

    if template.needs_key and not args.no_key:
        if sys.stdin.isatty():
            hint = f" ({template.note})" if template.note else ""
            print(f"API key for {args.name}{hint}; empty to skip.", file=sys.stderr)
            try:
                import getpass

                key = getpass.getpass("API key: ")
            except (EOFError, KeyboardInterrupt):
                print(file=sys.stderr)
                key = ""
            if key.strip():
                try:
                    _store(args.name, key)
                except ConfigError as exc:
                    print(f"totem: {exc}; store it later with: totem auth set {args.name}", file=sys.stderr)
        else:
            print(f"no key asked (not a terminal); store it with: totem auth set {args.name}", file=sys.stderr)
    if template.quirks:
        print(f"note: {template.label} is known for: {', '.join(template.quirks)}", file=sys.stderr)
    print(f'list its models with: totem models   use one with: model = "{args.name}/<model id>"')
    return 0


# ---------------------------------------------------------------------------------------------
# auth
# ---------------------------------------------------------------------------------------------


def auth_set_command(args: argparse.Namespace) -> int:
    if not _NAME.fullmatch(args.provider):
        return _fail(f'"{args.provider}": a provider name is letters, digits, "-" and "_"', EXIT_USAGE)
    try:
        if sys.stdin.isatty():
            import getpass

            key = getpass.getpass(f"API key for {args.provider}: ")
        else:
            key = sys.stdin.read()
    except (EOFError, KeyboardInterrupt):
        print(file=sys.stderr)
        return EXIT_INTERRUPTED
    _store(args.provider, key)
    _warn_if_config_key_wins(args.provider)
    return 0


def auth_remove_command(args: argparse.Namespace) -> int:
    from totem_engine.api.setup import remove_key

    if not remove_key(args.provider):
        return _fail(f"no key stored for {args.provider}")
    print(f"removed the key of {args.provider}")
    return 0


def _store(provider: str, key: str) -> None:
    from totem_engine.api.setup import store_key

    where = store_key(provider, key)
    print(f"stored the key of {provider} in {where}")


def _warn_if_config_key_wins(provider: str) -> None:
    from totem_engine.api.setup import load_config
    from totem_engine.config_error import ConfigError

    try:
        settings = load_config(None).config.providers.get(provider)
    except ConfigError:
        return
    if settings is not None and settings.api_key_value():
        print(f"note: [providers.{provider}] sets api_key in your config; that one is used", file=sys.stderr)


# ---------------------------------------------------------------------------------------------


def _toml_string(value: str) -> str:
    # A JSON string is a TOML basic string: same quotes and escapes (\", \\, \n, \uXXXX).
    import json

    return json.dumps(value)


def _display(path: Path) -> str:
    try:
        return "~/" + path.relative_to(Path.home()).as_posix()
    except ValueError:
        return str(path)


def _fail(message: str, code: int = EXIT_REFUSED) -> int:
    print(f"totem: {message}", file=sys.stderr)
    return code
