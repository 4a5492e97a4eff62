"""Stream latency: N text deltas from a model server, through ``totem lsp``, to an LSP client.

A loopback OpenAI-format model server (a subprocess of this script, so it does not share a GIL
with the clients) streams N = 20,000 ``content`` deltas, each its own SSE event and HTTP chunk,
in the wire format of tests/support/model_server.py. Two readers of that same stream:

(a) baseline: a plain httpx streaming read (``httpx.AsyncClient``, the client the engine uses):
    lines, ``data:`` payloads JSON-decoded, the text joined; time from sending the request until
    every delta has been read.
(b) totem: ``totem lsp`` (the console script next to ``sys.executable``) with a user config
    pointing at the server, driven by a pygls ``LanguageClient``: ``initialize``, one small
    warm-up chat (so the runtime, store and HTTP client exist), then ``totem/chat {text: "go"}``;
    time from sending the request until the chat response has arrived and the ``textDelta``
    notifications joined equal the text sent. The server coalesces deltas (30 ms), so the
    script also counts the notifications.

Both are also timed from the server's first delta write (its CLOCK_MONOTONIC, reported by the
server process) to the last delta received, which excludes the turn's set-up. Reads alternate,
RUNS of each; medians and ratios totem/baseline are printed.

It also prints the first delta's latency, from the server's write to the reader's receipt, for
each reader, and what totem adds to it.

    .venv/bin/python bench/stream_latency.py [--deltas N] [--runs R] [--code DIR] [--profile FILE]

``--code DIR`` runs the Totem in DIR (a worktree of an older commit, put first on PYTHONPATH)
with this venv's dependencies; ``--profile FILE`` runs ``totem lsp`` under cProfile.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
WARM_UP = "warm up"  # a user text containing this gets a short answer
TIMEOUT = 120.0


# ---------------------------------------------------------------------------------------------
# The model server (``--serve N``): a subprocess; stdout reports its port, then one line per stream
# ---------------------------------------------------------------------------------------------


def bench_text(deltas: int) -> str:
    """The answer: ``deltas`` pieces of 7 characters each ("w00042 "...)."""
    return "".join(f"w{i:05d} " for i in range(deltas))


def serve(deltas: int) -> None:
    sys.path.insert(0, str(REPO))
    from tests.support.model_server import chunk, split_text

    def frames(text: str, pieces: int) -> tuple[list[bytes], list[bytes], list[bytes]]:
        def encode(event: dict | str) -> bytes:
            data = f"data: {event if isinstance(event, str) else json.dumps(event)}\n\n".encode()
            return b"%x\r\n%s\r\n" % (len(data), data)

        head = [encode(chunk({"role": "assistant", "content": ""}))]
        body = [encode(chunk({"content": part})) for part in split_text(text, pieces)]
        tail = [encode(chunk({}, finish_reason="stop")), encode(chunk(usage=(10, pieces), choices=False)), encode("[DONE]")]
        return head, body, tail

    big = frames(bench_text(deltas), deltas)
    small = frames("warmed up", 3)
    report_lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format, *args):  # noqa: A002
            pass

        def do_GET(self):
            data = json.dumps({"object": "list", "data": [{"id": "test-model", "object": "model"}]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self):
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            head, body, tail = small if WARM_UP.encode() in raw else big
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("Connection", "close")
            self.end_headers()
            try:
                for frame in head:
                    self.wfile.write(frame)
                first = time.monotonic()
                for frame in body:  # one write (one send) per delta, as a real server streams
                    self.wfile.write(frame)
                last = time.monotonic()
                for frame in tail:
                    self.wfile.write(frame)
                self.wfile.write(b"0\r\n\r\n")
            except (BrokenPipeError, ConnectionResetError):
                return
            finally:
                self.close_connection = True
            with report_lock:
                print(f"stream {len(body)} {first!r} {last!r}", flush=True)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
    print(f"port {httpd.server_address[1]}", flush=True)
    sys.stdin.read()  # until the parent closes our stdin (or dies)
    httpd.shutdown()


class ModelServerProcess:
    """The ``--serve`` subprocess; ``streams()`` gives each finished stream's (deltas, first, last)."""

    def __init__(self, deltas: int):
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--serve", str(deltas)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        line = self.proc.stdout.readline()
        if not line.startswith("port "):
            self.close()
            raise RuntimeError(f"model server did not start: {line!r}")
        self.port = int(line.split()[1])
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._lines: list[str] = []
        self._cond = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            with self._cond:
                self._lines.append(line)
                self._cond.notify_all()

    def next_stream(self, deltas: int) -> tuple[float, float]:
        """(first, last) monotonic times of the next finished stream of ``deltas`` deltas."""
        deadline = time.monotonic() + TIMEOUT
        with self._cond:
            while True:
                while self._lines:
                    _, n, first, last = self._lines.pop(0).split()
                    if int(n) == deltas:
                        return float(first), float(last)
                if not self._cond.wait(timeout=max(0.0, deadline - time.monotonic())):
                    raise TimeoutError("the model server reported no stream")

    def close(self) -> None:
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


# ---------------------------------------------------------------------------------------------
# (a) baseline: plain httpx
# ---------------------------------------------------------------------------------------------


async def httpx_read(base_url: str, text: str) -> tuple[float, float, int, float]:
    """(seconds from request to the last delta read, monotonic time of that read, deltas read,
    monotonic time of the first delta read)."""
    import httpx

    body = {"model": "test-model", "stream": True, "messages": [{"role": "user", "content": "go"}]}
    async with httpx.AsyncClient(timeout=TIMEOUT) as client:
        start = time.monotonic()
        parts: list[str] = []
        first = 0.0
        async with client.stream("POST", f"{base_url}/chat/completions", json=body) as response:
            response.raise_for_status()
            async for line in response.aiter_lines():
                if not line.startswith("data:"):
                    continue
                data = line[5:].strip()
                if data == "[DONE]":
                    break
                for choice in json.loads(data).get("choices") or ():
                    content = (choice.get("delta") or {}).get("content")
                    if content:
                        parts.append(content)
                        last = time.monotonic()
                        first = first or last
    if "".join(parts) != text:
        raise AssertionError("httpx: the text read differs from the text sent")
    return last - start, last, len(parts), first


# ---------------------------------------------------------------------------------------------
# (b) totem lsp
# ---------------------------------------------------------------------------------------------


class TotemEditor:
    """``totem lsp`` and a pygls client; collects the text of ``totem/event`` textDeltas."""

    def __init__(self, tmp: Path, base_url: str, code: str | None = None, profile: str | None = None):
        from pygls.lsp.client import LanguageClient

        self.tmp = tmp
        self.project = tmp / "project"
        self.project.mkdir()
        config_dir = tmp / "config" / "totem"
        config_dir.mkdir(parents=True)
        (config_dir / "config.toml").write_text(
            f'model = "sim/test-model"\nforge = false\n\n[providers.sim]\nkind = "openai"\nbase_url = "{base_url}"\n'
        )
        self.env = dict(os.environ)
        for name in ("CONFIG", "DATA", "CACHE", "STATE"):
            self.env[f"XDG_{name}_HOME"] = str(tmp / name.lower())
        self.env.pop("PYTHONPATH", None)
        self.code, self.profile = code, profile
        if code:
            self.env["PYTHONPATH"] = code
        self.client = LanguageClient("stream-latency-bench", "0")
        self.texts: list[str] = []
        self.notifications = 0
        self.last_delta = 0.0
        self.first_delta = 0.0
        self.stderr = bytearray()
        self._stderr_task: asyncio.Task | None = None

        @self.client.feature("totem/event")
        def on_event(ls, params):
            if params.kind == "textDelta":
                self.texts.append(params.text)
                self.notifications += 1
                self.last_delta = time.monotonic()
                self.first_delta = self.first_delta or self.last_delta

        @self.client.feature("window/logMessage")
        def on_log(ls, params):
            pass

        @self.client.feature("window/showMessage")
        def on_show(ls, params):
            pass

    async def start(self) -> None:
        from lsprotocol import types

        if self.code or self.profile:  # the same start as the console script's, through python -m
            profiling = ["-m", "cProfile", "-o", self.profile] if self.profile else []
            command = [sys.executable, *profiling, "-m", "totem_cli.main", "lsp"]
        else:
            command = [str(Path(sys.executable).with_name("totem")), "lsp"]
        await self.client.start_io(*command, env=self.env, cwd=str(self.project))
        self._stderr_task = asyncio.create_task(self._drain_stderr())  # pygls pipes it; nobody reads it
        await self.client.initialize_async(
            types.InitializeParams(
                capabilities=types.ClientCapabilities(),
                process_id=os.getpid(),
                workspace_folders=[types.WorkspaceFolder(uri=self.project.as_uri(), name="project")],
            )
        )
        self.client.initialized(types.InitializedParams())

    async def _drain_stderr(self) -> None:
        stream = self.client._server.stderr
        while chunk := await stream.read(65536):
            self.stderr += chunk

    async def chat(self, text: str) -> tuple[float, object]:
        self.texts.clear()
        self.notifications = 0
        self.first_delta = 0.0
        start = time.monotonic()
        result = await asyncio.wait_for(self.client.protocol.send_request_async("totem/chat", {"text": text}), TIMEOUT)
        return start, result

    async def stop(self) -> None:
        server = self.client._server
        try:
            if server is not None and server.returncode is None:
                await asyncio.wait_for(self.client.shutdown_async(None), 10)
                self.client.exit(None)
                await asyncio.wait_for(server.wait(), 10)
        except (asyncio.TimeoutError, RuntimeError, ConnectionError):
            pass
        finally:
            if server is not None and server.returncode is None:
                server.kill()
                await server.wait()
            if self._stderr_task is not None:
                self._stderr_task.cancel()
            await self.client.stop()


async def totem_read(editor: TotemEditor, text: str) -> tuple[float, float, int, float]:
    """(seconds from request to response with all text, monotonic time of the last delta,
    textDelta notifications, monotonic time of the first delta)."""
    start, result = await editor.chat("go")
    answered = time.monotonic()
    stop_reason = getattr(result, "stopReason", None)
    if stop_reason != "finished":
        raise AssertionError(f"totem/chat ended with {stop_reason!r}: {result}")
    # The notifications precede the response on the wire; allow a moment in case a handler lags.
    deadline = time.monotonic() + 5
    while "".join(editor.texts) != text and time.monotonic() < deadline:
        await asyncio.sleep(0.001)
    joined = "".join(editor.texts)
    if joined != text:
        raise AssertionError(f"totem: received {len(joined)} characters of text, sent {len(text)}")
    done = max(answered, editor.last_delta)
    return done - start, editor.last_delta, editor.notifications, editor.first_delta


# ---------------------------------------------------------------------------------------------


async def bench(deltas: int, runs: int, code: str | None, profile: str | None) -> int:
    text = bench_text(deltas)
    server = ModelServerProcess(deltas)
    # Per run: request -> all deltas, first delta sent -> last received, first delta sent -> received.
    rows: dict[str, list[tuple[float, float, float]]] = {"httpx": [], "totem": []}
    notifications: list[int] = []
    try:
        with tempfile.TemporaryDirectory(prefix="totem-stream-latency-") as tmp:
            editor = TotemEditor(Path(tmp), server.base_url, code, profile)
            try:
                await editor.start()
                _, warm = await editor.chat(f"{WARM_UP}, please")  # runtime, store, HTTP client
                if getattr(warm, "stopReason", None) != "finished":
                    raise AssertionError(f"warm-up chat ended with {warm}; server stderr:\n{editor.stderr.decode(errors='replace')}")
                await httpx_read(server.base_url, text)  # warm-up of the baseline, unmeasured
                server.next_stream(deltas)
                for _ in range(runs):
                    total, last, count, got_first = await httpx_read(server.base_url, text)
                    first, _ = server.next_stream(deltas)
                    rows["httpx"].append((total, last - first, got_first - first))
                    total, last, count, got_first = await totem_read(editor, text)
                    first, _ = server.next_stream(deltas)
                    rows["totem"].append((total, last - first, got_first - first))
                    notifications.append(count)
            except BaseException:
                if editor.stderr:
                    print(editor.stderr.decode(errors="replace")[-4000:], file=sys.stderr)
                raise
            finally:
                await editor.stop()
    finally:
        server.close()

    def med(name: str, i: int) -> float:
        return statistics.median(r[i] for r in rows[name])

    print(f"{deltas} text deltas, {runs} alternating runs each ({os.cpu_count()} CPUs, Python {sys.version.split()[0]}):")
    for name, label in (("httpx", "baseline: plain httpx read"), ("totem", "totem lsp -> LSP client")):
        runs_ms = " ".join(f"{r[0] * 1000:.0f}" for r in rows[name])
        print(
            f"  {label:28} request->all deltas median {med(name, 0) * 1000:7.1f} ms"
            f"   first delta sent->last received {med(name, 1) * 1000:7.1f} ms   runs (ms): {runs_ms}"
        )
    print(f"  totem/event textDelta notifications per chat: {notifications} (deltas coalesced every 30 ms)")
    print(f"ratio totem/httpx, request->all deltas (medians): {med('totem', 0) / med('httpx', 0):.2f}")
    print(f"ratio totem/httpx, first delta sent->last received (medians): {med('totem', 1) / med('httpx', 1):.2f}")
    print(f"first delta, sent -> received: httpx {med('httpx', 2) * 1000:.2f} ms, totem {med('totem', 2) * 1000:.2f} ms;"
          f" added by totem {(med('totem', 2) - med('httpx', 2)) * 1000:.2f} ms (medians; goal < 5 ms)")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deltas", type=int, default=20_000, help="text deltas in the stream (default 20000)")
    parser.add_argument("--runs", type=int, default=3, help="measured reads of each kind (default 3)")
    parser.add_argument("--code", help="run the Totem in this directory (PYTHONPATH), e.g. a worktree of an older commit")
    parser.add_argument("--profile", help="run totem lsp under cProfile, writing its profile to this file")
    parser.add_argument("--serve", type=int, metavar="N", help=argparse.SUPPRESS)  # the model server subprocess
    args = parser.parse_args()
    if args.serve is not None:
        serve(args.serve)
        return 0
    if not Path(sys.executable).with_name("totem").exists():
        print(f"no console script next to {sys.executable}: install the project into this venv (make install)", file=sys.stderr)
        return 2
    return asyncio.run(bench(args.deltas, args.runs, args.code, args.profile))


if __name__ == "__main__":
    sys.exit(main())
