"""``session/load`` replays what the client was shown live: the stream of ``session/update`` a
session sent while it ran (a plan, an allowed edit with its diff, a sub-agent's calls, a call that
failed, one that was denied) against the stream a fresh client gets from loading it."""

from __future__ import annotations

from typing import Any

from acp.schema import TextContentBlock, UserMessageChunk

from tests.acp.conftest import Client, running_acp
from tests.support.model_server import text_reply, tool_reply

# What the live stream has and a replay has not, by design: the session's state as it stands
# (commands, title, options, mode, context use), which a load tells once after its replay or in
# its answer, not as part of the conversation.
STATE = {"available_commands_update", "session_info_update", "config_option_update", "current_mode_update", "usage_update"}


def wire(update: Any) -> dict[str, Any]:
    """An update as it went on the wire (the npm client's report has them so already)."""
    return update if isinstance(update, dict) else update.model_dump(mode="json", by_alias=True, exclude_none=True)


def conversation(updates: list[Any], typed: list[str] | None = None) -> list[dict[str, Any]]:
    """The updates as the client ends up showing them. Normalised, each for a reason:
    - a tool call's updates folded into the call (ACP: an update replaces the fields it has),
      kept where the call opened: live, a call goes pending, then in progress once allowed, then
      ends; a replay knows only its end, so it opens and ends it at once;
    - consecutive message and thought chunks joined: live text comes in the pieces the model
      streamed, a replay has each stored part whole;
    - the session's state updates (``STATE``) left out;
    - ``typed``: the live stream has no ``user_message_chunk`` (the client typed it), so the
      prompts' texts are put before each turn's updates by the test."""
    shown: list[dict[str, Any]] = []
    calls: dict[str, dict[str, Any]] = {}
    for update in updates:
        data = wire(update)
        kind = data["sessionUpdate"]
        if kind in STATE:
            continue
        if kind == "tool_call":
            calls[data["toolCallId"]] = data
            shown.append(data)
        elif kind == "tool_call_update":
            calls[data["toolCallId"]].update({k: v for k, v in data.items() if k != "sessionUpdate"})
        elif kind.endswith("_chunk") and shown and shown[-1]["sessionUpdate"] == kind:
            shown[-1] = {**shown[-1], "content": {**shown[-1]["content"], "text": shown[-1]["content"]["text"] + data["content"]["text"]}}
        else:
            shown.append(data)
    return shown


def with_prompts(turns: list[tuple[str, list[Any]]]) -> list[Any]:
    joined: list[Any] = []
    for typed, updates in turns:
        joined.append(UserMessageChunk(session_update="user_message_chunk", content=TextContentBlock(type="text", text=typed)))
        joined += updates
    return joined


async def test_a_loaded_session_replays_the_conversation_as_it_was_shown_live(tmp_path, model):
    todos = [{"content": "read the code", "status": "in_progress"}, {"content": "fix the greeting", "status": "pending"}]
    done = [{"content": "read the code", "status": "completed"}, {"content": "fix the greeting", "status": "completed"}]
    async with running_acp(tmp_path, model, Client(answers=["allow_once", "reject_once"])) as first:
        (first.project / "app.py").write_text("def greet():\n    return 'hi'\n")
        await first.initialize()
        session_id = await first.new_session()
        model.enqueue(tool_reply([("todo", {"todos": todos})], text="Planning."))
        model.enqueue(tool_reply([("task", {"agent": "explore", "prompt": "find the greeting", "description": "find it"})]))
        model.enqueue(tool_reply([("read", {"path": "app.py"})]))  # the sub-agent's
        model.enqueue(text_reply("It is in app.py."))  # the sub-agent's answer
        model.enqueue(tool_reply([("read", {"path": "missing.py"})]))  # fails
        model.enqueue(tool_reply([("edit", {"path": "app.py", "old_string": "'hi'", "new_string": "'hello'"})]))  # allowed
        model.enqueue(tool_reply([("write", {"path": "new.txt", "content": "x\n"})]))  # denied
        model.enqueue(tool_reply([("todo", {"todos": done})]))
        model.enqueue(text_reply("Fixed the greeting.", reasoning="The edit went in."))
        await first.conn.prompt(session_id=session_id, prompt=[{"type": "text", "text": "fix the greeting"}])
        first_turn = list(first.client.updates)
        model.enqueue(text_reply("Nothing else."))
        await first.conn.prompt(session_id=session_id, prompt=[{"type": "text", "text": "anything else?"}])
        second_turn = first.client.updates[len(first_turn):]
        live = with_prompts([("fix the greeting", first_turn), ("anything else?", second_turn)])

    async with running_acp(tmp_path, model) as second:
        await second.initialize()
        await second.conn.load_session(cwd=str(second.project), session_id=session_id, mcp_servers=[])
        replayed = second.client.updates

    shown, again = conversation(live), conversation(replayed)
    # The allowed edit's diff: live from the permission request, replayed from the files its
    # stored part keeps.
    calls_shown = [u for u in again if u["sessionUpdate"] == "tool_call"]
    diffs = [block for call in calls_shown for block in call.get("content", []) if block["type"] == "diff"]
    assert [(d["path"], d["oldText"], d["newText"]) for d in diffs] == [
        (str(second.project / "app.py"), "def greet():\n    return 'hi'\n", "def greet():\n    return 'hello'\n")
    ]
    assert again == shown
    kinds = [u["sessionUpdate"] for u in again]
    assert kinds.count("plan") == 2 and kinds.count("user_message_chunk") == 2
    calls = {u["title"]: u for u in again if u["sessionUpdate"] == "tool_call"}
    assert calls["[explore] Read app.py"]["status"] == "completed"
    assert calls["Read missing.py"]["status"] == "failed" and calls["Read missing.py"]["rawOutput"]["status"] == "error"
    assert calls["Create new.txt"]["status"] == "failed" and calls["Create new.txt"]["rawOutput"]["status"] == "denied"
    # The sub-agent's call comes inside its task's, as it came live.
    titles = list(calls)
    assert titles.index("explore: find it") + 1 == titles.index("[explore] Read app.py")
