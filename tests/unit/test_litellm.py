"""The LiteLLM provider against a loopback proxy: /model/info, the /models fallback, Ollama options."""

from __future__ import annotations

import pytest

from tests.support.model_server import ModelServer, _Handler, text_reply
from totem_engine.config import ProviderConfig
from totem_engine.providers.litellm import (
    LiteLLMProvider,
    ollama_options,
    parse_model_info,
    proxy_root,
)
from totem_engine.providers.registry import make_provider
from totem_engine.vocab.chat import ChatRequest, TextChunk
from totem_engine.vocab.messages import Message

MODEL_INFO = {
    "data": [
        {
            # What a real proxy answers for a model Ollama serves: nulls for what it cannot know.
            "model_name": "qwen-small",
            "litellm_params": {"model": "ollama_chat/qwen2.5:1.5b"},
            "model_info": {
                "max_input_tokens": None,
                "max_tokens": None,
                "max_output_tokens": None,
                "supports_function_calling": None,
                "supports_reasoning": None,
                "input_cost_per_token": None,
                "litellm_provider": "ollama_chat",
            },
        },
        {
            "model_name": "gpt",
            "litellm_params": {"model": "openai/gpt-4o"},
            "model_info": {
                "max_input_tokens": 128000,
                "max_tokens": 16384,
                "max_output_tokens": 16384,
                "supports_function_calling": True,
                "supports_reasoning": False,
                "supports_vision": True,
                "input_cost_per_token": 2.5e-06,
                "output_cost_per_token": 1e-05,
            },
        },
        {
            "model_name": "qwen-big",
            "litellm_params": {"model": "ollama/qwen2.5:14b"},
            "model_info": {"max_input_tokens": 32768},
        },
        # A second deployment of a name already listed: the first one describes the name.
        {"model_name": "qwen-small", "litellm_params": {"model": "openai/other"}, "model_info": {}},
    ]
}


class _ProxyHandler(_Handler):
    server_state: ProxyServer

    def do_GET(self) -> None:
        self.server_state.gets.append((self.path, dict(self.headers.items())))
        if self.path.rstrip("/") == "/model/info":
            info = self.server_state.model_info
            if isinstance(info, int):
                self.send_json(info, {"error": {"message": "Not Found"}})
            else:
                self.send_json(200, info)
        else:
            super().do_GET()


class ProxyServer(ModelServer):
    """The scripted model server plus ``GET /model/info`` (a dict body, or an error status)."""

    handler = _ProxyHandler

    def __init__(self, model_info: dict | int) -> None:
        super().__init__()
        self.model_info = model_info
        self.gets: list[tuple[str, dict]] = []

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def request(model: str, **kw) -> ChatRequest:
    return ChatRequest(model=model, system="You are Totem.", messages=(Message(role="user", text="hi"),), **kw)


async def answer(provider: LiteLLMProvider, req: ChatRequest) -> str:
    return "".join([c.text async for c in provider.stream(req) if isinstance(c, TextChunk)])


@pytest.fixture
def proxy():
    with ProxyServer(MODEL_INFO) as server:
        yield server


async def test_model_info_nulls_are_unknown_and_known_fields_are_kept(proxy):
    provider = LiteLLMProvider("gw", proxy.root, "sk-master-key")
    try:
        listed = {m.id: m for m in await provider.models()}
    finally:
        await provider.aclose()

    assert list(listed) == ["qwen-small", "gpt", "qwen-big"]
    small = listed["qwen-small"]
    assert (small.context_window, small.tools, small.reasoning, small.vision) == (None, None, None, None)
    assert small.extra == {"underlying": "ollama_chat/qwen2.5:1.5b", "underlying_provider": "ollama_chat"}
    gpt = listed["gpt"]
    assert (gpt.context_window, gpt.tools, gpt.reasoning, gpt.vision) == (128000, True, False, True)
    assert gpt.extra["input_cost_per_token"] == 2.5e-06 and gpt.extra["output_cost_per_token"] == 1e-05
    assert gpt.extra["underlying_provider"] == "openai"
    assert listed["qwen-big"].context_window == 32768
    path, headers = proxy.gets[0]
    assert path == "/model/info" and headers["Authorization"] == "Bearer sk-master-key"


async def test_ollama_model_gets_num_ctx_repeat_penalty_and_max_tokens(proxy):
    proxy.enqueue(text_reply("Hello"))
    proxy.enqueue(text_reply("Hi"))
    proxy.enqueue(text_reply("Big"))
    # A base URL written with /v1 reaches the same proxy.
    provider = LiteLLMProvider("gw", proxy.root + "/v1/", "sk-master-key")
    try:
        assert await answer(provider, request("qwen-small")) == "Hello"
        assert await answer(provider, request("gpt")) == "Hi"
        assert await answer(provider, request("qwen-big", max_tokens=300)) == "Big"
    finally:
        await provider.aclose()

    small, gpt, big = proxy.requests
    assert small["model"] == "qwen-small"
    assert small["num_ctx"] == 8192 and small["repeat_penalty"] == 1.1 and small["max_tokens"] == 2048
    assert small["messages"][0] == {"role": "system", "content": "You are Totem."}
    assert not {"num_ctx", "repeat_penalty", "max_tokens"} & set(gpt)
    # The proxy's window is used when it knows it; the request's own max_tokens is kept.
    assert big["num_ctx"] == 32768 and big["repeat_penalty"] == 1.1 and big["max_tokens"] == 300
    assert proxy.request_headers[0]["Authorization"] == "Bearer sk-master-key"
    # The catalogue is read once for all three requests.
    assert [p for p, _ in proxy.gets] == ["/model/info"]


async def test_model_list_falls_back_to_models_when_model_info_is_404():
    with ProxyServer(404) as proxy:
        proxy.models = [{"id": "qwen-small", "object": "model"}, {"id": "gpt", "object": "model"}]
        proxy.enqueue(text_reply("one"))
        proxy.enqueue(text_reply("two"))
        provider = LiteLLMProvider("gw", proxy.root)
        try:
            listed = await provider.models()
            assert await answer(provider, request("qwen-small")) == "one"
            assert await answer(provider, request("qwen-small")) == "two"
        finally:
            await provider.aclose()

    assert [(m.id, m.context_window, m.tools) for m in listed] == [("qwen-small", None, None), ("gpt", None, None)]
    assert [p for p, _ in proxy.gets][:2] == ["/model/info", "/v1/models"]
    # Without the catalogue nothing is known of the model behind the name: no Ollama options.
    assert all("num_ctx" not in body and "repeat_penalty" not in body for body in proxy.requests)
    # A failed /model/info is not asked again for every request.
    assert [p for p, _ in proxy.gets].count("/model/info") == 2  # models() once, stream once


def test_parse_model_info_skips_junk_and_rejects_non_lists():
    parsed = parse_model_info({"data": [None, {"model_name": 3}, {"model_name": "m", "model_info": {"max_tokens": True}}]})
    assert list(parsed) == ["m"] and parsed["m"].context_window is None
    with pytest.raises(Exception, match="did not answer a list"):
        parse_model_info({"data": {"model_name": "m"}})


def test_ollama_options_size_rules():
    info = parse_model_info(
        {
            "data": [
                {"model_name": "mid", "litellm_params": {"model": "ollama/llama3.1:8b"}, "model_info": {}},
                {"model_name": "capped", "litellm_params": {"model": "ollama/llama3.1:8b"}, "model_info": {"max_output_tokens": 900}},
                {"model_name": "tiny-window", "litellm_params": {"model": "ollama_chat/qwen3:4b"}, "model_info": {"max_input_tokens": 2048}},
            ]
        }
    )
    assert ollama_options(info["mid"], request("mid")) == {"num_ctx": 8192, "repeat_penalty": 1.1}
    assert ollama_options(info["capped"], request("capped"))["max_tokens"] == 900
    # Never more than half the window for the answer.
    assert ollama_options(info["tiny-window"], request("tiny-window"))["max_tokens"] == 1024
    assert ollama_options(None, request("x")) == {}


def test_registry_builds_litellm_with_the_default_address():
    provider = make_provider("gw", ProviderConfig(kind="litellm", api_key="sk-abcdef-123"), timeout=5)
    assert isinstance(provider, LiteLLMProvider)
    assert provider.base_url == "http://127.0.0.1:4000/v1" and provider.root == "http://127.0.0.1:4000"
    assert "sk-abcdef-123" not in repr(provider)
    assert proxy_root("http://gw:4000/v1/") == "http://gw:4000"
