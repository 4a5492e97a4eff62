"""Config loading (config.py) of any TOML text and any editor settings: a ``Config`` or a
``ConfigError`` naming the source, never another exception (a RecursionError included)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.fuzz.support import CHEAP, examples, json_values, no_hang
from totem_engine.config import Config, ConfigError, load_config

KEYS = ["model", "small_model", "max_steps", "mode", "retry_max_wait", "forge", "kind", "base_url", "api_key",
        "headers", "bash", "edit", "context_window", "vision", "max_bytes", "command", "format", "x"]
TABLES = ["[providers.a]", "[providers.b]", "[permission]", "[permission.bash]", '[models."a/m"]', "[snapshots]",
          "[checks.lint]", "[[x]]", "[providers]", "[a.b.c]"]
VALUES = ['"a/m"', '"openai"', '"ollama"', '"http://u:p@127.0.0.1:1/v1"', "50", "-1", "0", "1.5", "true", '"allow"',
          '"ask"', '{ "npm *" = "allow" }', "[1, 2]", '"x"', "nan", "inf", "1979-05-27", '"""a\nb"""', "{a={b={c=1}}}",
          "[" * 300 + "]" * 300, "{a=" * 200 + "1" + "}" * 200]
lines = st.one_of(
    st.sampled_from(TABLES),
    st.builds(lambda k, v: f"{k} = {v}", st.sampled_from(KEYS), st.one_of(st.sampled_from(VALUES), st.text(max_size=10))),
    st.text(max_size=30),
)
tomls = st.one_of(st.lists(lines, max_size=12).map("\n".join), st.text(max_size=120))


# The user's own config is kept out by tests/conftest.py (XDG_CONFIG_HOME of each test's own).
FOLDER = Path(tempfile.mkdtemp(prefix="totem-fuzz-config-"))


@settings(max_examples=examples(CHEAP))
@given(tomls)
def test_any_toml_is_a_config_or_a_config_error(text):
    path = FOLDER / "fuzz.toml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    with no_hang():
        try:
            loaded = load_config(None, config_file=path)
        except ConfigError as problem:
            assert "fuzz.toml" in str(problem)
            return
    assert isinstance(loaded.config, Config)


@given(st.dictionaries(st.sampled_from(KEYS + ["providers", "permission", "models"]), json_values, max_size=5))
def test_any_editor_settings_are_a_config_or_a_config_error(settings):
    with no_hang():
        try:
            load_config(None, editor_settings=json.loads(json.dumps(settings)))
        except ConfigError as problem:
            assert "editor settings" in str(problem)
