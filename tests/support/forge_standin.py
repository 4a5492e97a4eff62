"""A loopback stand-in for Forge (https://forge.totaljs.es/mcp/), made with the ``mcp`` package.

    python -m tests.support.forge_standin CALLS.jsonl

Serves streamable HTTP (https://modelcontextprotocol.io/specification/2025-11-25/basic/transports#streamable-http)
at ``http://127.0.0.1:PORT/mcp/`` (a free port, printed on the first stdout line) with Forge's
tool names: the four Totem offers (``Forge_search``, ``Forge_page``, ``Forge_verify_api``,
``Forge_source``) and three it leaves out (``Forge_feedback``, ``Forge_stats``,
``Forge_changelog``). Every call is appended to CALLS.jsonl as ``{"tool": ..., "arguments": ...}``,
so a test can assert the query Forge received. The search answers with plausible pages of the
product asked for, each with a score, not in the order of their scores; a ``recipe`` search of
jComponent puts the recipe that writes a component first. ``ForgeStandin`` runs it for a test.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Literal

ROOT = Path(__file__).resolve().parents[2]
BASE = "https://forge.totaljs.es/docs"

RECIPE_TEXT = """# Recipe: writing a jComponent

A component is declared with COMPONENT(name, config, factory):

```js
COMPONENT('counter', 'step:1', function(self, config, cls) {
	self.make = function() {
		self.aclass(cls);
		self.html('<button>+</button><span></span>');
		self.event('click', 'button', () => self.set((self.get() || 0) + config.step));
	};
	self.setter = function(value) {
		self.find('span').text(value || 0);
	};
});
```

`self.make` builds the element once; `self.setter` runs each time the bound path changes.
"""
ROUTING_TEXT = """# Routing

```js
exports.install = function() {
	ROUTE('GET /api/users/ --> Users/list');
};
```
"""
ACTIONS_TEXT = """# Actions

```js
NEWACTION('Users/list', {
	name: 'List users',
	action: function($) {
		$.callback([]);
	}
});
```
"""
PAGES = {  # url: (title, the page's Markdown)
    f"{BASE}/jcomponent/recipes/component/": ("Recipe: writing a jComponent", RECIPE_TEXT),
    f"{BASE}/jcomponent/api/setter/": (
        "jComponent: self.setter",
        "# self.setter(value, path, type)\n\nCalled when the value of the component's path changes. Use `self.set(value)`.\n",
    ),
    f"{BASE}/jcomponent/api/make/": ("jComponent: self.make", "# self.make()\n\nRuns once, when the component is created.\n"),
    f"{BASE}/jcomponent/bindings/": ("jComponent: data bindings", "# Bindings\n\n`data-bind=\"path__text\"`.\n"),
    f"{BASE}/jcomponent/events/": ("jComponent: events", "# Events\n\n`self.event('click', selector, fn)`.\n"),
    f"{BASE}/total5/routing/": ("Total.js 5: routing", ROUTING_TEXT),
    f"{BASE}/total5/actions/": ("Total.js 5: actions", ACTIONS_TEXT),
    f"{BASE}/total5/schemas/": ("Total.js 5: schemas", "# Schemas\n\n`NEWSCHEMA('User', 'name:String')`.\n"),
    f"{BASE}/total5/mail/": ("Total.js 5: sending e-mail", "# MAIL\n\n`MAIL(to, subject, view, model)`.\n"),
}
# (url, score) per product, not in the order of their scores.
RESULTS = {
    "jcomponent": [
        (f"{BASE}/jcomponent/api/make/", 0.62), (f"{BASE}/jcomponent/api/setter/", 0.81),
        (f"{BASE}/jcomponent/bindings/", 0.35), (f"{BASE}/jcomponent/recipes/component/", 0.74),
        (f"{BASE}/jcomponent/events/", 0.30),
    ],
    "totaljs5": [
        (f"{BASE}/total5/schemas/", 0.55), (f"{BASE}/total5/routing/", 0.88),
        (f"{BASE}/total5/actions/", 0.79), (f"{BASE}/total5/mail/", 0.20),
    ],
}
RECIPE = f"{BASE}/jcomponent/recipes/component/"


def app(calls: Path):
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("forge", instructions="Total.js documentation: search, then open pages.", log_level="WARNING")

    def record(tool: str, arguments: dict) -> None:
        with calls.open("a", encoding="utf-8") as out:
            out.write(json.dumps({"tool": tool, "arguments": arguments}) + "\n")

    @server.tool(name="Forge_search", description="Search the Total.js documentation.")
    def search(
        query: str, product: Literal["totaljs5", "jcomponent", "flow"] | None = None,
        kind: Literal["any", "guide", "api", "recipe"] = "any", limit: int = 10,
    ) -> dict:
        record("Forge_search", {"query": query, "product": product, "kind": kind, "limit": limit})
        found = [(url, score) for p, rows in RESULTS.items() if product in (None, p) for url, score in rows]
        if kind == "recipe":
            found = [(url, score + 0.5 if url == RECIPE else score) for url, score in found]
        rows = [{"title": PAGES[url][0], "url": url, "score": round(score, 2), "snippet": PAGES[url][1][:60]} for url, score in found]
        return {"results": rows[:limit]}

    @server.tool(name="Forge_page", description="One page of the documentation, as Markdown.")
    def page(url: str) -> str:
        record("Forge_page", {"url": url})
        if url not in PAGES:
            raise ValueError(f"no page {url}")
        return PAGES[url][1]

    @server.tool(name="Forge_verify_api", description="Whether a function exists in a product's API.")
    def verify_api(name: str, product: Literal["totaljs5", "jcomponent"] = "totaljs5") -> str:
        record("Forge_verify_api", {"name": name, "product": product})
        known = {"ROUTE", "NEWACTION", "NEWSCHEMA", "COMPONENT", "MAIL"}
        return f"{name}: {'exists' if name in known else 'not in the API'} ({product})"

    @server.tool(name="Forge_source", description="The source of a file of a Total.js package.")
    def source(path: str) -> str:
        record("Forge_source", {"path": path})
        return f"// {path}\nmodule.exports = {{}};\n"

    @server.tool(name="Forge_feedback", description="Send feedback on a page.")
    def feedback(text: str) -> str:
        record("Forge_feedback", {"text": text})
        return "thanks"

    @server.tool(name="Forge_stats", description="Usage statistics.")
    def stats() -> str:
        return "{}"

    @server.tool(name="Forge_changelog", description="Recent changes of the documentation.")
    def changelog() -> str:
        return "nothing new"

    return server.streamable_http_app(streamable_http_path="/mcp/")


class ForgeStandin:
    """The stand-in in a process of its own: ``url`` (for ``forge_url``) and ``calls()`` (what it
    was asked, in order)."""

    def __init__(self, folder: Path):
        self.log = folder / "forge-calls.jsonl"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.support.forge_standin", str(self.log)], cwd=ROOT, stdout=subprocess.PIPE, text=True,
        )
        assert self.process.stdout is not None
        self.port = int(self.process.stdout.readline())
        self.url = f"http://127.0.0.1:{self.port}/mcp/"
        for _ in range(200):
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.05)
        raise AssertionError("the Forge stand-in did not listen")

    def calls(self, tool: str | None = None) -> list[dict]:
        if not self.log.exists():
            return []
        rows = [json.loads(line) for line in self.log.read_text().splitlines() if line]
        return [row for row in rows if tool is None or row["tool"] == tool]

    def close(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)


def main() -> None:
    import uvicorn

    calls = Path(sys.argv[1])
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    print(sock.getsockname()[1], flush=True)
    uvicorn.Server(uvicorn.Config(app(calls), log_level="warning", lifespan="on")).run(sockets=[sock])


if __name__ == "__main__":
    main()
