"""The four wire parsers under arbitrary and mutated streams: only ProviderError subclasses
come out, never another exception, never a hang; what they accept is a well-formed answer."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.fuzz.support import SEEDS, aiter, check_answer, collect, examples, json_objects, mutated, payload_texts
from totem_engine.providers import anthropic, gemini, ollama, openai
from totem_engine.providers.errors import ProviderError
from totem_engine.providers.framing import NDJSONDecoder

SSE_PARSERS = {"openai": openai.parse_stream, "anthropic": anthropic.parse_stream, "gemini": gemini.parse_stream}


def refused(error: ProviderError) -> None:
    """A refused stream: the error says why (the turn shows it to the user)."""
    assert str(error).strip(), f"{type(error).__name__} with no message"


def run_sse(vendor: str, payloads: list[str]) -> None:
    try:
        chunks = collect(SSE_PARSERS[vendor](aiter(payloads)))
    except ProviderError as error:
        refused(error)
        return
    check_answer(chunks)


def run_ndjson(lines: list[str], cuts: list[int]) -> None:
    """Ollama: the lines as one NDJSON body cut into reads at ``cuts``, decoded, then parsed."""
    body = b"".join(line.encode("utf-8", "surrogatepass") + b"\n" for line in lines)
    decoder = NDJSONDecoder()
    try:
        values: list[Any] = []
        start = 0
        for cut in sorted({c % (len(body) + 1) for c in cuts}) + [len(body)]:
            values += decoder.feed(body[start:cut])
            start = cut
        values += decoder.finish()
        chunks = collect(ollama.parse_stream(aiter(values)))
    except ProviderError as error:
        refused(error)
        return
    check_answer(chunks)


def test_every_seed_stream_is_an_answer():
    # The mutations start from good streams: if a seed were refused, they would test nothing.
    assert all(SEEDS[vendor] for vendor in [*SSE_PARSERS, "ollama"])
    for vendor in SSE_PARSERS:
        for stream in SEEDS[vendor]:
            check_answer(collect(SSE_PARSERS[vendor](aiter(stream))))
    for stream in SEEDS["ollama"]:
        check_answer(collect(ollama.parse_stream(aiter([json.loads(line) for line in stream]))))


@settings(max_examples=examples(0.5))
@given(st.sampled_from(sorted(SSE_PARSERS)), st.lists(payload_texts, max_size=8))
def test_sse_parsers_take_arbitrary_payloads(vendor, payloads):
    run_sse(vendor, payloads)


@given(st.sampled_from(sorted(SSE_PARSERS)), st.lists(json_objects.map(json.dumps), max_size=8))
def test_sse_parsers_take_arbitrary_objects(vendor, payloads):
    run_sse(vendor, payloads)


@given(mutated("openai"))
def test_openai_takes_mutated_streams(stream):
    run_sse("openai", stream)


@given(mutated("anthropic"))
def test_anthropic_takes_mutated_streams(stream):
    run_sse("anthropic", stream)


@given(mutated("gemini"))
def test_gemini_takes_mutated_streams(stream):
    run_sse("gemini", stream)


@given(mutated("ollama"), st.lists(st.integers(min_value=0), max_size=6))
def test_ollama_takes_mutated_streams(stream, cuts):
    run_ndjson(stream, cuts)


@given(st.lists(payload_texts, max_size=8), st.lists(st.integers(min_value=0), max_size=6))
def test_ollama_takes_arbitrary_lines(lines, cuts):
    run_ndjson(lines, cuts)
