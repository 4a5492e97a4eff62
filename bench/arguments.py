"""Tool-call arguments streamed in small pieces: parse time against the number of pieces.

For the OpenAI-compatible wire (``tool_calls[].function.arguments`` deltas) and Gemini's
``partialArgs`` (string pieces with ``willContinue``), the script feeds the provider's own
``parse_stream`` one call whose arguments arrive as N pieces of 16 characters, for N and 4N, and
prints the time per piece at each size and the ratio (4N / N). Linear parsing keeps the ratio
near 1; the old string concatenation made it grow with N (1 MB in 16-byte deltas: 42 s).

    .venv/bin/python bench/arguments.py [--pieces N] [--runs R]   default 16000, 3
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from collections.abc import AsyncIterator, Callable

from totem_engine.providers import gemini, openai

PIECE = "x" * 16


def openai_payloads(n: int) -> list[str]:
    def delta(arguments: str, **extra) -> str:
        call = {"index": 0, "function": {"arguments": arguments}, **extra}
        return json.dumps({"choices": [{"delta": {"tool_calls": [call]}}]})

    first = json.dumps({"choices": [{"delta": {"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "write", "arguments": '{"content": "'}}]}}]})
    last = json.dumps({"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"arguments": '"}'}}]}, "finish_reason": "tool_calls"}]})
    return [first, *(delta(PIECE) for _ in range(n)), last, "[DONE]"]


def gemini_payloads(n: int) -> list[str]:
    def part(fc: dict) -> str:
        return json.dumps({"candidates": [{"content": {"role": "model", "parts": [{"functionCall": fc}]}}]})

    opening = part({"name": "write", "willContinue": True, "partialArgs": [{"jsonPath": "$.content", "stringValue": "", "willContinue": True}]})
    pieces = [part({"partialArgs": [{"jsonPath": "$.content", "stringValue": PIECE, "willContinue": True}], "willContinue": True}) for _ in range(n)]
    closing = part({})
    end = json.dumps({"candidates": [{"content": {"role": "model", "parts": [{"text": ""}]}, "finishReason": "STOP"}]})
    return [opening, *pieces, closing, end]


async def _parse(parse: Callable[[AsyncIterator[str]], AsyncIterator], payloads: list[str]) -> tuple[float, int]:
    async def feed() -> AsyncIterator[str]:
        for payload in payloads:
            yield payload

    start = time.perf_counter()
    size = 0
    async for chunk in parse(feed()):
        call = getattr(chunk, "call", None)
        if call is not None:
            size = len(json.loads(call.arguments)["content"])
    return time.perf_counter() - start, size


def measure(name: str, parse, build: Callable[[int], list[str]], n: int, runs: int) -> None:
    per_piece = {}
    for count in (n, 4 * n):
        payloads = build(count)
        times = []
        for _ in range(runs):
            seconds, size = asyncio.run(_parse(parse, payloads))
            assert size == count * len(PIECE), (name, size)
            times.append(seconds)
        per_piece[count] = statistics.median(times) / count
        print(f"{name:7} {count:>7} pieces: {statistics.median(times):7.3f} s, {per_piece[count] * 1e6:6.2f} us a piece")
    print(f"{name:7} ratio of time a piece, {4 * n} / {n} pieces: {per_piece[4 * n] / per_piece[n]:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--pieces", type=int, default=16000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    measure("openai", openai.parse_stream, openai_payloads, args.pieces, args.runs)
    measure("gemini", gemini.parse_stream, gemini_payloads, args.pieces, args.runs)


if __name__ == "__main__":
    main()
