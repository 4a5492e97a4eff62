"""A small real Total.js project checks clean; detection of Total.js projects; the config keys."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from totem_engine.checks.registry import run_checks
from totem_engine.checks.totaljs import TotalJsChecker, applies_to, check_text, is_totaljs_project
from totem_engine.config import Config, ConfigError, ConfigLayer, merge_layers

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "totaljs"


def _checked_files() -> list[str]:
    return sorted(
        p.relative_to(FIXTURE).as_posix() for p in FIXTURE.rglob("*") if p.is_file() and applies_to(p.relative_to(FIXTURE).as_posix())
    )


def test_the_fixture_has_a_definition_a_schema_with_actions_a_route_and_a_page():
    files = _checked_files()
    assert {"definitions/func.js", "schemas/orders.js", "actions/orders.js", "controllers/default.js", "views/index.html"} <= set(files)
    assert "schema.action(" in (FIXTURE / "schemas/orders.js").read_text()
    assert "ROUTE(" in (FIXTURE / "controllers/default.js").read_text()
    assert "<ui-component" in (FIXTURE / "views/index.html").read_text()


@pytest.mark.parametrize("rel", _checked_files())
async def test_the_fixture_project_checks_clean(rel):
    result = await TotalJsChecker().check(FIXTURE, rel, (FIXTURE / rel).read_text(encoding="utf-8"))
    assert [f.for_model() for f in result.findings] == []
    assert result.notes == []


@pytest.mark.parametrize(
    "rel, old, new, code",
    [
        ("schemas/orders.js", "\t\t\tvar p = FUNC", "\t\t\tconst p = FUNC", "TJS010"),
        ("controllers/default.js", "$.json({ ok: true, ts: NOW });", "$.json({ success: true, value: NOW });", "TJS040"),
        ("definitions/func.js", "CRON('*/5 * * * *', function() {", "setInterval(function() {", "TJS031"),
        ("actions/orders.js", "NEWACTION('Orders|read'", "NEWACTION('read_order'", "TJS062"),
        ("views/index.html", "var model = exports.form;", 'var model = exports.form["x"];', "TJS003"),
        ("index.js", "require('total5');", "require('total5')", "TJS002"),
    ],
)
def test_a_change_against_the_conventions_in_the_fixture_is_caught(rel, old, new, code):
    text = (FIXTURE / rel).read_text(encoding="utf-8")
    assert old in text
    assert [f.code for f in check_text(rel, text.replace(old, new, 1)).findings] == [code]


async def test_run_checks_passes_the_checker_through_the_registry(tmp_path):
    result = await run_checks([TotalJsChecker()], tmp_path, "modules/Storage.js", "const fs = require('fs')\n", external=False)
    assert [f.code for f in result.findings] == ["TJS060", "TJS022", "TJS002"]


# Detection ---------------------------------------------------------------------------------------------


def _package(root: Path, data) -> None:
    (root / "package.json").write_text(json.dumps(data) if not isinstance(data, str) else data)


def test_the_fixture_is_a_total_js_project():
    assert is_totaljs_project(FIXTURE, "auto")
    assert not is_totaljs_project(FIXTURE, "never")


@pytest.mark.parametrize("key", ["dependencies", "devDependencies"])
def test_a_package_that_depends_on_total5_is_one(tmp_path, key):
    _package(tmp_path, {"name": "x", key: {"total5": "^0.0.1"}})
    (tmp_path / "index.js").write_text("require('total5');\n")
    assert is_totaljs_project(tmp_path, "auto")


@pytest.mark.parametrize(
    "package",
    [{"name": "x", "dependencies": {"express": "^4"}}, {"name": "x", "dependencies": {"total4": "^0.1"}}, "{not json", "[]"],
)
def test_a_package_without_total5_is_not_one(tmp_path, package):
    _package(tmp_path, package)
    assert not is_totaljs_project(tmp_path, "auto")


def test_an_empty_or_missing_folder_is_new(tmp_path):
    assert is_totaljs_project(tmp_path, "auto")
    assert is_totaljs_project(tmp_path / "not-yet", "auto")


def test_dotfiles_readme_and_license_keep_a_folder_new(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".totem").mkdir()
    (tmp_path / ".totem" / "config.toml").write_text('totaljs = "auto"\n')
    (tmp_path / ".gitignore").write_text("node_modules\n")
    (tmp_path / "README.md").write_text("# new\n")
    (tmp_path / "LICENSE").write_text("MIT\n")
    assert is_totaljs_project(tmp_path, "auto")


@pytest.mark.parametrize("other", ["pyproject.toml", "go.mod", "main.py", "notes.txt"])
def test_any_other_file_means_another_kind_of_project(tmp_path, other):
    (tmp_path / "README.md").write_text("# x\n")
    (tmp_path / other).write_text("")
    assert not is_totaljs_project(tmp_path, "auto")


def test_a_folder_is_not_new(tmp_path):
    (tmp_path / "src").mkdir()
    assert not is_totaljs_project(tmp_path, "auto")


def test_always_and_never_decide(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\n")
    assert is_totaljs_project(tmp_path, "always")
    assert not is_totaljs_project(tmp_path, "auto")
    copy = tmp_path / "app"
    shutil.copytree(FIXTURE, copy)
    assert not is_totaljs_project(copy, "never")


# Config keys ---------------------------------------------------------------------------------------------


def test_config_keys_default_and_validate():
    config = Config()
    assert config.totaljs == "auto" and config.conventions is True
    config = merge_layers([ConfigLayer("project", "project", {"totaljs": "never", "conventions": False})])
    assert config.totaljs == "never" and config.conventions is False
    with pytest.raises(ConfigError, match=r'totaljs: expected one of .*"sometimes"'):
        merge_layers([ConfigLayer("project", "project", {"totaljs": "sometimes"})])
    with pytest.raises(ConfigError, match="conventions: expected true or false"):
        merge_layers([ConfigLayer("project", "project", {"conventions": "no"})])
