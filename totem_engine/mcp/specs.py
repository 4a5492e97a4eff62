"""The MCP servers a project may use, as ``mcp.json`` files declare them.

Two files, the project's winning by name: the user's ``mcp.json`` beside ``config.toml``
(``~/.config/totem/mcp.json``) and the project's ``.totem/mcp.json``. Shape (docs/config.md
"MCP servers")::

    {"servers": {
        "fs":   {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."],
                 "env": {"NODE_OPTIONS": "--no-warnings"}},
        "docs": {"url": "http://127.0.0.1:8931/mcp", "headers": {"Authorization": "Bearer ..."}},
        "old":  {"command": "old-server", "enabled": false}
    }}

A server is either stdio (``command``, ``args``, ``env``) or streamable HTTP (``url``,
``headers``), never both. A file that does not parse or has an unknown key is a ``ConfigError``
naming the file, as a broken ``config.toml`` is.
"""

from __future__ import annotations

import ipaddress
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

import platformdirs
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from totem_engine import json_in
from totem_engine.config_error import ConfigError
from totem_engine.redaction import PUBLIC_HEADERS, know, url_secrets

# "builtin": declared by Totem itself (mcp/forge.py), replaced by a file's server of its name;
# "client": given by the front end (ACP session/new).
Source = Literal["builtin", "user", "project", "client"]


class _ServerEntry(BaseModel):
    """One entry of ``servers`` as the file holds it."""

    model_config = ConfigDict(extra="forbid", strict=True)

    command: str | None = Field(default=None, min_length=1)
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    url: str | None = Field(default=None, min_length=1)
    headers: dict[str, str] = Field(default_factory=dict, repr=False)
    enabled: bool = True

    @model_validator(mode="after")
    def _one_transport(self) -> _ServerEntry:
        if (self.command is None) == (self.url is None):
            raise ValueError('give either "command" (a stdio server) or "url" (a streamable HTTP server)')
        if self.url is not None and (self.args or self.env):
            raise ValueError('"args" and "env" belong to a stdio server ("command"), not to a "url"')
        if self.command is not None and self.headers:
            raise ValueError('"headers" belong to a streamable HTTP server ("url"), not to a "command"')
        if self.url is not None and urlsplit(self.url).scheme not in ("http", "https"):
            raise ValueError('"url" must start with http:// or https://')
        return self


class _McpFile(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    servers: dict[str, _ServerEntry] = Field(default_factory=dict)


@dataclass(frozen=True)
class ServerSpec:
    """One declared server. ``source``: the file it came from (``user`` or ``project``), or
    ``client`` for one the front end's client declared (an ACP client's ``mcpServers``), or
    ``builtin``; ``path``: that file (for a client's, the request that declared it; a built-in
    one's: the user's mcp.json, where a server of its name would replace it), for messages. A
    built-in server may also say that it reaches outside this machine whatever its address
    (``outside``: Forge stands for a third-party site, also when a test points it to loopback),
    which of its tools are offered (``only_tools``; None: all) and what its start question says
    (``question``; empty: start.py's wording)."""

    name: str
    source: Source
    path: Path
    command: str | None = None
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    url: str | None = None
    headers: tuple[tuple[str, str], ...] = ()
    enabled: bool = True
    outside: bool = False
    only_tools: frozenset[str] | None = None
    question: str = ""

    @property
    def transport(self) -> Literal["stdio", "http"]:
        return "stdio" if self.command is not None else "http"

    @property
    def target(self) -> str:
        """What starting it means, as the start question shows it and an "always" answer is bound
        to: the command line (shell-quoted) or the URL."""
        if self.command is not None:
            return shlex.join([self.command, *self.args])
        assert self.url is not None
        return self.url

    @property
    def remote(self) -> bool:
        """A URL server whose host is not this machine: its requests leave it, so ``--yes`` does not
        start it (docs/config.md ``mcp_allow``)."""
        return self.outside or (self.url is not None and not is_loopback(urlsplit(self.url).hostname or ""))


def is_loopback(host: str) -> bool:
    """``localhost`` or an address of 127.0.0.0/8 or ::1."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def user_mcp_path() -> Path:
    """The user's ``mcp.json``, beside ``config.toml`` (config.user_config_path)."""
    return Path(platformdirs.user_config_dir("totem")) / "mcp.json"


def project_mcp_path(root: Path) -> Path:
    return root / ".totem" / "mcp.json"


def load_specs(root: Path) -> dict[str, ServerSpec]:
    """Every declared server by name, the project's entry replacing the user's of the same name
    (also a disabled one: the project switches the user's server off for itself). Raises
    ConfigError naming the file that is not valid."""
    specs: dict[str, ServerSpec] = {}
    for source, path in (("user", user_mcp_path()), ("project", project_mcp_path(root))):
        for spec in read_specs(path, source):
            specs[spec.name] = spec
    return specs


def read_specs(path: Path, source: Source) -> list[ServerSpec]:
    """The servers of one file, in its order; none when it does not exist."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}", source=str(path)) from None
    try:
        data = json_in.loads(text, what="the file")
    except ValueError as exc:
        raise ConfigError(f"{path}: invalid JSON: {exc}", source=str(path)) from None
    try:
        parsed = _McpFile.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'file'}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"{path}: {problems}", source=str(path)) from None
    for entry in parsed.servers.values():  # kept out of every text that leaves the engine
        know([v for k, v in entry.headers.items() if k.lower() not in PUBLIC_HEADERS] + list(url_secrets(entry.url)))
    return [
        ServerSpec(
            name=name, source=source, path=path, command=entry.command, args=tuple(entry.args),
            env=tuple(entry.env.items()), url=entry.url, headers=tuple(entry.headers.items()), enabled=entry.enabled,
        )
        for name, entry in parsed.servers.items()
    ]
