"""aider on one Exercism exercise, through aider's own Python API as its benchmark drives it.

Run by ``exercism.py`` with the Python of aider's venv (aider-chat 0.86.2):

    python exercism_aider.py EXERCISE_DIR COPY METADATA_JSON MODEL TEST_COMMAND_JSON

One ``Coder`` (``whole`` edit format, no git, unstreamed, every question answered yes, no shell
command suggestions, no other files pulled in from mentions) keeps its chat across the two
tries, as aider's ``benchmark.py`` does; the check between tries is ``exercism_protocol.check``.
The model server comes from ``OPENAI_API_BASE``. Prints one JSON line: ``{"outcomes": [bool,
...], "seconds": [s, ...], "checks": [output, ...]}``, the seconds being each try's
``coder.run`` alone.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import exercism_protocol as protocol
from aider.coders import Coder
from aider.io import InputOutput
from aider.models import Model, register_litellm_models


def main(exercise_dir: str, copy_dir: str, metadata: str, model: str, test_command: str) -> None:
    exercise, copy = protocol.Exercise.load(Path(exercise_dir)), Path(copy_dir)
    register_litellm_models([metadata])
    io = InputOutput(pretty=False, yes=True, chat_history_file=copy.parent / f"{copy.name}.aider.chat.history.md")
    coder = Coder.create(
        Model(model), "whole", io, fnames=[str(copy / f) for f in exercise.solution], use_git=False,
        stream=False, suggest_shell_commands=False,
    )  # fmt: skip
    coder.get_file_mentions = lambda _text: set()  # as the benchmark: no other file is added
    message, outcomes, seconds, checks = protocol.request(exercise), [], [], []
    for _ in range(protocol.TRIES):
        start = time.monotonic()
        coder.run(with_message=message, preproc=False)
        seconds.append(round(time.monotonic() - start, 2))
        result = protocol.check(exercise, copy, json.loads(test_command))
        outcomes.append(result.passed)
        checks.append(result.output)
        if result.passed:
            break
        message = protocol.feedback(result, exercise)
    print(json.dumps({"outcomes": outcomes, "seconds": seconds, "checks": checks}))


if __name__ == "__main__":
    main(*sys.argv[1:])
