"""Every configured header value and URL credential is a secret, like the API key (issue 16, item 5).

The regression tests are the two reproductions (``headers = {X-Api-Key = ...}`` and
``https://user:PASSWORD@host`` shown verbatim in errors); the properties vary the header, the
password's characters (percent-encoded in the URL) and where the server echoes them.
"""

from __future__ import annotations

import json
from urllib.parse import quote

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from totem_engine.providers.anthropic import AnthropicProvider
from totem_engine.providers.errors import ProviderError
from totem_engine.providers.gemini import GeminiProvider
from totem_engine.providers.openai import OpenAIProvider
from totem_engine.vocab.chat import ChatRequest
from totem_engine.vocab.messages import Message

PROPERTY = settings(max_examples=60, deadline=None)


def _echo(request: httpx.Request, status: int, content_type: str = "application/json") -> httpx.Response:
    """A server that repeats everything it was sent in its error: URL and headers."""
    sent = {"url": str(request.url), "headers": dict(request.headers)}
    body = json.dumps({"error": {"message": f"rejected {json.dumps(sent)}"}})
    return httpx.Response(status, content=body.encode(), headers={"content-type": content_type})


def _request() -> ChatRequest:
    return ChatRequest(model="m", system="", messages=(Message(role="user", text="hi"),))


async def _error(provider) -> str:
    with pytest.raises(ProviderError) as info:
        async for _ in provider.stream(_request()):
            pass
    return str(info.value)


def _client(handler) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.MockTransport(handler))


async def test_a_configured_header_value_is_not_shown_in_an_error():
    provider = OpenAIProvider("p", "http://127.0.0.1:9/v1", headers={"X-Api-Key": "hdr-secret-123"},
                              client=_client(lambda r: _echo(r, 401)))
    message = await _error(provider)
    assert "hdr-secret-123" not in message and "***" in message


async def test_a_password_in_base_url_is_not_shown_in_an_error():
    def refuse(request):
        raise httpx.ConnectError(f"connection refused to {request.url}", request=request)

    provider = OpenAIProvider("p", "https://user:PASSWORD@127.0.0.1:9/v1", client=_client(refuse))
    message = await _error(provider)
    assert "PASSWORD" not in message and "cannot connect" in message
    assert "PASSWORD" not in repr(provider)


# Each secret starts with a mark no error text holds, so "not in the message" cannot fail because
# the drawn secret happens to spell a part of the message that is not secret ("127.0.0.").
_SECRET = st.text(st.characters(codec="ascii", categories=("L", "N", "P", "S")), min_size=6, max_size=22).map(lambda s: "Zq" + s)
_HEADER = st.sampled_from(["X-Api-Key", "Authorization", "X-Gateway-Token", "Cookie", "api-key"])
_PROVIDERS = st.sampled_from([
    lambda url, headers, client: OpenAIProvider("p", url + "/v1", headers=headers, client=client),
    lambda url, headers, client: AnthropicProvider("p", url, headers=headers, client=client),
    lambda url, headers, client: GeminiProvider("p", url + "/v1beta", headers=headers, client=client),
])
_ANSWERS = st.sampled_from([
    lambda r: _echo(r, 401), lambda r: _echo(r, 500), lambda r: _echo(r, 429),
    lambda r: _echo(r, 200),  # a gateway's 200 with a JSON error instead of a stream
    lambda r: _echo(r, 200, "text/html"),
])


@PROPERTY
@given(_HEADER, _SECRET, _SECRET, _PROVIDERS, _ANSWERS)
async def test_no_header_value_or_url_credential_is_ever_shown(header, value, password, make, answer):
    url = f"https://{quote(password[:6], safe='')}:{quote(password, safe='')}@127.0.0.1:9"
    provider = make(url, {header: value}, _client(answer))
    message = await _error(provider)
    for secret in (value, password, quote(password, safe="")):
        assert secret not in message, (secret, message)
    assert quote(password, safe="") not in repr(provider)
