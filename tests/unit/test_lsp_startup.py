"""What ``totem lsp`` loads before it answers ``initialize``: pygls, lsprotocol, attrs and its own
method names and options, never the engine or pydantic (README "Performance")."""

from __future__ import annotations

import json
import subprocess
import sys


def test_the_server_module_loads_neither_the_engine_nor_pydantic():
    code = (
        "import json, sys\n"
        "import totem_lsp.server\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('totem_engine', 'pydantic', 'httpx'))))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout) == []
