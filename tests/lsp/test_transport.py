"""`totem lsp` on the wire: TCP with a token, and stdio that survives bad messages.

A raw JSON-RPC client (Content-Length framing) so the tests see exactly what the server sends.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
from pathlib import Path

import pytest

SERVER = [sys.executable, "-m", "totem_cli.main", "lsp"]
WAIT = 15.0


class Rpc:
    def __init__(self, reader: asyncio.StreamReader, writer) -> None:
        self.reader, self.writer, self.last_id = reader, writer, 0

    def send_body(self, body: bytes) -> None:
        self.writer.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))

    def send(self, message: dict) -> None:
        self.send_body(json.dumps({"jsonrpc": "2.0", **message}).encode())

    def request_id(self, method: str, params) -> int:
        self.last_id += 1
        self.send({"id": self.last_id, "method": method, "params": params})
        return self.last_id

    async def read(self) -> dict | None:
        """The next message, or None at the end of the stream."""
        length = None
        while True:
            line = await self.reader.readline()
            if not line:
                return None
            line = line.strip()
            if not line:
                break
            name, _, value = line.decode().partition(":")
            if name.lower() == "content-length":
                length = int(value)
        assert length is not None
        return json.loads(await self.reader.readexactly(length))

    async def response(self, msg_id: int) -> dict | None:
        """The response to ``msg_id``, skipping notifications and server requests; None at EOF."""

        async def wait() -> dict | None:
            while True:
                message = await self.read()
                if message is None or (message.get("id") == msg_id and "method" not in message):
                    return message

        return await asyncio.wait_for(wait(), WAIT)

    async def request(self, method: str, params) -> dict | None:
        return await self.response(self.request_id(method, params))


def initialize_params(root: Path, token: str | None = None) -> dict:
    params = {"processId": None, "rootUri": root.as_uri(), "capabilities": {}, "workspaceFolders": [{"uri": root.as_uri(), "name": "p"}]}
    if token is not None:
        params["initializationOptions"] = {"token": token}
    return params


def isolated_env(tmp_path: Path) -> dict:
    (tmp_path / "config" / "totem").mkdir(parents=True, exist_ok=True)
    (tmp_path / "project").mkdir(exist_ok=True)
    return dict(os.environ, XDG_DATA_HOME=str(tmp_path / "data"), XDG_CONFIG_HOME=str(tmp_path / "config"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def connect(port: int) -> Rpc:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    return Rpc(reader, writer)


async def at_eof(rpc: Rpc) -> bool:
    """Whether the server closed the connection (after any messages still in flight)."""

    async def drain() -> bool:
        while True:
            try:
                if await rpc.read() is None:
                    return True
            except (ConnectionError, asyncio.IncompleteReadError):
                return True

    return await asyncio.wait_for(drain(), WAIT)


@pytest.fixture
async def tcp_server(tmp_path):
    port = free_port()
    process = await asyncio.create_subprocess_exec(
        *SERVER, "--tcp", f"127.0.0.1:{port}", "--token", "secret",
        env=isolated_env(tmp_path), stdin=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
    )
    line = await asyncio.wait_for(process.stderr.readline(), WAIT)
    assert f"listening on 127.0.0.1:{port}" in line.decode()

    async def listening() -> None:
        # Poll the port without connecting (a connection is a client to the server).
        while True:
            with open("/proc/net/tcp") as table:
                if any(f":{port:04X} " in row and row.split()[3] == "0A" for row in table):
                    return
            await asyncio.sleep(0.02)

    await asyncio.wait_for(listening(), WAIT)
    yield port, process, tmp_path / "project"
    if process.returncode is None:
        process.kill()
    await process.wait()


async def test_tcp_wrong_token_is_refused_then_the_right_one_is_accepted(tcp_server):
    port, process, root = tcp_server

    intruder = await connect(port)
    first = intruder.request_id("initialize", initialize_params(root, token="wrong"))
    pipelined = intruder.request_id("totem/sessions", None)  # sent before the refusal arrives
    intruder.send({"method": "exit"})  # must not stop the server either
    refusal = await intruder.response(first)
    assert refusal["error"]["code"] == -32002
    assert "token" in refusal["error"]["message"]
    after = await intruder.response(pipelined)
    assert after is None or ("error" in after and "result" not in after)
    assert await at_eof(intruder)
    assert process.returncode is None  # a refused client does not stop the server

    editor = await connect(port)
    answer = await editor.request("initialize", initialize_params(root, token="secret"))
    capabilities = answer["result"]["capabilities"]
    assert capabilities["experimental"]["totem"]["protocolVersion"] == 1
    assert {"totem.server.ask", "totem.server.abort", "totem.server.undo", "totem.server.redo"} <= set(
        capabilities["executeCommandProvider"]["commands"]
    )
    sync = capabilities["textDocumentSync"]
    assert (sync["change"] if isinstance(sync, dict) else sync) == 2  # incremental
    assert capabilities["codeActionProvider"]
    editor.send({"method": "initialized", "params": {}})
    assert (await editor.request("totem/sessions", None))["result"] == []

    # While the editor is connected, another connection gets nothing.
    other = await connect(port)
    other.request_id("totem/sessions", None)
    assert await at_eof(other)
    assert (await editor.request("totem/sessions", None))["result"] == []


async def test_tcp_without_initialize_gets_nothing_done(tcp_server):
    port, process, root = tcp_server
    client = await connect(port)
    answer = await client.request("totem/sessions", None)
    assert answer["error"]["code"] == -32002
    answer = await client.request("initialize", initialize_params(root))  # no token at all
    assert answer["error"]["code"] == -32002
    assert await at_eof(client)
    assert process.returncode is None


@pytest.mark.parametrize("address", ["0.0.0.0:4999", "192.168.1.10:4999", "localhost", "example.com:80"])
async def test_tcp_refuses_non_loopback_addresses(tmp_path, address):
    process = await asyncio.create_subprocess_exec(
        *SERVER, "--tcp", address, "--token", "secret",
        env=isolated_env(tmp_path), stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    _, stderr = await asyncio.wait_for(process.communicate(), WAIT)
    assert process.returncode == 2
    assert "loopback" in stderr.decode()
    assert address in stderr.decode()


@pytest.fixture
async def stdio_server(tmp_path):
    process = await asyncio.create_subprocess_exec(
        *SERVER, env=isolated_env(tmp_path),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
    )
    rpc = Rpc(process.stdout, process.stdin)
    answer = await rpc.request("initialize", initialize_params(tmp_path / "project"))
    assert "result" in answer
    rpc.send({"method": "initialized", "params": {}})
    yield rpc, process
    if process.returncode is None:
        process.kill()
    await process.wait()


async def test_stdio_survives_bad_messages(stdio_server):
    rpc, process = stdio_server

    rpc.send_body(b"{this is not json")

    answer = await rpc.request("totem/noSuchMethod", {})
    assert answer["error"]["code"] == -32601

    answer = await rpc.request("totem/chat", {"text": 5})
    assert answer["error"]["code"] == -32602
    assert "text" in answer["error"]["message"]

    answer = await rpc.request("totem/chat", {"sessionId": "x"})
    assert answer["error"]["code"] == -32602
    assert "text" in answer["error"]["message"]

    answer = await rpc.request("totem/chat", [1, 2])
    assert answer["error"]["code"] == -32602

    answer = await rpc.request("totem/session", {"sessionId": "ses_does_not_exist"})
    assert "ses_does_not_exist" in answer["error"]["message"]

    answer = await rpc.request("totem/setModel", {"model": 3})
    assert answer["error"]["code"] == -32602
    assert "model" in answer["error"]["message"]

    answer = await rpc.request("workspace/executeCommand", {"command": "totem.server.ask", "arguments": [{"range": None}]})
    assert "error" in answer
    assert "uri" in answer["error"]["message"]

    answer = await rpc.request("totem/sessions", None)
    assert answer["result"] == []
    assert process.returncode is None


async def start_stdio(tmp_path, config: str = "") -> tuple[Rpc, asyncio.subprocess.Process]:
    env = isolated_env(tmp_path)
    (tmp_path / "config" / "totem" / "config.toml").write_text(config)
    process = await asyncio.create_subprocess_exec(
        *SERVER, env=env, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL
    )
    return Rpc(process.stdout, process.stdin), process


async def initialized(rpc: Rpc, root: Path) -> None:
    assert "result" in await rpc.request("initialize", initialize_params(root))
    rpc.send({"method": "initialized", "params": {}})


async def error_answer(rpc: Rpc, msg_id) -> dict:
    """The error response for ``msg_id`` (a number, or None for one sent under ``"id": null``)."""
    answer = await rpc.response(msg_id)
    assert answer is not None and "result" not in answer
    assert answer["jsonrpc"] == "2.0" and "id" in answer and answer["id"] == msg_id
    assert "data" not in answer["error"]  # no traceback for the client's mistakes
    return answer["error"]


SESSIONS_41 = b'{"jsonrpc": "2.0", "id": 41, "method": "totem/sessions", "params": null}'


@pytest.mark.parametrize(
    "header, reason",
    [
        (b"Content-Length: 99999999999999999999\r\n\r\n", "over the limit of 67108864 bytes"),
        (b"Content-Length: " + b"9" * 5000 + b"\r\n\r\n", "over the limit"),  # int() refuses 5000 digits
        (b"Content-Length: 12abc\r\n\r\n", "not a number"),
        (b"Content-Length: \xd9\xa3\r\n\r\n", "not a number"),  # ARABIC-INDIC DIGIT THREE
        (b"Content-Type: application/vscode-jsonrpc\r\n\r\n", "no Content-Length"),
        (b"Content-Length: 74\r\nContent-Length: 75\r\n\r\n", "more than one Content-Length"),
        (b"Content-Length 74\r\n\r\n", "without a colon"),
    ],
)
async def test_stdio_a_bad_header_is_an_error_for_that_message_and_the_server_goes_on(tmp_path, header, reason):
    rpc, process = await start_stdio(tmp_path)
    try:
        await initialized(rpc, tmp_path / "project")
        rpc.writer.write(header + SESSIONS_41)
        error = await error_answer(rpc, 41)  # the id is read from the start of the body
        assert error["code"] == -32600
        assert reason in error["message"]
        assert (await rpc.request("totem/sessions", None))["result"] == []
        assert process.returncode is None
    finally:
        process.kill()
        await process.wait()


async def test_stdio_a_header_without_end_is_answered_under_a_null_id(tmp_path):
    rpc, process = await start_stdio(tmp_path)
    try:
        await initialized(rpc, tmp_path / "project")
        rpc.writer.write(b"X-Junk: " + b"a" * 20000)
        error = await error_answer(rpc, None)
        assert error["code"] == -32600 and "header" in error["message"]
        assert (await rpc.request("totem/sessions", None))["result"] == []
    finally:
        process.kill()
        await process.wait()


async def test_stdio_message_size_limit_comes_from_the_config(tmp_path):
    rpc, process = await start_stdio(tmp_path, config="lsp_max_message_bytes = 2000\n")
    try:
        await initialized(rpc, tmp_path / "project")
        # Over the limit, in many chunks of the pipe: refused, and skipped up to the next header.
        big = {"jsonrpc": "2.0", "id": 42, "method": "totem/chat", "params": {"text": "x" * 300_000}}
        rpc.send_body(json.dumps(big).encode())
        error = await error_answer(rpc, 42)
        assert error["code"] == -32600
        assert "over the limit of 2000 bytes" in error["message"]
        assert "lsp_max_message_bytes" in error["message"]
        # Under it: handled.
        answer = await rpc.request("totem/sessions", {"padding": "y" * 1800})
        assert answer["result"] == []
    finally:
        process.kill()
        await process.wait()


async def test_stdio_requests_without_params_are_answered(stdio_server):
    rpc, process = stdio_server
    rpc.send({"id": 51, "method": "totem/sessions"})
    assert (await rpc.response(51))["result"] == []
    rpc.send({"id": 52, "method": "totem/chat"})
    error = await error_answer(rpc, 52)
    assert error["code"] == -32602 and "text" in error["message"]
    rpc.send({"method": "totem/abort"})  # a notification without params: nothing to answer, no harm
    # A standard method whose params are required.
    rpc.send({"id": 53, "method": "textDocument/codeAction"})
    error = await error_answer(rpc, 53)
    assert error["code"] == -32602 and "textDocument/codeAction" in error["message"]
    assert (await rpc.request("totem/sessions", None))["result"] == []
    assert process.returncode is None


async def test_stdio_bodies_that_are_not_json_rpc_are_answered(stdio_server):
    rpc, process = stdio_server
    rpc.send_body(b'{"jsonrpc": "2.0", "id": 61, "method": "totem/sessions", "params": {oops')
    error = await error_answer(rpc, 61)
    assert error["code"] == -32700
    nested = b"[" * 100_000 + b"]" * 100_000
    rpc.send_body(b'{"jsonrpc": "2.0", "id": 62, "method": "totem/sessions", "params": ' + nested + b"}")
    error = await error_answer(rpc, 62)
    assert error["code"] == -32700
    rpc.send_body(b'{"id": 63, "method": "totem/sessions"}')
    error = await error_answer(rpc, 63)
    assert error["code"] == -32600 and "jsonrpc" in error["message"]
    rpc.send_body(b"[1, 2]")
    error = await error_answer(rpc, None)
    assert error["code"] == -32600
    rpc.send_body(b'{"jsonrpc": "2.0", "id": [64], "method": "totem/sessions"}')
    error = await error_answer(rpc, None)
    assert error["code"] == -32600 and "id" in error["message"]
    rpc.send_body(b'{"jsonrpc": "2.0", "id": 65, "method": 7}')
    error = await error_answer(rpc, 65)
    assert error["code"] == -32600 and "method" in error["message"]
    rpc.send_body(b'{"jsonrpc": "2.0", "id": 66, "method": "totem/sessions", "params": null}\xff')
    error = await error_answer(rpc, 66)
    assert error["code"] == -32700
    assert (await rpc.request("totem/sessions", None))["result"] == []
    assert process.returncode is None


async def test_stdio_requests_before_initialize_get_server_not_initialized(tmp_path):
    rpc, process = await start_stdio(tmp_path)
    try:
        error = await error_answer(rpc, rpc.request_id("totem/sessions", None))
        assert error["code"] == -32002
        assert "initialize" in error["message"]
        rpc.send({"method": "initialized", "params": {}})  # a notification before initialize is dropped
        rpc.send({"method": "totem/abort", "params": {"sessionId": "ses_x"}})
        error = await error_answer(rpc, rpc.request_id("shutdown", None))
        assert error["code"] == -32002
        await initialized(rpc, tmp_path / "project")
        assert (await rpc.request("totem/sessions", None))["result"] == []
        error = await error_answer(rpc, rpc.request_id("initialize", initialize_params(tmp_path / "project")))
        assert error["code"] == -32600 and "already" in error["message"]
    finally:
        process.kill()
        await process.wait()


async def test_stdio_exit_without_shutdown_exits_1(stdio_server):
    rpc, process = stdio_server
    assert (await rpc.request("totem/sessions", None))["result"] == []
    rpc.send({"method": "exit"})  # stdin stays open: the server ends on exit alone
    assert await asyncio.wait_for(process.wait(), WAIT) == 1


async def test_stdio_exit_after_shutdown_exits_0_and_requests_between_are_refused(stdio_server):
    rpc, process = stdio_server
    assert (await rpc.request("shutdown", None))["result"] is None
    error = await error_answer(rpc, rpc.request_id("totem/sessions", None))
    assert error["code"] == -32600 and "shut down" in error["message"]
    rpc.send({"method": "exit"})
    assert await asyncio.wait_for(process.wait(), WAIT) == 0


@pytest.mark.parametrize("token", ["sécret", "secret\udcff", "秘密", 12345, None, ["secret"]])
async def test_tcp_a_token_that_is_not_the_ascii_token_is_refused_and_the_connection_closed(tcp_server, token):
    port, process, root = tcp_server
    intruder = await connect(port)
    params = initialize_params(root)
    params["initializationOptions"] = {"token": token}
    refusal = await intruder.request("initialize", params)
    assert refusal["error"]["code"] == -32002
    assert "data" not in refusal["error"]
    assert await at_eof(intruder)
    assert process.returncode is None
    editor = await connect(port)
    assert "result" in await editor.request("initialize", initialize_params(root, token="secret"))


async def test_tcp_a_non_ascii_token_the_server_was_given_is_accepted(tmp_path):
    port = free_port()
    process = await asyncio.create_subprocess_exec(
        *SERVER, "--tcp", f"127.0.0.1:{port}", "--token", "sécret-秘密",
        env=isolated_env(tmp_path), stdin=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert "listening" in (await asyncio.wait_for(process.stderr.readline(), WAIT)).decode()
        wrong = await connect(port)
        assert (await wrong.request("initialize", initialize_params(tmp_path / "project", token="secret-秘密")))["error"]["code"] == -32002
        assert await at_eof(wrong)
        right = await connect(port)
        answer = await right.request("initialize", initialize_params(tmp_path / "project", token="sécret-秘密"))
        assert "result" in answer
        right.send({"method": "initialized", "params": {}})
        assert (await right.request("totem/sessions", None))["result"] == []
    finally:
        process.kill()
        await process.wait()
