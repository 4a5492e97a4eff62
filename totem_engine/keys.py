"""API keys kept outside the config file: the system keyring, else a private user file.

Where a provider's key comes from, first found wins:

1. ``api_key`` in its ``[providers.<name>]`` table (any config layer; the user wrote it there).
2. The system keyring (service ``totem``, user name = the provider's name), when the ``keyring``
   package can be imported and its backend is a real one. ``keyring`` is not a dependency:
   without it this step is skipped.
3. ``keys.json`` in Totem's user config folder (``~/.config/totem/keys.json`` on Linux), a JSON
   object ``{"providers": {"<name>": "<key>"}}``, written with mode 0600 through a temporary
   file created 0600 and renamed, so it is never readable by others, not even for a moment.

Environment variables are never read. ``totem auth set NAME`` stores into the keyring when one
works and falls back to the file when it does not (no keyring, a locked or absent Secret
Service); ``totem auth remove NAME`` removes from both.

A ``keys.json`` that group or others may read (any of mode 0o077) is refused, not just warned
about: the keys in it must be considered exposed, and refusing makes the user fix the mode (the
message says how) the way ssh refuses a private key with loose permissions. Only on POSIX.

MCP logins (mcp/oauth.py) are kept the same way: a JSON record per server URL (its OAuth tokens,
their expiry, the client registration and the authorization server's metadata), in the keyring
(service ``totem-mcp``, user name = the URL) or under ``"mcp_logins"`` in ``keys.json``.
``totem mcp logout NAME`` removes one.

Keys never appear in messages: errors here name the file and the provider, never a value.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import tempfile
from pathlib import Path
from typing import Any

import platformdirs

from totem_engine import json_in
from totem_engine.config import ConfigError, ProviderConfig
from totem_engine.redaction import know

KEYRING_SERVICE = "totem"
LOGINS_SERVICE = "totem-mcp"


class KeyStoreError(ConfigError):
    """The key store cannot be used (unreadable file, loose permissions, bad key). Worded for the
    user; never carries a key."""


def keys_file() -> Path:
    """``keys.json`` beside the user config (honours XDG_CONFIG_HOME like the config does)."""
    return Path(platformdirs.user_config_dir("totem")) / "keys.json"


def api_key_for(provider_name: str, settings: ProviderConfig) -> str | None:
    """The key to send to ``provider_name``: config ``api_key``, else keyring, else keys.json.

    None when there is none anywhere. Raises KeyStoreError when keys.json exists but may not be
    used (see the module docstring).
    """
    key = settings.api_key_value() or stored_key(provider_name)
    know([key])  # kept out of every text that leaves the engine (redaction.py)
    return key


def stored_key(provider_name: str) -> str | None:
    """The key stored by ``totem auth set`` for ``provider_name``, or None."""
    return _from_keyring(KEYRING_SERVICE, provider_name) or _read_file()["providers"].get(provider_name)


def store_key(provider_name: str, key: str) -> str:
    """Store ``key`` for ``provider_name``; returns where it went ("the system keyring" or the
    file path). Raises KeyStoreError for an empty or multi-line key."""
    key = check_key(key)
    backend = _keyring()
    if backend is not None:
        try:
            backend.set_password(KEYRING_SERVICE, provider_name, key)
        except Exception:  # noqa: BLE001 - a keyring that fails to store: use the file
            pass
        else:
            # One place only: a stale copy in the file would come back if the keyring entry
            # were removed by hand.
            _remove_from_file(provider_name)
            return "the system keyring"
    stored = _read_file()
    stored["providers"][provider_name] = key
    _write_file(stored)
    return _display(keys_file())


def remove_key(provider_name: str) -> bool:
    """Remove the stored key of ``provider_name`` from the keyring and the file; True when one
    was there."""
    removed = _remove_from_keyring(KEYRING_SERVICE, provider_name)
    return _remove_from_file(provider_name) or removed


def stored_login(url: str) -> dict[str, Any] | None:
    """The MCP login record kept for the server at ``url``, or None."""
    found = _from_keyring(LOGINS_SERVICE, url)
    if found:
        with contextlib.suppress(ValueError):
            record = json_in.loads(found)
            if isinstance(record, dict):
                return record
    record = _read_file()["mcp_logins"].get(url)
    return record if isinstance(record, dict) else None


def store_login(url: str, record: dict[str, Any]) -> None:
    """Keep ``record`` as the MCP login of the server at ``url`` (keyring, else keys.json)."""
    backend = _keyring()
    if backend is not None:
        try:
            backend.set_password(LOGINS_SERVICE, url, json.dumps(record))
        except Exception:  # noqa: BLE001 - a keyring that fails to store: use the file
            pass
        else:
            _remove_login_from_file(url)
            return
    stored = _read_file()
    stored["mcp_logins"][url] = record
    _write_file(stored)


def remove_login(url: str) -> bool:
    """Forget the MCP login of the server at ``url``; True when there was one."""
    removed = _remove_from_keyring(LOGINS_SERVICE, url)
    return _remove_login_from_file(url) or removed


def _from_keyring(service: str, name: str) -> str | None:
    """``name``'s secret of ``service`` in the keyring; None when there is none or the keyring
    cannot be read (then the file is looked in)."""
    backend = _keyring()
    if backend is None:
        return None
    try:
        return backend.get_password(service, name)
    except Exception:  # noqa: BLE001 - any backend failure means "look in the file"
        return None


def _remove_from_keyring(service: str, name: str) -> bool:
    """Remove ``name``'s secret of ``service`` from the keyring; True when one was there."""
    backend = _keyring()
    if backend is None:
        return False
    try:
        if backend.get_password(service, name):
            backend.delete_password(service, name)
            return True
    except Exception:  # noqa: BLE001 - nothing to remove there, or it cannot be reached
        pass
    return False


def check_key(key: str) -> str:
    """``key`` without surrounding whitespace; KeyStoreError when empty or it has inner control
    characters or spaces (it goes into an HTTP header as is)."""
    key = key.strip()
    if not key:
        raise KeyStoreError("the key is empty")
    if any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 for ch in key):
        raise KeyStoreError("the key contains spaces or control characters; paste it on one line")
    return key


# ---------------------------------------------------------------------------------------------
# The system keyring, when there is a usable one
# ---------------------------------------------------------------------------------------------


def _keyring() -> Any | None:
    """The keyring backend, or None when the package is missing or only has a null/fail backend."""
    try:
        import keyring  # type: ignore[import-not-found]
    except Exception:  # noqa: BLE001 - ImportError, or a broken install
        return None
    try:
        backend = keyring.get_keyring()
        priority = float(getattr(backend, "priority", 0))
    except Exception:  # noqa: BLE001
        return None
    # keyring.backends.fail.Keyring (no backend found) has priority 0 and null.Keyring -1; a
    # real backend (Secret Service, macOS Keychain, Windows Credential Locker) is above 0.
    # PYTHON_KEYRING_BACKEND=keyring.backends.null.Keyring therefore selects the file.
    return backend if priority > 0 else None


# ---------------------------------------------------------------------------------------------
# keys.json
# ---------------------------------------------------------------------------------------------


def _read_file() -> dict[str, dict[str, Any]]:
    """keys.json's two sections: ``providers`` (name -> key) and ``mcp_logins`` (URL -> record)."""
    path = keys_file()
    shown = _display(path)
    try:
        with path.open("rb") as handle:
            mode = os.fstat(handle.fileno()).st_mode
            if os.name == "posix" and stat.S_IMODE(mode) & 0o077:
                raise KeyStoreError(
                    f"{shown} may be read by other users (mode {stat.S_IMODE(mode):o}); its keys"
                    f" are not used until you run: chmod 600 {shown}"
                )
            raw = handle.read()
    except FileNotFoundError:
        return {"providers": {}, "mcp_logins": {}}
    except OSError as exc:
        raise KeyStoreError(f"{shown}: cannot read: {exc.strerror}") from None
    try:
        data = json_in.loads(raw)
    except ValueError:
        # Not the decoder's message: it can quote the text around the error, which is a key.
        raise KeyStoreError(f"{shown} is not valid JSON; fix it or remove it and run totem auth set again") from None
    providers = data.get("providers", {}) if isinstance(data, dict) else None
    logins = data.get("mcp_logins", {}) if isinstance(data, dict) else None
    if not isinstance(providers, dict) or not isinstance(logins, dict):
        raise KeyStoreError(f'{shown}: expected an object {{"providers": {{"<name>": "<key>"}}}}')
    return {
        "providers": {str(name): value for name, value in providers.items() if isinstance(value, str) and value},
        "mcp_logins": {str(url): record for url, record in logins.items() if isinstance(record, dict)},
    }


def _write_file(stored: dict[str, dict[str, Any]]) -> None:
    path = keys_file()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    sections = {name: dict(sorted(entries.items())) for name, entries in stored.items() if entries or name == "providers"}
    data = json.dumps(sections, indent=2).encode("utf-8") + b"\n"
    # mkstemp creates the file 0600 (O_EXCL), so the key is never in a file others can open.
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".keys.", suffix=".totem-tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if os.name == "posix":
            os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _remove_from_file(provider_name: str, section: str = "providers") -> bool:
    if not keys_file().exists():
        return False
    stored = _read_file()
    if provider_name not in stored[section]:
        return False
    del stored[section][provider_name]
    _write_file(stored)
    return True


def _remove_login_from_file(url: str) -> bool:
    return _remove_from_file(url, "mcp_logins")


def _display(path: Path) -> str:
    try:
        return "~/" + path.relative_to(Path.home()).as_posix()
    except ValueError:
        return str(path)


__all__ = [
    "KEYRING_SERVICE",
    "KeyStoreError",
    "LOGINS_SERVICE",
    "api_key_for",
    "check_key",
    "keys_file",
    "remove_key",
    "remove_login",
    "store_key",
    "store_login",
    "stored_key",
    "stored_login",
]
