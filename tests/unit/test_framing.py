"""totem_lsp.framing: the LSP base protocol read off a byte stream, in any chunking."""

from __future__ import annotations

import json

import pytest

from totem_engine.config import Config
from totem_lsp.framing import MAX_HEADER, BadFrame, Frames, content_length, head_id
from totem_lsp.server import MAX_MESSAGE_BYTES


def frame(body: bytes, header: bytes | None = None) -> bytes:
    return (header if header is not None else b"Content-Length: %d\r\n\r\n" % len(body)) + body


def body(msg_id: int, **extra) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": "totem/sessions", "params": extra or None}).encode()


async def read_all(stream: bytes, chunk: int, limit: int = 1000) -> list[bytes | BadFrame]:
    pieces = [stream[i : i + chunk] for i in range(0, len(stream), chunk)]

    async def read() -> bytes:
        return pieces.pop(0) if pieces else b""

    frames = Frames(read, lambda: limit)
    out = []
    while (item := await frames.next()) is not None:
        out.append(item)
    return out


@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 64, 100_000])
async def test_messages_and_bad_frames_come_out_the_same_in_any_chunking(chunk):
    good = [body(1), body(2, text="é \\r\\n Content-Length: 5"), body(3, pad="x" * 500)]
    stream = (
        frame(good[0])
        + b"\r\n"  # a blank line between messages
        + frame(good[1], b"content-length: %d\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n" % len(good[1]))
        + frame(body(4), b"Content-Length: 99999999999999999999\r\n\r\n")
        + frame(body(5, pad="y" * 2000))  # over the limit of 1000: skipped whole
        + frame(good[2])
    )
    out = await read_all(stream, chunk)
    assert out[:2] == good[:2]
    assert isinstance(out[2], BadFrame) and "over the limit" in out[2].reason
    assert isinstance(out[3], BadFrame) and "over the limit of 1000 bytes" in out[3].reason
    assert out[4:] == [good[2]]
    if chunk >= 64:  # the body's start was read with the header: its id is known
        assert (out[2].request_id, out[3].request_id) == (4, 5)


async def test_a_header_without_end_is_one_bad_frame_then_the_next_message_is_read():
    out = await read_all(b"X: " + b"a" * (3 * MAX_HEADER) + frame(body(7)), 4096)
    assert len(out) == 2
    assert isinstance(out[0], BadFrame) and "header" in out[0].reason
    assert out[1] == body(7)


async def test_the_end_of_the_stream_inside_a_message_ends_the_frames():
    assert await read_all(frame(body(1))[:-3], 10) == []
    assert await read_all(b"Content-Length: 5\r\n", 10) == []


@pytest.mark.parametrize(
    "header, expected",
    [
        (b"Content-Length: 12", 12),
        (b"Content-Length:12", 12),
        (b"CONTENT-LENGTH: 0012", 12),
        (b"Content-Type: x\r\nContent-Length: 3", 3),
        (b"Content-Length: 1001", "over the limit of 1000 bytes"),
        (b"Content-Length: " + b"9" * 10_000, "over the limit"),
        (b"Content-Length: -1", "not a number"),
        (b"Content-Length: 1e3", "not a number"),
        (b"Content-Length: \xef\xbc\x91", "not a number"),  # FULLWIDTH DIGIT ONE
        (b"Content-Length: 1\r\nContent-Length: 1", "more than one"),
        (b"Content-Type: x", "no Content-Length"),
        (b"junk", "without a colon"),
    ],
)
def test_content_length(header, expected):
    result = content_length(header, 1000)
    if isinstance(expected, int):
        assert result == expected
    else:
        assert isinstance(result, str) and expected in result


@pytest.mark.parametrize(
    "head, expected",
    [
        (b'{"jsonrpc": "2.0", "id": 7, "method": "x", "params": {"a": ', 7),
        (b'{"id":"abc","jsonrpc":"2.0"', "abc"),
        (b' \r\n{ "jsonrpc" : "2.0" , "id" : -3 }', -3),
        (b'{"jsonrpc": "2.0", "method": "x", "params": {"a": "trunc', None),  # the id would come later
        (b'{"id": true}', None),
        (b'{"id": 1.5}', None),
        (b'{"id": [1]}', None),
        (b'{"id": null}', None),
        (b"[1, 2]", None),
        (b"", None),
        (b'{"jsonrpc" "2.0", "id": 1}', None),
        (b'{"a": ' + b"[" * 50_000, None),
    ],
)
def test_head_id(head, expected):
    assert head_id(head) == expected


def test_the_server_limit_before_the_config_is_read_is_the_config_default():
    assert MAX_MESSAGE_BYTES == Config().lsp_max_message_bytes == 64 * 1024 * 1024
