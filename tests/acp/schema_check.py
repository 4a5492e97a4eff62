"""Each recorded ACP message checked against the protocol's own JSON schema.

``acp_schema_v1.json`` is ACP's stable v1 schema (``schema/v1/schema.json`` of
https://github.com/agentclientprotocol/agent-client-protocol) as the npm SDK
``@agentclientprotocol/sdk`` 2.4.0 ships it (the client tests/acp/node_client.mjs uses; it has
every stable method up to ``elicitation/create``, ``session/resume|close|delete``, ``logout`` and
``additionalDirectories``), copied unchanged. Each method's params and result are checked against
the definition the schema names for it (``x-method``), an error against ``Error``.

The schema leaves objects open (extensibility), so it does not catch a field of Totem's own:
``undeclared`` walks a message along its definition and lists every key the definition does not
declare and that is not ``_meta`` or ``_``-prefixed (ACP's extensibility rule).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

SCHEMA = json.loads((Path(__file__).with_name("acp_schema_v1.json")).read_text())
DEFS: dict[str, Any] = SCHEMA["$defs"]
# (method, "params" | "result") -> the definition's name
_DEFINITIONS = {
    (d["x-method"], "result" if name.endswith("Response") else "params"): name for name, d in DEFS.items() if "x-method" in d
}
_VALIDATOR = Draft202012Validator({"$defs": DEFS})


class Traffic:
    """Every JSON-RPC message of a connection, both ways, as the SDK's observer sees it; a
    response knows its request's method."""

    def __init__(self) -> None:
        self.messages: list[tuple[str, str, dict[str, Any]]] = []  # (sender, method, message)
        self._asked: dict[tuple[str, Any], str] = {}  # (sender, id) -> method

    def observe(self, event: Any) -> None:
        """The connection's observer on the client's side: incoming is what the agent sent."""
        self.record("agent" if event.direction.name == "INCOMING" else "client", event.message)

    def record(self, sender: str, message: dict[str, Any]) -> None:
        if "method" in message:
            if "id" in message:
                self._asked[(sender, message["id"])] = message["method"]
            self.messages.append((sender, message["method"], message))
        else:
            asker = "client" if sender == "agent" else "agent"
            self.messages.append((sender, self._asked.pop((asker, message.get("id")), ""), message))

    def methods(self, sender: str) -> set[str]:
        return {method for who, method, _ in self.messages if who == sender}


def definition(method: str, message: dict[str, Any]) -> str | None:
    """The schema's definition for ``message`` (params, result or error) of ``method``."""
    if "error" in message:
        return "Error"
    return _DEFINITIONS.get((method, "result" if "result" in message else "params"))


def body(message: dict[str, Any]) -> Any:
    for key in ("params", "result", "error"):
        if key in message:
            return message[key]
    return None


def problems(method: str, message: dict[str, Any]) -> list[str]:
    """What is wrong with ``message`` by the schema: its validation errors and its undeclared fields."""
    name = definition(method, message)
    if name is None:
        return [f"{method}: no definition in the schema"]
    if message.get("jsonrpc") != "2.0":
        return [f"{method}: jsonrpc is {message.get('jsonrpc')!r}"]
    schema = {"$ref": f"#/$defs/{name}"}
    instance = body(message)
    errors = [f"{method} ({name}) at /{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in _validator(schema).iter_errors(instance)]
    return errors or [f"{method} ({name}): field {path} is not in the schema" for path in undeclared(schema, instance, "")]


def _validator(schema: dict[str, Any]) -> Draft202012Validator:
    return _VALIDATOR.evolve(schema={**schema, "$defs": DEFS})


def _resolved(schema: Any) -> list[dict[str, Any]]:
    """``schema`` and the subschemas that apply in place with it (``$ref``, ``allOf``), followed."""
    if not isinstance(schema, dict):
        return []
    found = [schema]
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        found += _resolved(DEFS[ref.removeprefix("#/$defs/")])
    for sub in schema.get("allOf", []):
        found += _resolved(sub)
    return found


def _applying(schema: Any, instance: Any) -> list[dict[str, Any]]:
    """Every subschema ``instance`` is checked against in place: the resolved ones, and the
    ``anyOf``/``oneOf`` branches it matches."""
    applying: list[dict[str, Any]] = []
    for node in _resolved(schema):
        applying.append(node)
        for branch in [*node.get("anyOf", []), *node.get("oneOf", [])]:
            if _validator(branch).is_valid(instance):
                applying += _applying(branch, instance)
    return applying


def undeclared(schema: Any, instance: Any, path: str) -> list[str]:
    """The paths of the keys in ``instance`` its schema does not declare, other than ``_``-prefixed
    ones; an object whose schema declares no properties at all is free-form (``rawInput``, ``data``)."""
    nodes = _applying(schema, instance)
    found: list[str] = []
    if isinstance(instance, dict):
        declared: dict[str, list[Any]] = {}
        for node in nodes:
            for key, sub in node.get("properties", {}).items():
                declared.setdefault(key, []).append(sub)
        if not declared:
            return []
        for key, value in instance.items():
            if key.startswith("_"):
                continue
            if key not in declared:
                found.append(f"{path}/{key}")
            for sub in declared.get(key, []):
                found += undeclared(sub, value, f"{path}/{key}")
    elif isinstance(instance, list):
        for node in nodes:
            if "items" in node:
                for index, item in enumerate(instance):
                    found += undeclared(node["items"], item, f"{path}/{index}")
    return sorted(set(found))
