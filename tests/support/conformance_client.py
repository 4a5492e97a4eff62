"""Totem's MCP client as the client under test of the official MCP conformance suite's client
scenarios (tests/mcp_server/test_conformance_client.py): the suite starts

    python tests/support/conformance_client.py SERVER_URL

(scenario in ``MCP_CONFORMANCE_SCENARIO``). It connects Totem's client (mcp/connection.py,
through mcp/login.py: the OAuth flow when the server asks for a login, its browser
loopback_browser.py, which approves at once), lists the tools, calls each with arguments made
from its input schema (the required ones), and exits 0, or 1 with the reason on stderr.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.support.loopback_browser import visit  # noqa: E402
from totem_engine.mcp.login import LoginFailed, logged_in  # noqa: E402
from totem_engine.mcp.specs import ServerSpec  # noqa: E402

SAMPLES = {"number": 2, "integer": 3, "string": "conformance", "boolean": True, "array": [], "object": {}}


def arguments(tool) -> dict:
    """A sample value for each required argument (an optional one is left out, as a model would)."""
    schema = tool.input_schema or {}
    properties = schema.get("properties") or {}
    return {name: SAMPLES.get(properties.get(name, {}).get("type"), "conformance") for name in schema.get("required") or []}


async def main(url: str) -> int:
    async def browse(authorization_url: str) -> None:
        await asyncio.to_thread(visit, authorization_url)

    spec = ServerSpec(name="conformance", source="client", path=Path("conformance"), url=url)
    try:
        async with logged_in(spec, Path(tempfile.gettempdir()), browse, timeout=60) as connection:
            for tool in connection.tools:
                result = await connection.call_tool(tool.name, arguments(tool), 30)
                print(tool.name, [getattr(part, "text", "") for part in result.content])
    except LoginFailed as exc:
        print(exc, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[-1])))
