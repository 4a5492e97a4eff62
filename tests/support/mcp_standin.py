"""A stdio MCP server that misbehaves the way real ones do, written by hand (no SDK), for tests.

    python -m tests.support.mcp_standin [--noisy] [--die-on-call CODE] [--silent] [--image] [--writer]

One JSON-RPC message per line (https://modelcontextprotocol.io/specification/2025-11-25/basic/transports#stdio).
It answers ``initialize``, ``tools/list`` (one tool, ``echo``; with ``--image`` also ``picture``,
which returns a 640x480 PNG) and ``tools/call``. ``--noisy`` prints banner lines and blank lines
on stdout before its first message and between messages; ``--die-on-call CODE`` writes a line to
stderr and exits with CODE when a tool is called; ``--silent`` reads its input and never answers.
``--writer``: ``echo`` says it only reads (``readOnlyHint``) and ``write_note`` (no annotations)
writes ``text`` into the file ``path`` of its working folder.
"""

from __future__ import annotations

import argparse
import base64
import json
import struct
import sys
import zlib


def png(width: int, height: int) -> bytes:
    """A valid grey PNG of that size (one filter byte and ``width`` grey bytes per row)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    rows = b"".join(b"\x00" + b"\x80" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


TOOLS = [{
    "name": "echo",
    "description": "Echo the text back.",
    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
}]
PICTURE = {"name": "picture", "description": "A picture.", "inputSchema": {"type": "object", "properties": {}}}
WRITER = [
    {**TOOLS[0], "annotations": {"readOnlyHint": True}},
    {
        "name": "write_note",
        "description": "Write text into a file.",
        "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}, "text": {"type": "string"}}},
    },
]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--noisy", action="store_true")
    parser.add_argument("--die-on-call", type=int, default=None)
    parser.add_argument("--silent", action="store_true")
    parser.add_argument("--image", action="store_true")
    parser.add_argument("--writer", action="store_true")
    args = parser.parse_args()
    out = sys.stdout

    def say(message: dict) -> None:
        if args.noisy:
            out.write("\nprocessing request...\n")
        out.write(json.dumps(message) + "\n")
        out.flush()

    if args.noisy:
        out.write("Server starting...\n\n== standin MCP server v1 ==\n")
        out.flush()
    for line in sys.stdin:
        if args.silent or not line.strip():
            continue
        request = json.loads(line)
        method, ident = request.get("method"), request.get("id")
        if ident is None:
            continue  # a notification
        if method == "initialize":
            result = {
                "protocolVersion": request["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "standin", "version": "1"},
            }
        elif method == "tools/list":
            result = {"tools": (WRITER if args.writer else TOOLS) + ([PICTURE] if args.image else [])}
        elif method == "tools/call":
            if args.die_on_call is not None:
                sys.stderr.write("standin: fatal: the database went away\n")
                sys.stderr.flush()
                sys.exit(args.die_on_call)
            if request["params"]["name"] == "write_note":
                arguments = request["params"].get("arguments", {})
                with open(arguments["path"], "w") as note:
                    note.write(arguments["text"])
                result = {"content": [{"type": "text", "text": f"wrote {arguments['path']}"}]}
            elif request["params"]["name"] == "picture":
                data = base64.b64encode(png(640, 480)).decode()
                result = {"content": [{"type": "text", "text": "Here it is."}, {"type": "image", "data": data, "mimeType": "image/png"}]}
            else:
                text = request["params"].get("arguments", {}).get("text", "")
                result = {"content": [{"type": "text", "text": f"echo: {text}"}]}
        elif method == "ping":
            result = {}
        else:
            say({"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": f"no method {method}"}})
            continue
        say({"jsonrpc": "2.0", "id": ident, "result": result})


if __name__ == "__main__":
    main()
