"""Totem's configuration: one pydantic model, read from TOML layers.

Why one module of this size (over 500 lines): every key's schema, default and untrusted class is
declared here once (docs/config.md follows it key by key, and a test checks the two agree).

Layers, later wins: the user file (``user_config_path()``), ``<project>/.totem/config.toml``,
the editor settings the language server passes in, then ``--config FILE``. Tables are merged
key by key at every depth; scalars and arrays are replaced whole. Each layer is validated on its
own first, so an error names the file it came from. docs/config.md is the user-facing reference;
keep the two in step.

Adding a key is one line on ``Config`` (or a nested model): merging, validation and the error
messages (including "did you mean") are driven by the model.
"""

from __future__ import annotations

import copy
import json
import re
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal, get_args, get_origin

import platformdirs
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    PrivateAttr,
    SecretStr,
    Tag,
    ValidationError,
    model_validator,
)
from pydantic_core import ErrorDetails, PydanticCustomError

from totem_engine import json_in
from totem_engine.config_error import ConfigError

Action = Literal["allow", "ask", "deny"]
Mode = Literal["build", "plan"]
ProviderKind = Literal["openai", "ollama", "anthropic", "gemini", "litellm"]
LayerKind = Literal["user", "project", "editor", "file"]

# Below this a run would stop before it could read, edit and check anything.
MIN_MAX_STEPS = 10


@dataclass(frozen=True)
class Untrusted:
    """What an untrusted project's ``.totem/config.toml`` may do with a top-level key.

    Every field of ``Config`` declares one (``Annotated[..., KEPT]``), so a key added later
    cannot be forgotten; trust.py applies them and docs/config.md lists them.

    - ``kept``: it may set the key (it runs nothing, sends nothing anywhere, loosens no limit);
    - ``dropped``: it may not (it chooses where requests go, runs commands, or spends more);
    - ``tighten``: it may only tighten: a number becomes the minimum of its value and the
      earlier layers' (or the default), where ``no_limit`` (``max_steps = 0``) is the loosest
      value, never the minimum; a choice the later of the two in ``order`` (loosest first);
    - ``rules``: permission rules: only its ``ask`` and ``deny`` rules are kept.
    """

    kind: Literal["kept", "dropped", "tighten", "rules"]
    no_limit: float | None = None
    order: tuple[str | bool, ...] = ()


KEPT = Untrusted("kept")
DROPPED = Untrusted("dropped")
RULES = Untrusted("rules")
TIGHTEN = Untrusted("tighten")


def _split_spec(spec: str) -> tuple[str, str] | None:
    """``"provider/model id"`` -> ``(provider, model id)``; the model id may contain slashes."""
    provider, sep, model_id = spec.partition("/")
    return (provider, model_id) if provider and sep and model_id else None


def _check_model_spec(spec: str) -> str:
    if _split_spec(spec) is None:
        raise PydanticCustomError(
            "model_spec", 'expected "<provider>/<model id>", e.g. "ollama/qwen2.5-coder"'
        )
    return spec


ModelSpec = Annotated[str, AfterValidator(_check_model_spec)]

# A permission rule is an action, or a table of pattern -> action. Choosing the branch by shape
# gives one error per mistake instead of one per union member.
Rule = Annotated[
    Annotated[Action, Tag("action")] | Annotated[dict[str, Action], Tag("patterns")],
    Discriminator(lambda v: "patterns" if isinstance(v, dict) else "action"),
]


class _Strict(BaseModel):
    # strict: TOML and JSON are typed, so "50" or true for a number is a mistake to report,
    # not to coerce.
    model_config = ConfigDict(extra="forbid", strict=True)


class ProviderConfig(_Strict):
    """``[providers.<name>]``: how to reach one provider."""

    kind: ProviderKind
    base_url: str | None = None
    api_key: SecretStr | None = None
    # Extra HTTP headers often carry credentials too, so they stay out of repr.
    headers: dict[str, str] = Field(default_factory=dict, repr=False)
    # kind "ollama": options.num_ctx is sized per request from ollama_ctx up, in steps of 4096,
    # never above the model's window or ollama_ctx_max (providers/ollama.py, context_size).
    ollama_ctx: int = Field(default=8192, gt=0)
    ollama_ctx_max: int | None = Field(default=None, gt=0)
    # Sampling temperature sent with every request; unset: the server's default.
    temperature: float | None = Field(default=None, ge=0, allow_inf_nan=False)

    def api_key_value(self) -> str | None:
        """The API key as plain text, for building requests only."""
        return self.api_key.get_secret_value() if self.api_key else None


class ModelOverride(_Strict):
    """``[models."<provider>/<model id>"]``: what the user knows of a model, over what the provider
    reports: its limits, and whether it sees images (a local server started with a vision
    projector, which no catalogue says)."""

    context_window: int | None = Field(default=None, gt=0)
    max_output_tokens: int | None = Field(default=None, gt=0)
    vision: bool | None = None


class SnapshotsConfig(_Strict):
    """``[snapshots]``: how much earlier file content is kept for undo (totem_engine.snapshots)."""

    max_bytes: int = Field(default=500 * 1024 * 1024, gt=0)
    max_age_days: float = Field(default=30.0, gt=0)
    # A file a command changed that is larger than this is recorded as not restorable.
    max_file_bytes: int = Field(default=10 * 1024 * 1024, gt=0)


class CheckConfig(_Strict):
    """``[checks.<name>]``: a command the project already has, whose output becomes findings."""

    command: str
    # How its output is read (checks/project.py): "path:line:col: message" lines, ruff's
    # --output-format=json, ESLint's json formatter, or SARIF 2.1.0.
    format: Literal["lines", "ruff-json", "eslint-json", "sarif"] = "lines"
    files: str = "*"


HookEvent = Literal[
    "PreToolUse", "PostToolUse", "UserPromptSubmit", "Stop", "SubagentStop", "SessionStart", "SessionEnd", "PreCompact",
    "Notification",
]


def _check_matcher(matcher: str | None) -> str | None:
    if matcher not in (None, "", "*"):  # "*": every one, as Claude Code writes it
        try:
            re.compile(matcher)
        except re.error as exc:
            raise PydanticCustomError("matcher", "not a regular expression: {problem}", {"problem": str(exc)}) from None
    return matcher


class HookConfig(_Strict):
    """``[[hooks.<event>]]``: one command the user runs at a lifecycle point (totem_engine/hooks/).
    ``matcher``: a regular expression, without case, on the tool's name (tool events) or the
    event's subject (SessionStart's source, ...); unset, "" or "*": every one."""

    matcher: Annotated[str | None, AfterValidator(_check_matcher)] = None
    command: str = Field(min_length=1)
    timeout: float = Field(default=60.0, gt=0, le=3600)


class Config(_Strict):
    """The merged configuration. Every key has a default, so ``Config()`` is valid.

    Shape (docs/config.md has every key)::

        model = "myserver/qwen2.5-coder"            # ModelSpec: "<provider>/<model id>"
        max_steps = 50                              # and the other scalars below
        [providers.myserver]                        # -> providers["myserver"]: ProviderConfig
        kind = "openai"
        [permission]                                # -> permission: {permission: Rule}
        bash = { "npm test" = "allow" }             # Rule: Action | {pattern: Action}
        [models."myserver/qwen2.5-coder"]           # -> models[spec]: ModelOverride
        context_window = 8192
        [snapshots]                                 # -> snapshots: SnapshotsConfig
        max_bytes = 524288000
    """

    model: Annotated[ModelSpec | None, DROPPED] = None
    small_model: Annotated[ModelSpec | None, DROPPED] = None
    max_steps: Annotated[int, Untrusted("tighten", no_limit=0)] = Field(default=50, ge=0)  # 0 = no cap; 1..9 are raised to MIN_MAX_STEPS
    retry_max_wait: Annotated[float, TIGHTEN] = Field(default=60.0, gt=0)
    max_agents: Annotated[int, TIGHTEN] = Field(default=3, ge=1)  # sub-agents (task calls) running at once
    # Background jobs (the job tool) left running when the user aborts a turn; False kills them.
    jobs_survive_abort: Annotated[bool, Untrusted("tighten", order=(True, False))] = False
    # Commands (bash, jobs, terminals) in a bubblewrap sandbox: the file system read-only but the
    # project (through an overlay), a private /tmp, no network; "auto" where it works (sandbox/).
    sandbox: Annotated[Literal["auto", "always", "never"], Untrusted("tighten", order=("never", "auto", "always"))] = "auto"
    # The sandbox's commands may reach the network (they share one namespace per session either way).
    sandbox_network: Annotated[bool, Untrusted("tighten", order=(True, False))] = False
    # Folders a sandboxed command may write besides the project (tool caches: "~/.npm", "~/.cache/pip").
    sandbox_writable: Annotated[list[str], DROPPED] = Field(default_factory=list)
    # Credential-looking variables a command run unasked keeps all the same (command_env.py).
    command_env_pass: Annotated[list[str], DROPPED] = Field(default_factory=list)
    # Code mode as a turn's shape (turn/scripts.py): "auto" by the model's record and evidence.
    code_mode: Annotated[Literal["auto", "always", "never"], KEPT] = "auto"
    # run_script's scripts may import the project's own modules (and so read the project).
    agent_mode: Annotated[bool, Untrusted("tighten", order=(True, False))] = False
    # Seconds for a whole provider request, and for its first byte and each gap between chunks.
    request_timeout: Annotated[float, TIGHTEN] = Field(default=1800.0, gt=0)
    stall_timeout: Annotated[float, TIGHTEN] = Field(default=300.0, gt=0)
    permission_timeout: Annotated[float, TIGHTEN] = Field(default=600.0, gt=0)
    # Under `totem acp`, bash runs in the client's terminal when the client offers `terminal`
    # (totem_acp/terminal.py): how the user's editor shows commands is the user's choice.
    acp_client_terminal: Annotated[bool, DROPPED] = True
    # Most bytes of one message from the editor to the language server (64 MiB); the editor's
    # connection is not the project's to set.
    lsp_max_message_bytes: Annotated[int, DROPPED] = Field(default=64 * 1024 * 1024, gt=0)
    mode: Annotated[Mode, Untrusted("tighten", order=("build", "plan"))] = "build"
    # thinking effort; None: the model's default. More effort spends more: not the project's choice.
    reasoning: Annotated[Literal["none", "low", "medium", "high"] | None, DROPPED] = None
    # Share of the model's window past which old tool results are compacted (compaction/).
    compact_at: Annotated[float, DROPPED] = Field(default=0.7, gt=0, le=1)
    providers: Annotated[dict[str, ProviderConfig], DROPPED] = Field(default_factory=dict)
    permission: Annotated[dict[str, Rule], RULES] = Field(default_factory=dict)
    # [models] could raise a model's window or output limit, so compaction would not run.
    models: Annotated[dict[ModelSpec, ModelOverride], DROPPED] = Field(default_factory=dict)
    snapshots: Annotated[SnapshotsConfig, DROPPED] = Field(default_factory=SnapshotsConfig)
    checks: Annotated[dict[str, CheckConfig], DROPPED] = Field(default_factory=dict)  # runs commands
    # [format]: "<glob>" = "command {file}", run on a file after the agent saved it
    # (checks/formatter.py); the first glob that matches wins.
    format: Annotated[dict[str, str], DROPPED] = Field(default_factory=dict)
    # Total.js conventions (docs/conventions.md): is this a Total.js project, and are its
    # conventions checked. "auto": package.json depends on total5, or the folder is new.
    totaljs: Annotated[Literal["auto", "always", "never"], KEPT] = "auto"
    conventions: Annotated[bool, KEPT] = True
    # Forge, the Total.js documentation as an MCP server (docs/config.md "Forge", mcp/forge.py):
    # declared in a Total.js project unless false (a project may only switch it off); its address
    # (the user's alone: it is where the prompts' searches go); how many of its pages go into the
    # first request of a turn, and the characters of each (forge/prefetch.py).
    forge: Annotated[bool, Untrusted("tighten", order=(True, False))] = True
    forge_url: Annotated[str, DROPPED] = Field(default="https://forge.totaljs.es/mcp/", pattern=r"^https?://")
    forge_pages: Annotated[int, TIGHTEN] = Field(default=2, ge=0)
    forge_chars: Annotated[int, TIGHTEN] = Field(default=3000, ge=200)
    # Totem's own local model (docs/local.md): where `totem local setup` installs llama-server
    # and the model (default: <user data dir>/local), the server's loopback port (default: a
    # free one), its context size and the sampling temperature sent to it (0: the same answer to
    # the same request, which a 1.5B model needs to write well-formed calls).
    local_dir: Annotated[str | None, DROPPED] = None
    local_port: Annotated[int | None, DROPPED] = Field(default=None, gt=0, le=65535)
    local_ctx: Annotated[int, DROPPED] = Field(default=8192, ge=512)
    local_temperature: Annotated[float, DROPPED] = Field(default=0.0, ge=0, allow_inf_nan=False)
    # The command that runs the project's tests after a small model's change (verify.py); unset:
    # pytest when the project has Python test files and pytest is importable; "": never.
    test_command: Annotated[str | None, DROPPED] = None
    # How many more times a small model's turn may start over from the request when its change
    # leaves those tests failing (turn/small.py ``afresh``); 0: never.
    fresh_attempts: Annotated[int, DROPPED] = Field(default=3, ge=0)

    # MCP servers (docs/config.md "MCP servers", totem_engine/mcp/): seconds a server has to start
    # and answer the handshake; seconds one tool call may take; seconds without a turn after which
    # the language server stops the servers (0: only at shutdown); and the command lines or URLs
    # (as the start question shows them) that start without asking, even under --yes for a server
    # that is not on this machine. A project must not choose what starts without asking.
    mcp_start_timeout: Annotated[float, TIGHTEN] = Field(default=20.0, gt=0)
    mcp_call_timeout: Annotated[float, TIGHTEN] = Field(default=300.0, gt=0)
    mcp_idle_stop: Annotated[float, Untrusted("tighten", no_limit=0)] = Field(default=600.0, ge=0)
    mcp_allow: Annotated[list[str], DROPPED] = Field(default_factory=list)
    # Share of the model's window past which the MCP tools' schemas are offered by name and one
    # line, with one tool that gives a chosen tool's schema (mcp/deferred.py); smaller defers sooner.
    mcp_schema_share: Annotated[float, TIGHTEN] = Field(default=0.1, gt=0, le=1)
    # The bearer token `totem mcp serve --http` requires (unset: a new one, printed once at
    # start); a secret, so only the user's own config layers may set it.
    mcp_serve_token: Annotated[SecretStr | None, DROPPED] = None
    # The user's commands at the turn's lifecycle points (docs/config.md "Hooks"): a project's are
    # its code, so an untrusted project's are ignored. Gathered layer by layer (hooks/spec.py):
    # the user's and the project's both run.
    hooks: Annotated[dict[HookEvent, list[HookConfig]], DROPPED] = Field(default_factory=dict)

    _notes: list[str] = PrivateAttr(default_factory=list)

    @model_validator(mode="after")
    def _raise_low_max_steps(self) -> Config:
        if 0 < self.max_steps < MIN_MAX_STEPS:
            self._notes.append(
                f"max_steps = {self.max_steps} was raised to {MIN_MAX_STEPS}, the smallest cap"
                " that leaves room to read, edit and check"
            )
            self.max_steps = MIN_MAX_STEPS
        return self

    @property
    def chosen_max_steps(self) -> int | None:
        """``max_steps`` when a layer set it, else None: the model's tier decides (turn/terms.py
        ``round_budget``). A layer's keys are the fields pydantic was given (``model_fields_set``)."""
        return self.max_steps if "max_steps" in self.model_fields_set else None

    @property
    def notes(self) -> list[str]:
        """Adjustments made while validating, worded for the user (e.g. a raised max_steps)."""
        return list(self._notes)

    def provider_and_model(self, spec: str | None = None) -> tuple[str, str]:
        """Split ``spec`` (default: ``self.model``) into ``(provider name, model id)``.

        Splits at the first "/": ``"or/meta/llama"`` -> ``("or", "meta/llama")``. Raises
        ConfigError when there is no spec, it has no "/", or the provider is not configured.
        """
        spec = spec if spec is not None else self.model
        if spec is None:
            raise ConfigError(
                f'no model configured: set model = "<provider>/<model id>" in {_display(user_config_path())} '
                "(docs/config.md), add a provider with `totem providers add TEMPLATE NAME`, "
                "or install a local model with `totem local setup`"
            )
        parts = _split_spec(spec)
        if parts is None:
            raise ConfigError(f'model "{spec}": expected "<provider>/<model id>"')
        provider = parts[0]
        if provider not in self.providers:
            known = ", ".join(f'"{p}"' for p in self.providers) or "none"
            raise ConfigError(
                f'model "{spec}": provider "{provider}" is not configured'
                f" (configured providers: {known}); add a [providers.{_toml_key(provider)}] table"
            )
        return parts


def untrusted_class(key: str) -> Untrusted:
    """The ``Untrusted`` class a top-level ``Config`` key declares; KeyError for an unknown key."""
    for item in Config.model_fields[key].metadata:
        if isinstance(item, Untrusted):
            return item
    raise KeyError(f"Config.{key} declares no Untrusted class")


@dataclass(frozen=True)
class ConfigLayer:
    """One source's raw settings, already validated on their own.

    ``data`` is the TOML (or editor settings) as read, a nested dict; it is kept raw so later
    code can drop keys before ``merge_layers``. Hidden from repr because it may hold API keys.
    """

    source: str
    kind: LayerKind
    data: dict[str, Any] = field(repr=False)


@dataclass(frozen=True)
class LoadedConfig:
    """What ``load_config`` found: the merged config and the layers it came from, in order."""

    config: Config
    layers: list[ConfigLayer]


def user_config_path() -> Path:
    """The user file, e.g. ``~/.config/totem/config.toml`` on Linux (honours XDG_CONFIG_HOME)."""
    return Path(platformdirs.user_config_dir("totem")) / "config.toml"


MAX_CONFIG_DEPTH = 32
"""Levels of tables and arrays a config layer may nest (its deepest key needs four)."""


def project_config_path(project_root: Path) -> Path:
    return project_root / ".totem" / "config.toml"


def load_config(
    project_root: Path | None,
    *,
    config_file: Path | None = None,
    editor_settings: dict[str, Any] | None = None,
) -> LoadedConfig:
    """Read, validate and merge every layer; raise ConfigError naming the faulty source.

    Missing user and project files are skipped; a ``config_file`` the user named must exist.
    """
    layers: list[ConfigLayer] = []
    found: list[tuple[LayerKind, Path]] = [("user", user_config_path())]
    if project_root is not None:
        found.append(("project", project_config_path(project_root)))
    for kind, path in found:
        data = _read_toml(path)
        if data is not None:
            layers.append(_layer(_display(path), kind, data))
    if editor_settings is not None:
        layers.append(_layer("editor settings", "editor", copy.deepcopy(editor_settings)))
    if config_file is not None:
        source = _display(config_file)
        data = _read_toml(config_file)
        if data is None:
            raise ConfigError(f"{source}: file not found", source=source)
        layers.append(_layer(source, "file", data))
    return LoadedConfig(config=merge_layers(layers), layers=layers)


def merge_layers(layers: Iterable[ConfigLayer]) -> Config:
    """Deep-merge the layers' data in order (later wins) and validate the result.

    Errors only the merge can reveal (a required key no layer set) name all merged sources.
    """
    merged: dict[str, Any] = {}
    sources: list[str] = []
    for layer in layers:
        merged = _deep_merge(merged, layer.data)
        sources.append(layer.source)
    source = " + ".join(sources) or "defaults"
    try:
        return Config.model_validate(merged)
    except ValidationError as exc:
        raise _config_error(source, exc.errors(), merged) from None


def _layer(source: str, kind: LayerKind, data: dict[str, Any]) -> ConfigLayer:
    # A layer may be partial: [providers.x] in the project file may set only base_url while
    # kind comes from the user file, so required keys are checked after the merge.
    if json_in.nested_deeper_than(data, MAX_CONFIG_DEPTH):  # merging and validating recurse
        raise ConfigError(f"{source}: nested deeper than {MAX_CONFIG_DEPTH} levels", source=source)
    try:
        Config.model_validate(data)
    except ValidationError as exc:
        problems = [e for e in exc.errors() if e["type"] != "missing"]
        if problems:
            raise _config_error(source, problems, data) from None
    return ConfigLayer(source=source, kind=kind, data=data)


def _read_toml(path: Path) -> dict[str, Any] | None:
    """The parsed file, or None when it does not exist."""
    source = _display(path)
    try:
        with path.open("rb") as f:
            return tomllib.load(f)
    except FileNotFoundError:
        return None
    except tomllib.TOMLDecodeError as exc:
        # The message carries "(at line L, column C)".
        raise ConfigError(f"{source}: invalid TOML: {exc}", source=source) from None
    except RecursionError:  # tomllib has no nesting bound of its own
        raise ConfigError(f"{source}: nested deeper than {MAX_CONFIG_DEPTH} levels", source=source) from None
    except UnicodeDecodeError:
        raise ConfigError(f"{source}: not valid UTF-8", source=source) from None
    except OSError as exc:
        raise ConfigError(f"{source}: cannot read: {exc.strerror}", source=source) from None


def _display(path: Path) -> str:
    """``path`` as users write it: under the home directory it starts with ``~``."""
    try:
        return "~/" + path.relative_to(Path.home()).as_posix()
    except ValueError:
        return str(path)


def _deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """Tables merge key by key; anything else in ``over`` replaces. Inputs are not mutated."""
    merged = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _config_error(source: str, errors: list[ErrorDetails], data: Any) -> ConfigError:
    """One line per problem. Raise it ``from None``: pydantic's own message echoes input
    values, which may be secrets."""
    lines = [f"{source}: {_describe_error(e, data)}" for e in errors]
    return ConfigError("\n".join(lines), source=source)


# Pydantic error type -> what the user should have written; templates take the error's ctx.
_EXPECTED = {
    "int_type": "expected an integer",
    "float_type": "expected a number",
    "string_type": "expected a string",
    "bool_type": "expected true or false",
    "dict_type": "expected a table",
    "model_type": "expected a table",
    "list_type": "expected an array",
    "literal_error": "expected one of {expected}",
    "greater_than": "expected more than {gt:g}",
    "greater_than_equal": "expected at least {ge:g}",
    "less_than_equal": "expected at most {le:g}",
}

# Values under these keys are never echoed in messages.
_SECRET_KEYS = {"api_key", "headers"}


def _describe_error(error: ErrorDetails, data: Any) -> str:
    """``"<key path>: <problem>"``, or just the problem at the top level."""
    path = _key_path(error, data)
    if error["type"] == "extra_forbidden":
        # The path is the table's; the unknown key is named in the problem.
        key, path = path[-1], path[:-1]
        known = _known_keys(path)
        close = closest_key(key, known)
        if close:
            problem = f'unknown key "{key}"; did you mean "{close}"?'
        else:
            problem = f'unknown key "{key}"; known keys: {", ".join(known)}'
    elif error["type"] == "missing":
        key, path = path[-1], path[:-1]
        problem = f'missing required key "{key}"'
    else:
        template = _EXPECTED.get(error["type"])
        problem = template.format(**error.get("ctx", {})) if template else error["msg"]
        if not _SECRET_KEYS.intersection(path):
            problem += f", got {_show(error['input'])}"
    return ": ".join([_dotted(path), problem] if path else [problem])


def _dotted(path: list[str | int]) -> str:
    """``hooks.PreToolUse[0].matcher``: keys joined by dots, an array's index in brackets."""
    return "".join(f"[{k}]" if isinstance(k, int) else ("." if i else "") + _toml_key(k) for i, k in enumerate(path))


def closest_key(key: str, known: Iterable[str]) -> str | None:
    """The known key that ``key`` is most likely a typo of, or None when none is close.

    Closeness is the number of typing slips between them: a letter added, dropped or changed,
    or two neighbours swapped (Damerau-Levenshtein, optimal string alignment), so "modle" is one
    slip from "model" (difflib's ratio preferred "mode"). At most a third of the key's length,
    one at least. On a tie, fewer changed letters win ("modell" is "model" with a letter
    doubled, more likely than "models" with one changed), then the known key of the key's
    length, then the alphabetically first."""
    limit = max(1, len(key) // 3)
    # A length differing by more than the limit is more slips than that: not worth aligning.
    near = [name for name in known if abs(len(name) - len(key)) <= limit]
    scored = [(*_slips(key, name), abs(len(name) - len(key)), name) for name in near]
    best = min((s for s in scored if s[0] <= limit), default=None)
    return best[-1] if best else None


def _slips(a: str, b: str) -> tuple[int, int]:
    """(edits, changed letters among them) of the optimal string alignment of ``a`` into ``b``,
    the fewest edits first, then the fewest changed letters."""
    rows = [[(j, 0) for j in range(len(b) + 1)]]
    for i in range(1, len(a) + 1):
        row = [(i, 0)]
        for j in range(1, len(b) + 1):
            above, left, diagonal = rows[i - 1][j], row[j - 1], rows[i - 1][j - 1]
            changed = a[i - 1] != b[j - 1]
            options = [(above[0] + 1, above[1]), (left[0] + 1, left[1]), (diagonal[0] + changed, diagonal[1] + changed)]
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                swapped = rows[i - 2][j - 2]
                options.append((swapped[0] + 1, swapped[1]))
            row.append(min(options))
        rows.append(row)
    return rows[-1][-1]


def _key_path(error: ErrorDetails, data: Any) -> list[str | int]:
    """The TOML key path of an error: its loc without pydantic's own parts (union tags, "[key]").

    Those parts are found by walking ``data``: a real key is one the data has.
    """
    path: list[str | int] = []
    node = data
    for part in error["loc"]:
        if isinstance(node, dict) and part in node:
            path.append(str(part))
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            path.append(part)  # an array's index: [[hooks.Stop]]'s first table is 0
            node = node[part]
    if error["type"] == "missing":
        path.append(str(error["loc"][-1]))
    return path


def _known_keys(path: list[str | int]) -> list[str]:
    """The keys allowed in the table at ``path``, found by walking the models' annotations."""
    tp: Any = Config
    for part in path:
        if isinstance(tp, type) and issubclass(tp, BaseModel) and part in tp.model_fields:
            tp = tp.model_fields[part].annotation
        elif get_origin(tp) is dict:
            tp = get_args(tp)[1]
        elif get_origin(tp) is list and isinstance(part, int):
            tp = get_args(tp)[0]
        else:
            return []
    return list(tp.model_fields) if isinstance(tp, type) and issubclass(tp, BaseModel) else []


_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def _toml_key(key: str) -> str:
    """A key as TOML spells it: quoted unless it is a bare key."""
    return key if _BARE_KEY.fullmatch(key) else json.dumps(key)


def _show(value: Any) -> str:
    """A short TOML-like rendering of a wrong value."""
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value if len(value) <= 60 else value[:57] + "...")
    return repr(value)
