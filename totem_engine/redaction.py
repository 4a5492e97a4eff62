"""The secrets this process knows, replaced by ``***`` wherever text leaves the engine.

Four exits, each one choke point, so no message has to remember it (docs/decisions.md):

- events: ``RedactingFrontEnd`` wraps the front end a turn emits to (turn/loop.py), so every
  event of every turn, its sub-agents' included, is scrubbed before a door sees it;
- the store: ``store/encoding.py`` scrubs every part's data, session meta and title it writes;
- logs: a log record factory (``install_log_redaction``) scrubs every record's message and
  traceback, whichever logger made it;
- errors: ``EngineError`` and ``ProviderError`` scrub their text when it is shown.

The secrets are those of every configuration the process has loaded (``know_config``: each
provider's ``api_key`` and header values, the credentials of its ``base_url``, MCP servers'
header values, ``mcp_serve_token``), every key Totem has fetched (keys.py) and every MCP login's
tokens and client secret, read or issued (mcp/oauth.py). They are known
process-wide: a second project's key is no less a secret in the first one's log.

Exact matches only: a secret shorter than ``MIN_SECRET`` characters is not replaced (a dummy key
such as ``x`` would shred every text), and a secret cut across two streamed deltas reaches the
door in its two pieces (the stored text, whole, is scrubbed). Stdlib only: api/errors.py, which
must stay light, imports it.
"""

from __future__ import annotations

import logging
import threading
import traceback
from collections.abc import Iterable
from typing import Any, TypeVar
from urllib.parse import unquote, urlsplit

REDACTED = "***"
MIN_SECRET = 8
"""Characters a secret needs to be replaced: a real key is far longer; a shorter value is a dummy
or a word (a header value "wrong" would be cut out of "wrong or missing X-Token")."""

# Header names that carry no credential (a version, a type): their values are not secrets.
PUBLIC_HEADERS = frozenset({
    "accept", "accept-encoding", "connection", "content-length", "content-type", "host", "user-agent",
    "anthropic-version", "anthropic-beta",
})

_known: tuple[str, ...] = ()  # longest first, so a secret that contains another is replaced whole
_lock = threading.Lock()
T = TypeVar("T")


def know(secrets: Iterable[str | None]) -> None:
    """Add ``secrets`` to those scrubbed from now on (the short and empty ones are ignored)."""
    global _known
    fresh = {s for s in secrets if s and len(s) >= MIN_SECRET} - set(_known)
    if not fresh:
        return
    with _lock:
        _known = tuple(sorted({*_known, *fresh}, key=len, reverse=True))
    install_log_redaction()


def know_config(config: Any) -> None:
    """The secrets a configuration (a ``config.Config``, not imported: config imports the
    errors, which import this) holds, known from now on."""
    found: list[str | None] = []
    for settings in config.providers.values():
        found.append(settings.api_key_value())
        found += [value for name, value in settings.headers.items() if name.lower() not in PUBLIC_HEADERS]
        found += url_secrets(settings.base_url)
    if config.mcp_serve_token is not None:
        found.append(config.mcp_serve_token.get_secret_value())
    know(found)


def url_secrets(url: str | None) -> tuple[str, ...]:
    """The credentials of ``url`` (``http://user:password@host``), as written and
    percent-decoded: the password, or the user when it stands alone (a token as the user name).
    A user name beside a password is no secret (it is often the login, in every path)."""
    if not url:
        return ()
    try:
        parts = urlsplit(url)
        user, password = parts.username, parts.password
    except ValueError:
        return ()
    userinfo = parts.netloc.rpartition("@")[0]
    found = [userinfo] if userinfo else []
    secret = password if password is not None else user
    if secret:
        found += [secret, unquote(secret)]
    return tuple(dict.fromkeys(found))


def redacted(text: str) -> str:
    """``text`` with every known secret replaced by ``***``."""
    for secret in _known:
        if secret in text:
            text = text.replace(secret, REDACTED)
    return text


def scrubbed(value: T) -> T:
    """``value`` with every string in it redacted (dicts, lists and tuples rebuilt, keys too;
    pydantic models copied); the same object when nothing in it changed or nothing is known."""
    if not _known:
        return value
    return _scrub(value)


def _scrub(value: Any) -> Any:
    if isinstance(value, str):
        return redacted(value)
    if isinstance(value, dict):
        pairs = [(_scrub(k), _scrub(v)) for k, v in value.items()]
        same = all(a is k and b is v for (a, b), (k, v) in zip(pairs, value.items(), strict=True))
        return value if same else dict(pairs)
    if isinstance(value, list | tuple):
        items = [_scrub(item) for item in value]
        if all(a is b for a, b in zip(items, value, strict=True)):
            return value
        return items if isinstance(value, list) else tuple(items)
    fields = getattr(type(value), "model_fields", None)
    if fields is not None:  # a pydantic model (an event and what it holds)
        changed = {name: new for name in fields if (new := _scrub(old := getattr(value, name))) is not old}
        return value.model_copy(update=changed) if changed else value
    return value


class RedactingFrontEnd:
    """A front end whose events reach the door scrubbed; questions and permission requests pass
    as they are (a proposed file's text must come back from the review unchanged)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    async def emit(self, event: Any) -> None:
        await self.inner.emit(scrubbed(event))

    async def permission(self, request: Any) -> Any:
        return await self.inner.permission(request)

    async def question(self, request: Any) -> Any:
        return await self.inner.question(request)


def install_log_redaction() -> None:
    """Every log record made in this process from now on is scrubbed (once installed, a no-op)."""
    previous = logging.getLogRecordFactory()
    if getattr(previous, "redacting", False):
        return

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        if _known:
            _scrub_record(record)
        return record

    factory.redacting = True  # type: ignore[attr-defined]
    logging.setLogRecordFactory(factory)


def _scrub_record(record: logging.LogRecord) -> None:
    try:
        message = record.getMessage()
    except Exception:  # noqa: BLE001 - a malformed call: logging reports it at format time, as ever
        return
    clean = redacted(message)
    if clean != message:
        record.msg, record.args = clean, None
    if record.exc_info and record.exc_info[1] is not None:
        shown = "".join(traceback.format_exception(*record.exc_info)).rstrip("\n")
        clean = redacted(shown)
        if clean != shown:
            record.exc_text = clean
    if record.stack_info:
        record.stack_info = redacted(record.stack_info)
