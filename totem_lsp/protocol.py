"""The ``totem/*`` protocol: method names, command ids, error codes. docs/protocol.md is the spec.

Kept free of heavy imports: the server registers its handlers with these names at start-up, and
``totem lsp`` must answer ``initialize`` about as fast as a bare pygls server. The payload types,
which need pydantic, live in ``totem_lsp.messages`` and load with the engine.
"""

PROTOCOL_VERSION = 1

# Client -> server requests and notifications.
CHAT = "totem/chat"
ABORT = "totem/abort"
SESSIONS = "totem/sessions"
SESSION = "totem/session"
MODELS = "totem/models"
SET_MODEL = "totem/setModel"
SET_MODE = "totem/setMode"
UNDO = "totem/undo"
REDO = "totem/redo"
COMPACT = "totem/compact"
AGENTS = "totem/agents"
AGENT_SAVE = "totem/agentSave"
AGENT_DELETE = "totem/agentDelete"
HOOKS = "totem/hooks"
COMMANDS = "totem/commands"
JOB_STOP = "totem/jobStop"
REWIND = "totem/rewind"
RETRY = "totem/retry"
REGENERATE = "totem/regenerate"
VARIANT = "totem/variant"
FORK = "totem/fork"
COMPLETE = "totem/complete"
MCP_LOGIN = "totem/mcpLogin"
TOOLS = "totem/tools"
MCP_SERVERS = "totem/mcpServers"

# Server -> client.
EVENT = "totem/event"
PERMISSION = "totem/permission"
QUESTION = "totem/question"
TRUST = "totem/trust"

# workspace/executeCommand ids: distinct from the editors' own palette commands (totem.*).
CMD_ASK = "totem.server.ask"
CMD_ABORT = "totem.server.abort"
CMD_UNDO = "totem.server.undo"
CMD_REDO = "totem.server.redo"

# JSON-RPC error codes of our own, in the range the spec leaves to servers.
SESSION_BUSY = -32001
BAD_TOKEN = -32002
CONFIG_ERROR = -32003
UNAVAILABLE = -32004


def plain(value):
    """Nested namedtuples (pygls' form of params it has no type for) as dicts and lists.

    Without recursion: a client's params nested 500 deep, which pygls reads, converted by
    recursion ran out of stack (RecursionError, an internal error instead of invalid params).
    """
    root, items = _opened(value)
    pending = [(root, items)] if items is not None else []
    while pending:
        container, items = pending.pop()
        for key, child in items:
            converted, child_items = _opened(child)
            if isinstance(container, list):
                container.append(converted)
            else:
                container[key] = converted
            if child_items is not None:
                pending.append((converted, child_items))
    return root


def _opened(value):
    """(an empty dict or list to fill, the (key, child) pairs to fill it with), or (value, None)
    for a value that is not a container."""
    if hasattr(value, "_asdict"):
        return {}, list(value._asdict().items())
    if isinstance(value, dict):
        return {}, list(value.items())
    if isinstance(value, (list, tuple)):
        return [], list(enumerate(value))
    return value, None
