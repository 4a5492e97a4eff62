"""The capability record: what a model can do, decided by the model, not by who sells it.

``record_for`` builds a record from, in order of precedence: the user's overrides
(``[models."<provider>/<model>"]``: the window, output limit and ``vision``), the provider's own metadata
(``ModelInfo``), the table shipped in ``capabilities.json`` (model-id patterns for the Claude,
Gemini, DeepSeek and GPT families and a few open models), then the defaults: an unknown
OpenAI-compatible model starts with native tool calls, assumed reliable, window unknown.

``after_step`` updates a record by evidence from one step: a model that was offered tools, sent
no native call and wrote a parsable call in its text gets ``tool_call_format="text"``; malformed
calls, or prose that describes an edit instead of making one, mark ``tools_reliable=False``.

``CapabilityCache`` keeps model catalogues (a day) and records (a day; a record changed by
evidence, 30 days) under the user's cache directory, so the next session starts knowing.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import anyio

from .base import ModelInfo

log = logging.getLogger(__name__)

Tier = Literal["small", "medium", "large"]
CallFormat = Literal["native", "text"]

TABLE_FILE = "capabilities.json"
# Provider kinds whose reasoning, when the server reports the model thinks, arrives as text that
# ends with </think> (Ollama with thinking off still writes it).
THINK_TAG_KINDS = frozenset({"ollama"})
DEFAULT_OUTPUT_BUDGET = 50_000  # ToolContext's default, for a window nobody knows
MIN_OUTPUT_BUDGET = 4_000
GOOD_ROUNDS_FOR_PROSE = 3  # after this many good tool rounds, an answer in prose is fine


@dataclass(frozen=True)
class CapabilityRecord:
    """What the loop reads about a model. Frozen: evidence makes a new record.

    ``think_tags``: the model writes its thoughts into the text, ended by ``</think>``
    (``reasoning`` alone says it thinks, which most vendors stream apart from the text).
    ``code_mode``: the model's requests are answered in code mode (turn/scripts.py): the table
    says so, or a script did the change it was caught describing in prose.
    ``source``: where the record came from (``default``, ``table``, ``provider``); ``evidence``:
    a step changed it (such records are kept longer by the cache).
    """

    native_tools: bool = True
    tools_reliable: bool = True
    tool_call_format: CallFormat = "native"
    context_window: int | None = None
    max_output_tokens: int | None = None
    vision: bool = False
    reasoning: bool = False
    tier: Tier = "medium"
    think_tags: bool = False
    code_mode: bool = False
    source: str = "default"
    evidence: bool = False

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "CapabilityRecord":
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


# ---------------------------------------------------------------------------------------------
# The table
# ---------------------------------------------------------------------------------------------

_RECORD_KEYS = frozenset(
    {"native_tools", "tools_reliable", "tool_call_format", "context_window", "max_output_tokens",
     "vision", "reasoning", "tier", "think_tags", "code_mode"}
)


@dataclass(frozen=True)
class _Family:
    pattern: re.Pattern[str]
    providers: frozenset[str] | None
    values: dict[str, Any] = field(default_factory=dict)


@lru_cache(maxsize=1)
def load_table() -> tuple[_Family, ...]:
    """The families of ``capabilities.json``, in order (the first match wins)."""
    text = resources.files(__package__).joinpath(TABLE_FILE).read_text(encoding="utf-8")
    families = []
    for entry in json.loads(text)["families"]:
        providers = entry.get("providers")
        families.append(
            _Family(
                pattern=re.compile(entry["pattern"], re.IGNORECASE),
                providers=frozenset(providers) if providers else None,
                values={k: v for k, v in entry.items() if k in _RECORD_KEYS},
            )
        )
    return tuple(families)


def table_entry(provider_kind: str, model_id: str) -> dict[str, Any] | None:
    """The table's values for this model, or None when no family matches."""
    for family in load_table():
        if family.providers is not None and provider_kind not in family.providers:
            continue
        if family.pattern.search(model_id):
            return dict(family.values)
    return None


_SIZE = re.compile(r"(?<![\d.])(\d+(?:\.\d+)?)\s*b(?![a-z])", re.IGNORECASE)


def tier_from_size(model_id: str) -> Tier | None:
    """The tier an open model's parameter count suggests (``qwen2.5-coder:7b``, ``llama3.1-70b``):
    up to 8B small, up to 40B medium, above that large. None without a size in the id."""
    sizes = [float(m.group(1)) for m in _SIZE.finditer(model_id)]
    if not sizes:
        return None
    size = max(sizes)
    return "small" if size <= 8 else "medium" if size <= 40 else "large"


def _override(overrides: Any, key: str) -> int | None:
    if overrides is None:
        return None
    value = overrides.get(key) if isinstance(overrides, Mapping) else getattr(overrides, key, None)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def record_for(
    provider_kind: str,
    model_id: str,
    info: ModelInfo | None = None,
    overrides: Any = None,
) -> CapabilityRecord:
    """The record for ``model_id`` served by a provider of ``provider_kind``.

    ``overrides``: a mapping or object with ``context_window`` / ``max_output_tokens`` /
    ``vision`` (the config's ``ModelOverride``); they win over everything. Then ``info`` (the provider's own
    metadata), then the table, then the defaults.
    """
    values: dict[str, Any] = {}
    source = "default"
    entry = table_entry(provider_kind, model_id)
    if entry is not None:
        values.update(entry)
        source = "table"
    if "tier" not in values:
        values["tier"] = tier_from_size(model_id) or "medium"

    if info is not None:
        provided = False
        if info.context_window:
            values["context_window"] = info.context_window
            provided = True
        if info.tools is not None:
            provided = True
            values["native_tools"] = info.tools
            if not info.tools:
                values["tool_call_format"] = "text"
        if info.reasoning is not None:
            provided = True
            values["reasoning"] = info.reasoning
            if provider_kind in THINK_TAG_KINDS:
                values["think_tags"] = info.reasoning
        if info.vision is not None:
            provided = True
            values["vision"] = info.vision
        output = info.extra.get("max_output_tokens") if info.extra else None
        if isinstance(output, int) and not isinstance(output, bool) and output > 0:
            values["max_output_tokens"] = output
            provided = True
        if provided:
            source = "provider"

    for key in ("context_window", "max_output_tokens"):
        value = _override(overrides, key)
        if value is not None:
            values[key] = value
    vision = overrides.get("vision") if isinstance(overrides, Mapping) else getattr(overrides, "vision", None)
    if isinstance(vision, bool):
        values["vision"] = vision
    return CapabilityRecord(**values, source=source)


# ---------------------------------------------------------------------------------------------
# Evidence
# ---------------------------------------------------------------------------------------------


def after_step(
    record: CapabilityRecord,
    *,
    tools_offered: bool,
    native_calls: int,
    text_calls: int,
    malformed_calls: int,
    prose_edit: bool,
    good_rounds: int = 0,
) -> CapabilityRecord:
    """The record updated by what one step showed (the same record when it showed nothing).

    - tools offered, no native call, a parsable call in the text: ``tool_call_format="text"``;
    - a malformed tool call (native arguments that are not JSON, markup that does not parse):
      ``tools_reliable=False``;
    - tools offered, no call of either kind, and prose that describes an edit instead of making
      it: ``tools_reliable=False``, unless the model already made ``GOOD_ROUNDS_FOR_PROSE`` good
      tool rounds in this request (then prose is often the right answer).
    """
    if not tools_offered:
        return record
    changes: dict[str, Any] = {}
    if native_calls == 0 and text_calls > 0 and record.tool_call_format != "text":
        changes["tool_call_format"] = "text"
    if malformed_calls > 0 and record.tools_reliable:
        changes["tools_reliable"] = False
    if (
        prose_edit
        and native_calls == 0
        and text_calls == 0
        and good_rounds < GOOD_ROUNDS_FOR_PROSE
        and record.tools_reliable
    ):
        changes["tools_reliable"] = False
    if not changes:
        return record
    return dataclasses.replace(record, **changes, evidence=True)


def with_evidence(fresh: CapabilityRecord, remembered: CapabilityRecord | None) -> CapabilityRecord:
    """``fresh`` (built now, with today's overrides and metadata) keeping what evidence taught
    an earlier session: the call format, reliability and code mode of a remembered evidence record."""
    if remembered is None or not remembered.evidence:
        return fresh
    return dataclasses.replace(
        fresh,
        tool_call_format=remembered.tool_call_format,
        tools_reliable=fresh.tools_reliable and remembered.tools_reliable,
        code_mode=fresh.code_mode or remembered.code_mode,
        evidence=True,
    )


_FENCED_BLOCK = re.compile(r"^```[^\n]*\n(.*?)^```", re.S | re.M)
_EDIT_WORDS = re.compile(
    r"\b("
    r"replace|replacing|change (?:line|the line|lines|it to|this to|the code|the file)|"
    r"update (?:the|your) (?:file|code|function)|modify (?:the|your) (?:file|code|function)|"
    r"edit (?:the|your) (?:file|code)|in (?:the|your) file|add (?:the following|this) (?:to|at|in)|"
    r"(?:here is|here's|below is) the (?:updated|modified|corrected|fixed|new) (?:code|file|version|function)|"
    r"(?:the )?(?:updated|modified|corrected) (?:code|file|version)|should (?:now )?look like|"
    r"reemplaza|cambia (?:la línea|el código|el archivo)|actualiza el archivo|modifica el (?:archivo|código)|"
    r"aquí está el código (?:actualizado|corregido)"
    r")\b",
    re.IGNORECASE,
)


def detect_prose_edit(text: str) -> bool:
    """Whether ``text`` describes an edit instead of making it: a fenced code block together with
    words that tell the reader to change a file. The caller checks that no call was made.

    A reply that ends by asking the user something is research, not an evaded edit.
    """
    if not any(block.group(1).strip() for block in _FENCED_BLOCK.finditer(text)):
        return False
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if lines and lines[-1].endswith("?"):
        return False
    prose = _FENCED_BLOCK.sub(" ", text)  # words inside the code do not count
    return bool(_EDIT_WORDS.search(prose))


def output_budget(record: CapabilityRecord | None, default: int = DEFAULT_OUTPUT_BUDGET) -> int:
    """The characters one tool result may hold: a quarter of the window, at ~4 characters a
    token (window * 4 / 4 = window). Unknown window: ``default``."""
    if record is None or not record.context_window:
        return default
    return max(record.context_window, MIN_OUTPUT_BUDGET)


# ---------------------------------------------------------------------------------------------
# The cache
# ---------------------------------------------------------------------------------------------

DAY = 24 * 3600.0
CATALOGUE_TTL = DAY
RECORD_TTL = DAY
EVIDENCE_TTL = 30 * DAY


def default_cache_dir() -> Path:
    import platformdirs

    return Path(platformdirs.user_cache_dir("totem")) / "capabilities"


class CapabilityCache:
    """Model catalogues and capability records on disk (diskcache), with expiry.

    Every disk call runs in a worker thread; a broken or unwritable cache never fails a run
    (reads give None, writes are dropped). ``clock`` (seconds) decides expiry; diskcache's own
    expiry is set as well, so stale entries are also culled from the disk.
    """

    def __init__(self, directory: Path | str | None = None, *, clock: Callable[[], float] = time.time):
        self.directory = Path(directory) if directory is not None else default_cache_dir()
        self.clock = clock
        self._cache: Any = None
        self._lock = anyio.Lock()

    async def _open(self) -> Any:
        async with self._lock:
            if self._cache is None:
                import diskcache

                self._cache = await anyio.to_thread.run_sync(lambda: diskcache.Cache(str(self.directory)))
            return self._cache

    async def _get(self, key: str) -> Any:
        try:
            cache = await self._open()
            entry = await anyio.to_thread.run_sync(cache.get, key)
        except Exception as exc:  # a cache is a convenience: never a reason to fail
            log.warning("capability cache unreadable: %s", exc)
            return None
        if not isinstance(entry, dict) or "until" not in entry:
            return None
        if self.clock() >= entry["until"]:
            return None
        return entry.get("value")

    async def _set(self, key: str, value: Any, ttl: float) -> None:
        entry = {"until": self.clock() + ttl, "value": value}
        try:
            cache = await self._open()
            await anyio.to_thread.run_sync(lambda: cache.set(key, entry, expire=ttl))
        except Exception as exc:
            log.warning("capability cache unwritable: %s", exc)

    # -- catalogues ----------------------------------------------------------------------------

    async def get_models(self, key: str) -> list[ModelInfo] | None:
        """The catalogue stored under ``key`` (e.g. ``"<provider name>|<base_url>"``), or None."""
        value = await self._get(f"models:{key}")
        if not isinstance(value, list):
            return None
        try:
            return [ModelInfo(**item) for item in value]
        except TypeError:
            return None

    async def put_models(self, key: str, models: list[ModelInfo], ttl: float = CATALOGUE_TTL) -> None:
        await self._set(f"models:{key}", [dataclasses.asdict(m) for m in models], ttl)

    async def models(
        self, key: str, fetch: Callable[[], Awaitable[list[ModelInfo]]], *, refresh: bool = False
    ) -> list[ModelInfo]:
        """The catalogue from the cache, or from ``fetch`` (a provider's ``models``), stored."""
        if not refresh:
            cached = await self.get_models(key)
            if cached is not None:
                return cached
        fetched = await fetch()
        await self.put_models(key, fetched)
        return fetched

    # -- records -------------------------------------------------------------------------------

    async def get_record(self, provider: str, model_id: str) -> CapabilityRecord | None:
        value = await self._get(f"record:{provider}/{model_id}")
        if not isinstance(value, dict):
            return None
        try:
            return CapabilityRecord.from_dict(value)
        except TypeError:
            return None

    async def put_record(self, provider: str, model_id: str, record: CapabilityRecord) -> None:
        """Stored a day, or 30 days when evidence shaped it."""
        ttl = EVIDENCE_TTL if record.evidence else RECORD_TTL
        await self._set(f"record:{provider}/{model_id}", record.to_dict(), ttl)

    async def aclose(self) -> None:
        if self._cache is not None:
            cache, self._cache = self._cache, None
            await anyio.to_thread.run_sync(cache.close)


__all__ = [
    "CapabilityCache",
    "CapabilityRecord",
    "after_step",
    "detect_prose_edit",
    "load_table",
    "output_budget",
    "record_for",
    "table_entry",
    "tier_from_size",
    "with_evidence",
]
