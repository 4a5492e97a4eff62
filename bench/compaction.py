"""Compaction cost on a long session: load, estimate and compact 10,000 messages.

Builds a session of N messages (default 10,000) in a temp database: one user request, then
assistant steps that each read a file (text, one tool call, a result of about 2,000 characters).
Then, in the same run and alternating, RUNS times each:

- **json**: ``json.loads`` of the same messages as JSON text (``Store.export``'s form), the baseline;
- **load**: ``Store.messages(session)``, the loop's read of the session each step;
- **estimate**: ``to_messages`` of those messages and ``context.input_tokens`` of the request;
- **compact**: ``compaction.fit`` on the loaded messages with a 32K window: one-line accounts,
  then a summary checkpoint (the summariser is a stub that answers at once, so the figure is
  Totem's own work, not a model's; nothing is written to the store).

It prints each median and its ratio to the json median.

    .venv/bin/python bench/compaction.py [--messages N] [--runs R]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from totem_engine.compaction import build_ledger, fit  # noqa: E402
from totem_engine.context import input_tokens, output_reserve  # noqa: E402
from totem_engine.history import to_messages  # noqa: E402
from totem_engine.store import Store, new_id  # noqa: E402
from totem_engine.tools.registry import builtin_tools  # noqa: E402
from totem_engine.vocab.chat import ChatRequest  # noqa: E402
from totem_engine.vocab.tools import ToolSpec

WINDOW = 32_768
SYSTEM = "You are Totem, a coding agent. " * 40
SPECS = (
    ToolSpec("read", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}}}),
    ToolSpec("bash", "Run a command.", {"type": "object", "properties": {"command": {"type": "string"}}}),
)


def build(messages):
    return ChatRequest(model="m", system=SYSTEM, messages=tuple(messages), tools=SPECS)


async def summarise(system: str, text: str) -> str:
    return "## Goal\nBench.\n## Next step\nGo on."


def fill(db: Path, session_id: str, count: int) -> None:
    """Write ``count`` messages straight into the database (setup, not measured)."""
    conn = sqlite3.connect(db)
    now = time.time()
    parent = None  # each message follows the one before it on the session's one branch
    with conn:
        for seq in range(count):
            message_id = new_id("msg")
            role = "user" if seq == 0 else "assistant"
            conn.execute(
                "INSERT INTO messages (id, session_id, seq, role, turn_id, step, model, created_at, parent_id)"
                " VALUES (?, ?, ?, ?, 'trn_bench', ?, ?, ?, ?)",
                (message_id, session_id, seq, role, None if seq == 0 else seq, None if seq == 0 else "sim/m", now,
                 parent),
            )
            parent = message_id
            parts: list[tuple[str, dict, str | None]] = []
            if seq == 0:
                parts.append(("text", {"text": "Read every module and report what each one does."}, None))
            else:
                path = f"src/module_{seq:05d}.py"
                body = "\n".join(f"{n}\tdef function_{seq}_{n}(value): return value * {n}" for n in range(1, 45))
                args = json.dumps({"path": path})
                parts.append(("text", {"text": f"Reading {path} to see what it does."}, None))
                parts.append(("tool", {"callId": f"call_{seq}", "tool": "read", "arguments": args,
                                       "input": {"path": path}, "output": body, "summary": "44 lines"}, "ok"))
            for n, (kind, data, status) in enumerate(parts):
                conn.execute(
                    "INSERT INTO parts (id, message_id, session_id, seq, type, data, status, discarded,"
                    " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?, ?)",
                    (new_id("prt"), message_id, session_id, n, kind, json.dumps(data), status, now, now),
                )
        conn.execute("UPDATE sessions SET head = ? WHERE id = ?", (parent, session_id))
    conn.close()


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.db"
        store = Store(db)
        session = await store.create_session(cwd=tmp, model="sim/m")
        await store.close()
        fill(db, session.id, options.messages)
        store = Store(db)
        exported = await store.export(session.id)
        as_json = json.dumps(exported["messages"])
        stored = await store.messages(session.id)
        assert len(stored) == options.messages
        ledger = build_ledger(stored, [])
        reserve = output_reserve(None, WINDOW)
        tools = builtin_tools(skills=())

        times: dict[str, list[float]] = {"json": [], "load": [], "estimate": [], "compact": []}
        results = {}
        for _ in range(options.runs + 1):  # the first round warms up and is not counted
            start = time.perf_counter()
            json.loads(as_json)
            t_json = time.perf_counter() - start

            start = time.perf_counter()
            loaded = await store.messages(session.id)
            t_load = time.perf_counter() - start

            start = time.perf_counter()
            tokens = input_tokens(build(to_messages(loaded)))
            t_estimate = time.perf_counter() - start

            start = time.perf_counter()
            fitted = await fit(
                loaded, build=build, window=WINDOW, output_reserve=reserve, ledger=ledger, tools=tools, complete=summarise
            )
            t_compact = time.perf_counter() - start

            results = {"tokens": tokens, "fitted": fitted}
            for name, value in (("json", t_json), ("load", t_load), ("estimate", t_estimate), ("compact", t_compact)):
                times[name].append(value)
        await store.close()

    for name in times:
        times[name] = times[name][1:]
    base = statistics.median(times["json"])
    fitted = results["fitted"]
    print(f"{options.messages} messages ({len(as_json) / 1e6:.1f} MB as JSON), {options.runs} runs, medians:")
    print(f"  session estimate before compaction: {results['tokens']} tokens; window {WINDOW}")
    print(
        f"  after fit: estimate {fitted.estimate}, {fitted.accounts} accounts, checkpoint written: "
        f"{fitted.checkpoint_written}, {len(fitted.messages)} messages sent"
    )
    print(f"  {'json.loads':<10} {base * 1000:8.1f} ms   ratio 1.00")
    for name in ("load", "estimate", "compact"):
        median = statistics.median(times[name])
        print(f"  {name:<10} {median * 1000:8.1f} ms   ratio {median / base:.2f}")


if __name__ == "__main__":
    asyncio.run(main())
