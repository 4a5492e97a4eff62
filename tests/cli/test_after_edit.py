"""What runs after the agent's edit inside a turn, through the real ``totem run``: the project's
formatter rewrites the file on disk and its checks read it, and the model's next request carries
both results (not only ``format_file`` called on its own: tests/unit/test_formatter.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.support.model_server import text_reply, tool_reply

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
UGLY = "import os\ndef f( a,b ):\n  return {'a':a,'b':b}\n"
FORMATTED = 'import os\n\n\ndef f(a, b):\n    return {"a": a, "b": b}\n'


def test_the_formatter_and_the_checks_run_after_the_agents_write_and_the_model_reads_both(totem, ruff_on_path):
    shutil.rmtree(totem.project)
    shutil.copytree(FIXTURES / "python_ruff", totem.project)  # [format] ruff format, [checks.ruff] ruff check
    assert totem.run("trust", str(totem.project)).code == 0  # a project's own commands run once trusted
    totem.server.enqueue(tool_reply([("write", {"path": "app/ugly.py", "content": UGLY})]))
    totem.server.enqueue(text_reply("Written."))
    result = totem.agent("--yes", "Write app/ugly.py")

    assert result.code == 0, result.stderr
    assert (totem.project / "app" / "ugly.py").read_text() == FORMATTED
    [told] = [m["content"] for m in totem.server.requests[1]["messages"] if m["role"] == "tool"]
    assert "app/ugly.py was rewritten by the project's formatter" in told
    assert "F401" in told and "`os` imported but unused" in told, told
    [end] = result.of("toolEnd")
    assert end["changed"] == ["app/ugly.py"] and end["output"] == told
