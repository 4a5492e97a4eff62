"""Config loading: layer order, merging, validation messages, secrets."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from totem_engine.config import (
    Config,
    ConfigError,
    ConfigLayer,
    load_config,
    merge_layers,
    user_config_path,
)
from totem_engine.config import _deep_merge

SECRET = "sk-very-secret-123"


@pytest.fixture
def user_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user config path, isolated under tmp_path (not written yet)."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    path = user_config_path()
    assert path == tmp_path / "xdg" / "totem" / "config.toml"
    return path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    return root


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def project_file(root: Path, text: str) -> Path:
    return write(root / ".totem" / "config.toml", text)


def load_error(*args, **kwargs) -> str:
    with pytest.raises(ConfigError) as info:
        load_config(*args, **kwargs)
    return str(info.value)


def test_no_files_gives_defaults(user_file: Path, project: Path) -> None:
    loaded = load_config(project)
    assert loaded.layers == []
    assert loaded.config == Config()
    assert loaded.config.max_steps == 50
    assert loaded.config.mode == "build"


def test_later_layers_win(user_file: Path, project: Path, tmp_path: Path) -> None:
    write(user_file, 'model = "u/m"\nmode = "plan"\nmax_steps = 20\nrequest_timeout = 1.0\n')
    project_file(project, "max_steps = 30\nrequest_timeout = 2.0\nretry_max_wait = 5.0\n")
    cli_file = write(tmp_path / "cli.toml", "request_timeout = 4.0\n")
    loaded = load_config(
        project,
        config_file=cli_file,
        editor_settings={"max_steps": 40, "request_timeout": 3.0},
    )
    config = loaded.config
    assert config.model == "u/m"  # user only
    assert config.mode == "plan"  # user only
    assert config.retry_max_wait == 5.0  # project over default
    assert config.max_steps == 40  # editor over project over user
    assert config.request_timeout == 4.0  # --config over everything
    assert [layer.kind for layer in loaded.layers] == ["user", "project", "editor", "file"]
    assert [layer.source for layer in loaded.layers] == [
        str(user_file),
        str(project / ".totem" / "config.toml"),
        "editor settings",
        str(cli_file),
    ]
    assert loaded.layers[1].data == {"max_steps": 30, "request_timeout": 2.0, "retry_max_wait": 5.0}


def test_tables_merge_deeply(user_file: Path, project: Path) -> None:
    write(
        user_file,
        f"""
[providers.local]
kind = "openai"
api_key = "{SECRET}"
headers = {{ "X-A" = "1" }}

[permission]
edit = "ask"
bash = {{ "npm test" = "allow" }}
webfetch = {{ "*" = "ask" }}
""",
    )
    # The project layer alone lacks providers.local.kind; it validates because the merge has it.
    project_file(
        project,
        """
[providers.local]
base_url = "http://127.0.0.1:8080/v1"
headers = { "X-B" = "2" }

[permission]
bash = { "rm *" = "deny" }
webfetch = "deny"
""",
    )
    config = load_config(project).config
    local = config.providers["local"]
    assert local.kind == "openai"
    assert local.base_url == "http://127.0.0.1:8080/v1"
    assert local.api_key_value() == SECRET
    assert local.headers == {"X-A": "1", "X-B": "2"}
    assert config.permission == {
        "edit": "ask",
        "bash": {"npm test": "allow", "rm *": "deny"},
        "webfetch": "deny",  # a scalar replaces a table
    }


def test_table_replaces_scalar() -> None:
    layers = [
        ConfigLayer("a", "user", {"permission": {"bash": "ask"}}),
        ConfigLayer("b", "project", {"permission": {"bash": {"git *": "allow"}}}),
    ]
    assert merge_layers(layers).permission == {"bash": {"git *": "allow"}}


def test_deep_merge_replaces_arrays_and_keeps_inputs() -> None:
    # No key holds an array yet; the rule is checked on the merge itself.
    base = {"a": [1, 2], "t": {"x": 1, "u": {"p": 1}}}
    over = {"a": [3], "t": {"u": {"q": 2}}}
    assert _deep_merge(base, over) == {"a": [3], "t": {"x": 1, "u": {"p": 1, "q": 2}}}
    assert base == {"a": [1, 2], "t": {"x": 1, "u": {"p": 1}}}


def test_merge_layers_after_dropping_keys(user_file: Path, project: Path) -> None:
    write(user_file, 'mode = "plan"\n')
    project_file(project, 'mode = "build"\n[permission]\nbash = "allow"\n')
    loaded = load_config(project)
    assert loaded.config.permission == {"bash": "allow"}
    # What the trust check will do: drop keys an untrusted project may not set, then merge.
    kept = [
        layer
        if layer.kind != "project"
        else replace(layer, data={k: v for k, v in layer.data.items() if k != "permission"})
        for layer in loaded.layers
    ]
    config = merge_layers(kept)
    assert config.permission == {}
    assert config.mode == "build"


def test_missing_required_key_after_merge_names_sources(user_file: Path, project: Path) -> None:
    write(user_file, 'mode = "plan"\n')
    project_file(project, '[providers.local]\nbase_url = "http://x"\n')
    message = load_error(project)
    assert message == (
        f"{user_file} + {project / '.totem' / 'config.toml'}: "
        'providers.local: missing required key "kind"'
    )


def test_unknown_top_level_key_suggests(user_file: Path) -> None:
    write(user_file, "max_step = 5\n")
    with pytest.raises(ConfigError) as info:
        load_config(None)
    assert str(info.value) == f'{user_file}: unknown key "max_step"; did you mean "max_steps"?'
    assert info.value.source == str(user_file)


def test_unknown_nested_key_suggests(user_file: Path, project: Path) -> None:
    path = project_file(project, '[providers.x]\nkind = "ollama"\nbse_url = "http://x"\n')
    assert load_error(project) == (
        f'{path}: providers.x: unknown key "bse_url"; did you mean "base_url"?'
    )


def test_unknown_key_without_close_match_lists_known(user_file: Path) -> None:
    write(user_file, '[models."a/b"]\nwindow_thing = 1\n')
    assert load_error(None) == (
        f'{user_file}: models."a/b": unknown key "window_thing"; '
        "known keys: context_window, max_output_tokens, vision"
    )


def test_user_file_shown_under_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / ".config"))
    write(user_config_path(), "max_step = 5\n")
    assert load_error(None) == (
        '~/.config/totem/config.toml: unknown key "max_step"; did you mean "max_steps"?'
    )


@pytest.mark.parametrize(
    ("toml", "expected"),
    [
        ('max_steps = "50"', 'max_steps: expected an integer, got "50"'),
        ("max_steps = true", "max_steps: expected an integer, got true"),
        ("max_steps = -1", "max_steps: expected at least 0, got -1"),
        ('request_timeout = "soon"', 'request_timeout: expected a number, got "soon"'),
        ("permission_timeout = 0", "permission_timeout: expected more than 0, got 0"),
        ('mode = "yolo"', "mode: expected one of 'build' or 'plan', got \"yolo\""),
        (
            'model = "qwen"',
            'model: expected "<provider>/<model id>", e.g. "ollama/qwen2.5-coder", got "qwen"',
        ),
        ("providers = 3", "providers: expected a table, got 3"),
        (
            '[providers.myserver]\nkind = "opnai"',
            "providers.myserver.kind: expected one of 'openai', 'ollama', 'anthropic', 'gemini'"
            " or 'litellm', got \"opnai\"",
        ),
        (
            '[permission]\nbash = { "rm *" = "never" }',
            "permission.bash.\"rm *\": expected one of 'allow', 'ask' or 'deny', got \"never\"",
        ),
        (
            '[permission]\nedit = ["ask"]',
            "permission.edit: expected one of 'allow', 'ask' or 'deny', got an array",
        ),
        (
            '[models."a/b"]\ncontext_window = 8192.5',
            'models."a/b".context_window: expected an integer, got 8192.5',
        ),
    ],
)
def test_wrong_value_names_key_and_expectation(user_file: Path, toml: str, expected: str) -> None:
    write(user_file, toml + "\n")
    assert load_error(None) == f"{user_file}: {expected}"


def test_every_problem_is_reported(user_file: Path) -> None:
    write(user_file, 'mode = "x"\nmax_steps = -2\n')
    assert load_error(None).splitlines() == [
        f"{user_file}: max_steps: expected at least 0, got -2",
        f"{user_file}: mode: expected one of 'build' or 'plan', got \"x\"",
    ]


def test_editor_settings_errors_are_labelled(user_file: Path) -> None:
    assert load_error(None, editor_settings={"mode": "plan", "max_stesp": 3}) == (
        'editor settings: unknown key "max_stesp"; did you mean "max_steps"?'
    )


def test_toml_syntax_error_names_file_and_line(user_file: Path, project: Path) -> None:
    path = project_file(project, 'model = "a/b"\nmax_steps = \n')
    message = load_error(project)
    assert message.startswith(f"{path}: invalid TOML: ")
    assert "line 2" in message


def test_missing_files_are_skipped_but_named_config_file_is_not(
    user_file: Path, project: Path, tmp_path: Path
) -> None:
    assert load_config(project).layers == []
    missing = tmp_path / "nope.toml"
    assert load_error(project, config_file=missing) == f"{missing}: file not found"


@pytest.mark.parametrize(
    ("given", "effective", "raised"),
    [(0, 0, False), (1, 10, True), (5, 10, True), (9, 10, True), (10, 10, False), (50, 50, False)],
)
def test_max_steps_normalisation(given: int, effective: int, raised: bool) -> None:
    config = Config(max_steps=given)
    assert config.max_steps == effective
    assert bool(config.notes) == raised
    if raised:
        assert f"max_steps = {given} was raised to 10" in config.notes[0]


def test_max_steps_raised_after_merge(user_file: Path) -> None:
    write(user_file, "max_steps = 5\n")
    config = load_config(None).config
    assert config.max_steps == 10
    assert len(config.notes) == 1


def _with_providers(**kwargs) -> Config:
    return Config(providers={"or": {"kind": "openai"}, "local": {"kind": "ollama"}}, **kwargs)


def test_provider_and_model_splits_at_first_slash() -> None:
    config = _with_providers(model="or/meta-llama/llama-3.1-8b")
    assert config.provider_and_model() == ("or", "meta-llama/llama-3.1-8b")
    assert config.provider_and_model("local/qwen2.5-coder:7b") == ("local", "qwen2.5-coder:7b")


def test_provider_and_model_unknown_provider_names_known() -> None:
    with pytest.raises(ConfigError) as info:
        _with_providers().provider_and_model("nope/m")
    message = str(info.value)
    assert 'provider "nope" is not configured' in message
    assert '"or", "local"' in message


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [(None, "no model configured"), ("plain", 'expected "<provider>/<model id>"')],
)
def test_provider_and_model_without_usable_spec(spec: str | None, fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment):
        _with_providers().provider_and_model(spec)


def test_api_key_never_shown(user_file: Path, project: Path) -> None:
    write(
        user_file,
        f'[providers.p]\nkind = "openai"\napi_key = "{SECRET}"\n'
        f'headers = {{ Authorization = "{SECRET}" }}\n',
    )
    loaded = load_config(project)
    assert loaded.config.providers["p"].api_key_value() == SECRET
    for shown in (repr(loaded), str(loaded.config), repr(loaded.config), repr(loaded.layers)):
        assert SECRET not in shown
    # Errors in a file holding the key: another key wrong, the key name misspelt, a header wrong.
    for bad in (
        f'[providers.p]\nkind = "opnai"\napi_key = "{SECRET}"\n',
        f'[providers.p]\nkind = "openai"\napi_kye = "{SECRET}"\n',
        f'[providers.p]\nkind = "openai"\nheaders = "Authorization: {SECRET}"\n',
    ):
        write(user_file, bad)
        with pytest.raises(ConfigError) as info:
            load_config(project)
        assert SECRET not in str(info.value)
        assert "providers.p" in str(info.value)
        assert info.value.__cause__ is None and info.value.__suppress_context__


@pytest.mark.parametrize("value", ["inf", "nan"])
def test_a_temperature_that_is_no_number_is_refused(user_file: Path, project: Path, value: str) -> None:
    # JSON has no infinity or NaN: the request would go out as text no server reads.
    write(user_file, f'[providers.p]\nkind = "openai"\nbase_url = "http://127.0.0.1:1/v1"\ntemperature = {value}\n')
    assert "temperature" in load_error(project)
