"""Capability records: the shipped table, precedence, evidence, the prose-edit check and the cache."""

from __future__ import annotations

import json
from importlib import resources

import pytest

from totem_engine.config import ModelOverride
from totem_engine.providers.base import ModelInfo
from totem_engine.providers.capabilities import (
    EVIDENCE_TTL,
    RECORD_TTL,
    CapabilityCache,
    CapabilityRecord,
    after_step,
    detect_prose_edit,
    output_budget,
    record_for,
    tier_from_size,
    with_evidence,
)

# ---------------------------------------------------------------------------------------------
# The table
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "model", "window", "output", "tier"),
    [
        ("anthropic", "claude-sonnet-4-5-20250929", 200_000, 64_000, "large"),
        ("openai", "anthropic/claude-sonnet-4.5", 200_000, 64_000, "large"),  # OpenRouter spelling
        ("anthropic", "claude-opus-4-1-20250805", 200_000, 32_000, "large"),
        ("anthropic", "claude-opus-4-20250514", 200_000, 32_000, "large"),
        ("anthropic", "claude-sonnet-4-20250514", 200_000, 64_000, "large"),
        ("anthropic", "claude-opus-4-6", 1_000_000, 128_000, "large"),
        ("anthropic", "claude-3-5-haiku-20241022", 200_000, 8_192, "large"),
        ("gemini", "gemini-2.5-pro", 1_048_576, 65_536, "large"),
        ("gemini", "models/gemini-2.0-flash", 1_048_576, 8_192, "medium"),
        ("gemini", "gemini-1.5-pro-002", 2_097_152, 8_192, "large"),
        ("openai", "deepseek-chat", 128_000, 8_192, "large"),
        ("openai", "deepseek-reasoner", 128_000, 65_536, "large"),
        ("openai", "gpt-4.1", 1_047_576, 32_768, "large"),
        ("openai", "gpt-4.1-nano", 1_047_576, 32_768, "medium"),
        ("openai", "gpt-4o-2024-08-06", 128_000, 16_384, "large"),
        ("openai", "gpt-5", 400_000, 128_000, "large"),
        ("openai", "gpt-5-chat-latest", 128_000, 16_384, "large"),
        ("openai", "o4-mini", 200_000, 100_000, "large"),
        ("openai", "gpt-3.5-turbo", 16_385, 4_096, "small"),
    ],
)
def test_table_lookups(kind, model, window, output, tier):
    record = record_for(kind, model)
    assert (record.context_window, record.max_output_tokens, record.tier) == (window, output, tier)
    assert record.source == "table"
    assert record.tool_call_format == "native" and record.native_tools and record.tools_reliable


def test_vendor_apis_that_stream_reasoning_are_not_think_tag_models():
    for kind, model in [("openai", "deepseek-reasoner"), ("anthropic", "claude-sonnet-4-5"), ("openai", "o3")]:
        record = record_for(kind, model)
        assert record.reasoning and not record.think_tags, model


def test_open_thinking_models_write_think_tags():
    assert record_for("ollama", "qwen3:8b").think_tags
    assert record_for("ollama", "deepseek-r1:14b").think_tags
    assert not record_for("ollama", "qwen3-coder:30b").think_tags
    assert not record_for("anthropic", "qwen3:8b").think_tags  # the entry is for local servers only


def test_qwen_coder_reads_calls_from_text():
    record = record_for("ollama", "qwen2.5-coder:7b")
    assert record.tool_call_format == "text" and record.native_tools
    assert record.tier == "small"


def test_unknown_model_defaults():
    record = record_for("openai", "my-finetune")
    assert record == CapabilityRecord(source="default")
    assert record.native_tools and record.tools_reliable and record.tool_call_format == "native"
    assert record.context_window is None and record.tier == "medium"


@pytest.mark.parametrize(
    ("model", "tier"),
    [("qwen2.5-coder:1.5b", "small"), ("llama3.1:8b", "small"), ("qwen2.5-coder:32b", "medium"),
     ("llama-3.3-70b-instruct", "large"), ("mixtral-8x22b", "medium"), ("phi4", None)],
)
def test_tier_from_size(model, tier):
    assert tier_from_size(model) == tier


def test_every_table_entry_is_valid():
    data = json.loads(resources.files("totem_engine.providers").joinpath("capabilities.json").read_text())
    fields = set(CapabilityRecord.__dataclass_fields__)
    allowed = fields | {"pattern", "providers", "source", "unsure"}
    for entry in data["families"]:
        assert set(entry) <= allowed, entry
        assert "source" in entry or "unsure" in entry, entry["pattern"]
        CapabilityRecord(**{k: v for k, v in entry.items() if k in fields})


# ---------------------------------------------------------------------------------------------
# Precedence: overrides > provider metadata > table > defaults
# ---------------------------------------------------------------------------------------------


def test_provider_metadata_wins_over_the_table():
    info = ModelInfo(id="gpt-4o", provider="router", context_window=64_000, vision=False)
    record = record_for("openai", "gpt-4o", info)
    assert record.context_window == 64_000 and not record.vision
    assert record.max_output_tokens == 16_384  # the table fills what the provider did not say
    assert record.source == "provider"


def test_provider_without_tools_reads_calls_from_text():
    info = ModelInfo(id="tiny", provider="local", tools=False)
    record = record_for("ollama", "tiny", info)
    assert not record.native_tools and record.tool_call_format == "text"


def test_ollama_thinking_capability_means_think_tags():
    assert record_for("ollama", "custom", ModelInfo(id="custom", provider="o", reasoning=True)).think_tags
    assert not record_for("ollama", "qwen3:8b", ModelInfo(id="qwen3:8b", provider="o", reasoning=False)).think_tags
    assert not record_for("openai", "custom", ModelInfo(id="custom", provider="o", reasoning=True)).think_tags


def test_overrides_win_over_everything():
    info = ModelInfo(id="gpt-4o", provider="router", context_window=64_000)
    record = record_for("openai", "gpt-4o", info, ModelOverride(context_window=32_000, max_output_tokens=2_000))
    assert (record.context_window, record.max_output_tokens) == (32_000, 2_000)
    record = record_for("openai", "unknown", None, {"context_window": 10_000})
    assert record.context_window == 10_000 and record.max_output_tokens is None


def test_output_budget_is_a_quarter_of_the_window_in_characters():
    assert output_budget(record_for("openai", "gpt-4o")) == 128_000
    assert output_budget(record_for("openai", "unknown")) == 50_000
    assert output_budget(record_for("openai", "unknown", None, {"context_window": 2_048})) == 4_000
    assert output_budget(None, default=7) == 7


# ---------------------------------------------------------------------------------------------
# Evidence
# ---------------------------------------------------------------------------------------------

NATIVE = CapabilityRecord()


def step(record=NATIVE, **kw):
    args = dict(tools_offered=True, native_calls=0, text_calls=0, malformed_calls=0, prose_edit=False)
    args.update(kw)
    return after_step(record, **args)


def test_a_call_in_the_text_without_native_calls_switches_to_text():
    record = step(text_calls=1)
    assert record.tool_call_format == "text" and record.evidence and record.tools_reliable


def test_no_switch_when_a_native_call_came_or_tools_were_not_offered():
    assert step(native_calls=1, text_calls=1) is NATIVE
    assert step(tools_offered=False, text_calls=1) is NATIVE
    assert step() is NATIVE  # a step that showed nothing changes nothing


def test_malformed_calls_mark_tools_unreliable():
    record = step(native_calls=1, malformed_calls=1)
    assert not record.tools_reliable and record.tool_call_format == "native" and record.evidence


def test_prose_edit_marks_unreliable_unless_earned_or_a_call_was_made():
    assert not step(prose_edit=True).tools_reliable
    assert step(prose_edit=True, native_calls=1) is NATIVE
    assert step(prose_edit=True, good_rounds=3) is NATIVE
    assert not step(prose_edit=True, good_rounds=2).tools_reliable


def test_remembered_evidence_survives_a_fresh_record():
    learned = step(text_calls=1, malformed_calls=1)
    fresh = record_for("openai", "gpt-4o", None, {"context_window": 50_000})
    merged = with_evidence(fresh, learned)
    assert merged.tool_call_format == "text" and not merged.tools_reliable
    assert merged.context_window == 50_000  # today's override, not the old window
    assert with_evidence(fresh, CapabilityRecord(tool_call_format="text")) is fresh  # no evidence


# ---------------------------------------------------------------------------------------------
# detect_prose_edit
# ---------------------------------------------------------------------------------------------

CODE = "```python\ndef add(a, b):\n    return a + b\n```"


@pytest.mark.parametrize(
    "text",
    [
        f"Replace the body of `add` in utils.py with:\n\n{CODE}",
        f"Here is the updated code:\n\n{CODE}\n\nSave it and run the tests.",
        f"You should change line 3 so it reads:\n{CODE}",
        f"Update the file `utils.py` like this:\n{CODE}",
        f"Reemplaza la función por esto:\n{CODE}",
    ],
)
def test_prose_edits_are_detected(text):
    assert detect_prose_edit(text)


@pytest.mark.parametrize(
    "text",
    [
        "Replace the body of `add` in utils.py with a call to sum().",  # no code block
        f"This is how `add` works today:\n\n{CODE}\n\nIt returns the sum.",  # explaining, not editing
        f"I could replace it with this:\n{CODE}\nShall I apply it?",  # a question back to the user
        "```python\n# replace the file here\nx = 1\n```",  # the words are inside the code only
        "Done. I updated the file.",
    ],
)
def test_other_answers_are_not_prose_edits(text):
    assert not detect_prose_edit(text)


# ---------------------------------------------------------------------------------------------
# The cache
# ---------------------------------------------------------------------------------------------


class Clock:
    def __init__(self):
        self.now = 1_000_000.0

    def __call__(self):
        return self.now


@pytest.fixture
async def cache(tmp_path):
    clock = Clock()
    store = CapabilityCache(tmp_path / "cache", clock=clock)
    store.clock_ = clock
    yield store
    await store.aclose()


MODELS = [
    ModelInfo(id="a", provider="p", context_window=8192, tools=True, extra={"owned_by": "me"}),
    ModelInfo(id="b", provider="p"),
]


async def test_catalogue_round_trip_and_expiry(cache):
    assert await cache.get_models("p|http://x") is None
    await cache.put_models("p|http://x", MODELS)
    assert await cache.get_models("p|http://x") == MODELS
    assert await cache.get_models("p|http://other") is None
    cache.clock_.now += 24 * 3600 - 1
    assert await cache.get_models("p|http://x") == MODELS
    cache.clock_.now += 2
    assert await cache.get_models("p|http://x") is None


async def test_models_fetches_once_then_serves_from_the_cache(cache):
    fetched = []

    async def fetch():
        fetched.append(1)
        return MODELS

    assert await cache.models("k", fetch) == MODELS
    assert await cache.models("k", fetch) == MODELS
    assert len(fetched) == 1
    await cache.models("k", fetch, refresh=True)
    assert len(fetched) == 2


async def test_records_expire_after_a_day_but_evidence_after_30_days(cache):
    plain = record_for("openai", "gpt-4o")
    learned = step(text_calls=1)
    await cache.put_record("local", "plain", plain)
    await cache.put_record("local", "learned", learned)
    assert await cache.get_record("local", "plain") == plain
    assert await cache.get_record("local", "learned") == learned
    cache.clock_.now += RECORD_TTL + 1
    assert await cache.get_record("local", "plain") is None
    assert await cache.get_record("local", "learned") == learned
    cache.clock_.now += EVIDENCE_TTL - RECORD_TTL
    assert await cache.get_record("local", "learned") is None


async def test_records_survive_a_new_cache_on_the_same_directory(tmp_path):
    first = CapabilityCache(tmp_path / "c")
    await first.put_record("p", "m", step(malformed_calls=1))
    await first.aclose()
    second = CapabilityCache(tmp_path / "c")
    try:
        record = await second.get_record("p", "m")
        assert record is not None and not record.tools_reliable and record.evidence
    finally:
        await second.aclose()


async def test_an_unusable_cache_directory_never_fails(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    broken = CapabilityCache(blocker / "cache")
    await broken.put_record("p", "m", NATIVE)  # dropped, with a warning
    assert await broken.get_record("p", "m") is None
    await broken.aclose()
