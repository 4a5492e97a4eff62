"""One running MCP server: its transport, its ``mcp.Client``, its tools and prompts.

``ServerConnection.start(timeout)`` runs the connection in an asyncio task of its own (the
transport's and the session's cancel scopes must be entered and left in one task, and a server
outlives the turn that started it, as jobs.py's tasks do), agrees on a protocol era with it and
lists the tools and prompts, all within ``timeout`` seconds, else ``StartFailed``. The era: the
SDK client's ``mode="auto"`` probes ``server/discover`` (the stateless 2026-07-28 revision,
https://modelcontextprotocol.io/specification/2026-07-28/basic/lifecycle) and falls back to the
``initialize`` handshake (https://modelcontextprotocol.io/specification/2025-11-25/basic/lifecycle)
when the server does not answer it as a 2026 server would. ``call_tool`` and ``get_prompt`` fail
with ``CallFailed`` (a JSON-RPC error, no answer in time, or the server exiting: then at once,
with its exit code and the tail of its stderr). A server that asks the user something during a
call (elicitation.py: a legacy ``elicitation/create`` request, or an ``input_required`` result the
SDK client resolves and retries) is asked through that call's ``ask``; the time the question
waits for the user does not count against the call's timeout. ``stop()`` ends it, its process
group killed. The ``mcp`` package is imported here only, when a server starts.

A URL server without an ``Authorization`` header of its own may want an OAuth login (oauth.py):
with a kept login its requests carry the token, refreshed when it expires; without one, its 401
(with a ``WWW-Authenticate: Bearer`` challenge) fails the start with the hint to run
``totem mcp login NAME``. ``login`` (mcp/login.py): the
start is that login, the user shown the authorization URL.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import anyio

from totem_engine.mcp.elicitation import Ask, answer_elicitation
from totem_engine.mcp.oauth import LoginNeeded, has_login, login_hint, oauth
from totem_engine.mcp.specs import ServerSpec
from totem_engine.mcp.stdio import SpawnFailed, StdioProcess

log = logging.getLogger(__name__)

State = Literal["starting", "running", "failed", "exited", "stopped"]
EXIT_WAIT = 1.0  # seconds a failed call waits for the exit code of a server that closed its stdout


class StartFailed(Exception):
    """The server did not start: the message says why, for the user."""


class CallFailed(Exception):
    """A call did not get a result: the message says why, for the model and the user."""


@dataclass
class _InFlight:
    """A call in flight: how its user is asked, and whether it has ended."""

    ask: Ask
    done: anyio.Event = field(default_factory=anyio.Event)


class ServerConnection:
    """``on_exit(connection)``: called once when a running server exits by itself."""

    def __init__(
        self, spec: ServerSpec, root: Path, *, on_exit: Callable[[ServerConnection], Awaitable[None]],
        login: tuple[Callable[[str], Awaitable[None]], str, Callable[[], Awaitable[Any]]] | None = None,
    ):
        self.spec = spec
        self.login = login  # (show_url, redirect URI, the wait for the code): the start is a login
        self.root = root
        self.on_exit = on_exit
        self.state: State = "starting"
        self.tools: list[Any] = []  # mcp_types.Tool, as listed
        self.prompts: list[Any] = []  # mcp_types.Prompt
        self.server_name = ""  # serverInfo.name (a 2026-07-28 server may not say it)
        self.protocol_version = ""  # the revision agreed on: 2026-07-28, 2025-11-25, ...
        self.client: Any = None  # mcp.Client
        self._calls: list[_InFlight] = []  # the calls in flight, latest last
        self._timers: set[anyio.CancelScope] = set()  # the calls' timeouts, paused while the user is asked
        self._asking = 0
        self._paused: dict[anyio.CancelScope, float] = {}  # a paused timer's time left
        self.process: StdioProcess | None = None
        self._ready = anyio.Event()
        self._stop = anyio.Event()
        self._ended = anyio.Event()
        self._failure: str | None = None
        self._http_refusal: str | None = None  # an HTTP server's first error status, with what it said
        self._task: asyncio.Task | None = None

    @property
    def alive(self) -> bool:
        return self.state == "running"

    async def start(self, timeout: float) -> None:
        """Connected, initialised and listed within ``timeout`` seconds; else StartFailed, with
        everything it started stopped."""
        self._task = asyncio.ensure_future(self._serve())
        with anyio.move_on_after(timeout):
            async with anyio.create_task_group() as group:
                for event in (self._ready, self._ended):
                    group.start_soon(_set_then_cancel, event, group.cancel_scope)
        if self.state == "running":
            return
        failure = self._failure or f"no answer to the handshake within {timeout:g} s"
        await self.stop()
        self.state = "failed"
        raise StartFailed(failure)

    async def stop(self) -> None:
        """The session closed and the process group killed; waits until it is."""
        handshaking = not self._ready.is_set()
        if self.state in ("running", "starting"):
            self.state = "stopped"
        self._stop.set()
        task = self._task
        if task is None:
            return
        with anyio.CancelScope(shield=True):
            if not handshaking:
                with anyio.move_on_after(5):
                    await self._ended.wait()
            if not self._ended.is_set():
                # Still in the handshake (it waits for nothing else), or a session that does not
                # close when asked (a wedged HTTP stream): the transport's own cleanup still runs.
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task

    async def call_tool(self, name: str, arguments: dict[str, Any], timeout: float, *, ask: Ask | None = None) -> Any:
        """The server's ``CallToolResult``; CallFailed when there is none. ``ask``: how the
        user is asked what the server wants to know during the call (None: nobody; it declines)."""
        return await self._request(lambda: self.client.call_tool(name, arguments), timeout, f"{name}", ask)

    async def get_prompt(self, name: str, arguments: dict[str, str], timeout: float, *, ask: Ask | None = None) -> Any:
        """The server's ``GetPromptResult``; CallFailed when there is none."""
        return await self._request(lambda: self.client.get_prompt(name, arguments), timeout, f"prompt {name}", ask)

    async def _request(self, send: Callable[[], Awaitable[Any]], timeout: float, what: str, ask: Ask | None) -> Any:
        from mcp import MCPError

        if not self.alive:
            raise CallFailed(f"MCP server {self.spec.name} is not running ({self.state})")
        result: list[Any] = []
        failure: list[str] = []
        call = _InFlight(ask or _nobody)
        waited = anyio.CancelScope(deadline=anyio.current_time() + timeout)
        self._calls.append(call)
        self._timers.add(waited)
        if self._asking:
            self._pause(waited)

        async def request() -> None:
            try:
                result.append(await send())
            except MCPError as exc:
                failure.append(await self._why(exc))
            except anyio.get_cancelled_exc_class():
                raise
            except Exception as exc:  # noqa: BLE001 - a result that does not validate, a transport error: told to the model
                failure.append(f"{type(exc).__name__}: {exc}")

        try:
            async with anyio.create_task_group() as group:
                group.start_soon(_then_cancel, request, group.cancel_scope)
                group.start_soon(_set_then_cancel, self._ended, group.cancel_scope)
                with waited:
                    await anyio.sleep_forever()
                if waited.cancelled_caught:
                    failure.append(f"no answer to {what} within {timeout:g} s")
                    group.cancel_scope.cancel()
        finally:
            call.done.set()  # a question still open for it is withdrawn
            self._calls.remove(call)
            self._timers.discard(waited)
            self._paused.pop(waited, None)
        if result:
            return result[0]
        if not failure:
            failure.append(self._ended_reason())
        raise CallFailed(failure[0])

    async def _elicit(self, context: Any, params: Any) -> Any:
        """The SDK client's elicitation callback: the user asked through the latest call in
        flight (a legacy request names no call; the newest is the one waiting for it), the
        calls' timeouts paused meanwhile; declined when no call is in flight or it ends first."""
        from mcp_types import ElicitResult

        call = self._calls[-1] if self._calls else _InFlight(_nobody)
        answered: list[Any] = []

        async def answer() -> None:
            try:
                answered.append(await answer_elicitation(params, call.ask, self.spec.name))
            except anyio.get_cancelled_exc_class():
                raise
            except Exception:  # a form it cannot read, a door that failed to ask: declined, never raised
                log.warning("MCP server %s: its question could not be asked", self.spec.name, exc_info=True)

        self._asking += 1
        if self._asking == 1:
            for timer in self._timers:
                self._pause(timer)
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(_then_cancel, answer, group.cancel_scope)
                if self._calls:
                    group.start_soon(_set_then_cancel, call.done, group.cancel_scope)
        finally:
            self._asking -= 1
            if self._asking == 0:
                now = anyio.current_time()
                for timer, left in self._paused.items():
                    timer.deadline = now + left
                self._paused.clear()
        return answered[0] if answered else ElicitResult(action="decline")

    def _pause(self, timer: anyio.CancelScope) -> None:
        self._paused[timer] = max(0.0, timer.deadline - anyio.current_time())
        timer.deadline = math.inf

    async def _why(self, exc: Any) -> str:
        """An MCPError worded for the model: a closed connection is the server's exit."""
        from mcp_types import CONNECTION_CLOSED

        if exc.error.code == CONNECTION_CLOSED:
            with anyio.move_on_after(EXIT_WAIT):
                await self._ended.wait()
            return self._ended_reason()
        return self._http_refusal or f"MCP error {exc.error.code}: {exc.error.message}"

    def _ended_reason(self) -> str:
        if self.process is not None:
            return f"MCP server {self.spec.name} {self.process.describe_exit()}"
        return f"MCP server {self.spec.name} closed the connection"

    async def _serve(self) -> None:
        from mcp import Client

        try:
            # cache=None: a listing is read once, at start; mode="auto": discover, else initialize.
            async with Client(self._streams(), mode="auto", elicitation_callback=self._elicit, cache=None) as client:
                session = client.session
                capabilities = client.server_capabilities
                self.server_name = client.server_info.name if client.server_info is not None else ""
                self.protocol_version = client.protocol_version
                self.tools = await _listed(session.list_tools, "tools") if capabilities.tools else []
                if self.spec.only_tools is not None:  # a built-in server's whitelist (mcp/forge.py)
                    self.tools = [tool for tool in self.tools if tool.name in self.spec.only_tools]
                self.prompts = await _listed(session.list_prompts, "prompts") if capabilities.prompts else []
                self.client = client
                self._http_refusal = None  # a handshake-only server's refused probe is no call's failure
                self.state = "running"
                self._ready.set()
                died = self.process.exited if self.process is not None else anyio.Event()
                async with anyio.create_task_group() as group:
                    for event in (self._stop, died):
                        group.start_soon(_set_then_cancel, event, group.cancel_scope)
        except anyio.get_cancelled_exc_class():
            raise
        except BaseException as exc:  # noqa: BLE001 - whatever ended it is told, never raised into a turn
            self._failure = self._http_refusal or _reason(exc, self.process)
            log.debug("MCP server %s ended: %r", self.spec.name, exc)
        finally:
            exited = self.state == "running" and not self._stop.is_set()
            if exited:
                self.state = "exited"
            self._ended.set()
        if exited:
            await self.on_exit(self)

    @contextlib.asynccontextmanager
    async def _streams(self) -> AsyncIterator[tuple[Any, Any]]:
        spec = self.spec
        if spec.command is not None:
            self.process = StdioProcess(spec.name, spec.command, spec.args, dict(spec.env), self.root)
            async with self.process.streams() as streams:
                yield streams
            return
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        assert spec.url is not None

        wants_oauth = not any(name.lower() == "authorization" for name, _ in spec.headers)

        async def remember_refusal(response: httpx2.Response) -> None:
            # The SDK turns a 401 or 403 into "Server returned an error response": keep what the
            # server said, so the notice can tell a wrong header from a server that is down.
            # Only the server's own answers: an OAuth flow's discovery may meet a 404 on its way.
            if response.request.url != httpx2.URL(spec.url):
                return
            challenge = response.headers.get("www-authenticate", "").lower()
            if response.status_code == 401 and challenge.startswith("bearer") and wants_oauth and self.login is None:
                self._http_refusal = self._http_refusal or login_hint(spec.name)
            if response.status_code >= 400 and self._http_refusal is None:
                body = (await response.aread()).decode("utf-8", errors="replace").strip()
                self._http_refusal = f"HTTP {response.status_code} {response.reason_phrase} from {spec.url}" + (
                    f": {body[:200]}" if body and not body.startswith("{") else ""
                )

        # The SDK's own client's timeouts: 30 s to connect or send, 300 s for a streamed answer.
        auth = None
        if wants_oauth and (self.login is not None or has_login(spec.url)):
            show_url, redirect_uri, code = self.login or (None, None, None)
            auth = oauth(spec.name, spec.url, show_url=show_url, redirect=(redirect_uri, code) if redirect_uri else None)
        client = httpx2.AsyncClient(
            headers=dict(spec.headers), timeout=httpx2.Timeout(30.0, read=300.0), auth=auth,
            event_hooks={"response": [remember_refusal]},
        )
        async with client, streamable_http_client(spec.url, http_client=client) as (read, write):
            yield read, write


async def _listed(list_page: Callable[..., Awaitable[Any]], field: str) -> list[Any]:
    """Every page of a ``tools/list`` or ``prompts/list`` (``nextCursor``)."""
    from mcp_types import PaginatedRequestParams

    items: list[Any] = []
    cursor = None
    for _ in range(100):  # a server that pages forever
        page = await list_page(params=PaginatedRequestParams(cursor=cursor) if cursor else None)
        items += getattr(page, field)
        cursor = page.next_cursor
        if not cursor:
            break
    return items


def _reason(exc: BaseException, process: StdioProcess | None) -> str:
    """Why a connection ended, from what it raised (an ExceptionGroup's first leaf)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, SpawnFailed):
        return f"could not start: {exc}"
    if isinstance(exc, LoginNeeded):
        return str(exc)
    if type(exc).__module__.startswith("mcp.client.auth"):  # OAuthFlowError and its kinds
        return f"the login failed: {exc}"
    if process is not None and process.exit_code is not None:
        return process.describe_exit()
    error = getattr(exc, "error", None)
    if error is not None:
        return f"MCP error {error.code}: {error.message}"
    request = getattr(exc, "_request", None)  # an httpx2 error: say where it went
    where = f" ({request.method} {request.url})" if request is not None else ""
    return f"{type(exc).__name__}{where}: {exc}"


async def _nobody(text: str, options: list[str]) -> str | None:
    return None


async def _set_then_cancel(event: anyio.Event, scope: anyio.CancelScope) -> None:
    await event.wait()
    scope.cancel()


async def _then_cancel(work: Callable[[], Awaitable[None]], scope: anyio.CancelScope) -> None:
    await work()
    scope.cancel()
