"""``totem acp``: the ACP agent on stdin/stdout, one JSON-RPC message per line (ACP's framing).

The protocol keeps the process's stdin and stdout to itself: both are moved to new descriptors
first, and fds 0 and 1 become ``/dev/null`` and stderr, so nothing else (a print, a child that
inherits them: a job, a check) can read a message or write into the stream.

A client is never left waiting (docs/acp.md "When Totem stops"): the requests it sent are
tracked (``Pending``); SIGTERM, SIGINT and SIGHUP abort every turn (a prompt then answers with an
error naming the signal), close the sessions and exit 143, 130 or 129; anything that escapes the
event loop (a crash) answers every request still open with an error, says so on stderr and exits 1.
The client closing stdin ends the process quietly (0), after the same closing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import signal
import sys
import threading
from typing import Any

EXIT_SIGNALS = {signal.SIGINT: 130, signal.SIGTERM: 143, signal.SIGHUP: 129}
ANSWER_WAIT_TICKS = 200  # 10 ms each: how long the last answers get to go out at a stop
STDIN_LIMIT = 50 * 1024 * 1024  # bytes of one message (the SDK's own default: images, embedded files)


class Pending:
    """The client's requests not answered yet, and the one way to answer them all at a crash:
    an error response each, written straight to the protocol's descriptor."""

    def __init__(self, fd: int):
        self.fd = fd
        self.open: dict[Any, str] = {}  # request id -> method
        self._lock = threading.Lock()

    def observe(self, incoming: bool, message: dict[str, Any]) -> None:
        if incoming and "method" in message and "id" in message:
            self.open[message["id"]] = message["method"]
        elif not incoming and "method" not in message and "id" in message:
            self.open.pop(message["id"], None)

    def fail_all(self, why: str) -> int:
        """Each open request answered with an internal error saying ``why``; how many."""
        with self._lock:
            failed = list(self.open)
            self.open.clear()
            for request_id in failed:
                line = json.dumps({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32603, "message": why}}) + "\n"
                try:
                    os.write(self.fd, line.encode("utf-8"))
                except OSError:
                    break  # the client is gone: nobody waits
        return len(failed)


def acp_command(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="totem acp: %(name)s: %(message)s")
    proto_in, proto_out = _claim_stdio()
    pending = Pending(os.dup(proto_out))
    try:
        return asyncio.run(_serve(proto_in, proto_out, pending))
    except BaseException as exc:  # noqa: BLE001 - whatever ends the loop, the client must hear of it
        failed = pending.fail_all(f"Totem crashed: {type(exc).__name__}: {exc}")
        print(f"totem acp: crashed: {type(exc).__name__}: {exc} ({failed} open request(s) answered with an error)",
              file=sys.stderr, flush=True)
        return 1


def _claim_stdio() -> tuple[int, int]:
    """The protocol's own copies of stdin and stdout; fd 0 then reads /dev/null, fd 1 writes stderr."""
    proto_in, proto_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    return proto_in, proto_out


async def _serve(proto_in: int, proto_out: int, pending: Pending) -> int:
    from acp.agent.connection import AgentSideConnection
    from acp.connection import StreamDirection

    from totem_acp.agent import TotemAgent
    from totem_acp.routes import route_the_rest

    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=STDIN_LIMIT)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(proto_in, "rb", buffering=0))
    protocol = asyncio.StreamReaderProtocol(asyncio.StreamReader())  # its flow control serves the writer's drain
    transport, _ = await loop.connect_write_pipe(lambda: protocol, os.fdopen(proto_out, "wb", buffering=0))
    writer = asyncio.StreamWriter(transport, protocol, None, loop)

    agent = TotemAgent()

    def observe(event: Any) -> Any:
        incoming = event.direction == StreamDirection.INCOMING
        pending.observe(incoming, event.message)
        greeting = agent.observe(incoming, event.message)
        if greeting is not None:
            return greeting
        result = event.message.get("result")
        if not incoming and isinstance(result, dict) and isinstance(result.get("sessionId"), str):
            return agent.after_answer(result["sessionId"])
        return None

    conn = AgentSideConnection(agent, writer, reader, listening=False, observers=[observe])
    route_the_rest(conn._conn._handler, agent)  # the SDK builds its router inside; no other way to it
    stopped: asyncio.Future[signal.Signals] = loop.create_future()
    for sig in EXIT_SIGNALS:
        loop.add_signal_handler(sig, lambda s=sig: stopped.done() or stopped.set_result(s))
    listening = asyncio.ensure_future(conn.listen())
    await asyncio.wait([listening, stopped], return_when=asyncio.FIRST_COMPLETED)
    by = stopped.result() if stopped.done() else None
    await agent.aclose(stopped_by=by.name if by is not None else None)
    # The aborted prompts' answers go out before the connection closes (a bounded wait: what is
    # still open after it is answered with an error below).
    for _ in range(ANSWER_WAIT_TICKS):
        if not pending.open:
            break
        await asyncio.sleep(0.01)
    await conn.close()
    listening.cancel()
    if by is None:
        if listening.done() and not listening.cancelled() and listening.exception() is not None:
            raise listening.exception()  # type: ignore[misc]
        return 0
    failed = pending.fail_all(f"Totem was stopped ({by.name})")
    print(f"totem acp: stopped by {by.name}" + (f"; {failed} open request(s) answered with an error" if failed else ""),
          file=sys.stderr, flush=True)
    return EXIT_SIGNALS[by]
