"""The Total.js rules: failing examples with exact LSP ranges, passing examples, autofixes.

Ranges are (start line, start character, end line, end character): 0-based lines, UTF-16
characters. Lines holding "é😀" before the flagged code prove the byte -> UTF-16 conversion:
the emoji is 4 bytes, 1 code point and 2 UTF-16 units.
"""

from __future__ import annotations

import pytest

from totem_engine.checks.base import Finding, Fix
from totem_engine.checks.totaljs import TotalJsChecker, applies_to, check_text, rules

PREFIX = "var s = 'é😀'; "  # 15 UTF-16 units, 14 code points, 18 bytes


def found(text: str, code: str, rel: str = "schemas/orders.js") -> list[Finding]:
    return check_text(rel, text, only=[code]).findings


def spans(text: str, code: str, rel: str = "schemas/orders.js") -> list[tuple[int, int, int, int]]:
    return [_span(f) for f in found(text, code, rel)]


def _span(f: Finding) -> tuple[int, int, int, int]:
    return (f.range.start.line, f.range.start.character, f.range.end.line, f.range.end.character)


def _index(text: str, line: int, character: int) -> int:
    """A string index from an LSP position (UTF-16 characters)."""
    lines = text.split("\n")
    index = sum(len(l) + 1 for l in lines[:line])
    units = 0
    for ch in lines[line]:
        if units >= character:
            break
        units += 2 if ord(ch) > 0xFFFF else 1
        index += 1
    return index


def apply(text: str, fix: Fix) -> str:
    start = _index(text, fix.range.start.line, fix.range.start.character)
    end = _index(text, fix.range.end.line, fix.range.end.character)
    return text[:start] + fix.new_text + text[end:]


def fix_all(text: str, code: str, rel: str = "schemas/orders.js") -> str:
    """Apply every fix of ``code``, last first, so earlier ranges stay valid."""
    fixes = [f.fix for f in found(text, code, rel)]
    assert fixes and all(fixes), "every finding has a fix"
    for fix in sorted(fixes, key=lambda x: (x.range.start.line, x.range.start.character), reverse=True):
        text = apply(text, fix)
    return text


def test_every_rule_has_a_code_severity_source_and_docstring():
    codes = [r.code for r in rules()]
    assert codes == sorted(set(codes))
    assert {"TJS001", "TJS002", "TJS003", "TJS010", "TJS020", "TJS021", "TJS022", "TJS030", "TJS031",
            "TJS040", "TJS050", "TJS051", "TJS060", "TJS061", "TJS062"} <= set(codes)
    for r in rules():
        assert r.severity in ("error", "warning", "information", "hint")
        assert r.source.startswith("https://")
        assert r.run.__doc__ and "Source" in r.run.__doc__ or r.code == "TJS000"


def test_the_prefix_really_is_wider_in_utf16_than_in_code_points():
    assert len(PREFIX) == 14 and len(PREFIX.encode("utf-16-le")) // 2 == 15 and len(PREFIX.encode()) == 18


# TJS001 indentation ---------------------------------------------------------------------------


def test_space_indentation_is_flagged_per_line_and_fixed_to_tabs():
    text = "function f() {\n  var a = 1;\n  if (a) {\n    a++;\n  }\n}\n"
    assert spans(text, "TJS001") == [(1, 0, 1, 2), (2, 0, 2, 2), (3, 0, 3, 4), (4, 0, 4, 2)]
    assert fix_all(text, "TJS001") == "function f() {\n\tvar a = 1;\n\tif (a) {\n\t\ta++;\n\t}\n}\n"


def test_four_space_files_and_alignment_after_tabs():
    text = "function f() {\n    var a = 1;\n\t  return a;\n}\n"
    assert spans(text, "TJS001") == [(1, 0, 1, 4), (2, 0, 2, 3)]
    assert fix_all(text, "TJS001") == "function f() {\n\tvar a = 1;\n\treturn a;\n}\n"


def test_tabs_template_literals_comments_and_blank_lines_are_not_indentation():
    text = (
        "function f() {\n\tvar html = `\n    <div>\n    </div>`;\n"
        "\t/*\n\t * note\n\t */\n  \n\treturn html;\n}\n"
    )
    assert spans(text, "TJS001") == []


# TJS002 semicolons ------------------------------------------------------------------------------


def test_missing_semicolons_flag_the_last_token_and_fix_inserts_one():
    text = PREFIX + "var a = 1\nfoo()\nexports.f = function() {\n}\nreturn\n"
    text = text.replace("return\n", "")
    assert spans(text, "TJS002") == [(0, 23, 0, 24), (1, 4, 1, 5), (3, 0, 3, 1)]
    assert fix_all(text, "TJS002") == PREFIX + "var a = 1;\nfoo();\nexports.f = function() {\n};\n"


def test_statements_that_end_with_semicolons_or_blocks_pass():
    text = (
        "var a = 1;\nfor (var i = 0; i < 3; i++)\n\ta += i;\nif (a)\n\tfoo();\nelse {\n\tbar();\n}\n"
        "function g() {\n\treturn a;\n}\nclass A {}\n"
    )
    assert spans(text, "TJS002") == []


def test_semicolons_are_not_checked_in_a_file_that_does_not_parse():
    result = check_text("a.js", "var a = (1\nfoo()\n")
    assert [f.code for f in result.findings] == ["TJS000"]
    assert result.findings[0].severity == "error"
    assert any("syntax error" in n for n in result.notes)


# TJS003 quotes ----------------------------------------------------------------------------------


def test_short_double_quoted_strings_are_flagged_and_fixed():
    text = PREFIX + 'var t = "x";\nvar q = "say \\"hi\\"";\n'
    assert spans(text, "TJS003") == [(0, 23, 0, 26), (1, 8, 1, 20)]
    assert fix_all(text, "TJS003") == PREFIX + "var t = 'x';\nvar q = 'say \"hi\"';\n"


def test_single_quotes_apostrophes_and_long_strings_pass():
    long = "a" * 81
    text = f"var a = 'x';\nvar b = \"don't\";\nvar c = \"{long}\";\nvar d = `t`;\n"
    assert spans(text, "TJS003") == []


# TJS010 const inside functions --------------------------------------------------------------------


def test_const_inside_functions_is_flagged_var_at_body_level_let_in_blocks():
    text = (
        PREFIX + "function f(items) { const a = 1;\n"
        "\tfor (const item of items) {\n\t\tconst b = item;\n\t}\n}\n"
        "var g = (x) => { const c = x; return c; };\n"
    )
    assert spans(text, "TJS010") == [(0, 35, 0, 40), (1, 6, 1, 11), (2, 2, 2, 7), (5, 17, 5, 22)]
    assert [f.fix.new_text for f in found(text, "TJS010")] == ["var", "let", "let", "var"]
    assert fix_all(text, "TJS010") == (
        PREFIX + "function f(items) { var a = 1;\n"
        "\tfor (let item of items) {\n\t\tlet b = item;\n\t}\n}\n"
        "var g = (x) => { var c = x; return c; };\n"
    )


def test_const_at_the_top_of_a_module_and_var_let_inside_pass():
    text = "const AWS = require('@aws-sdk/client-s3');\nconst LIMIT = 10;\nfunction f() {\n\tvar a = 1;\n\tlet b = 2;\n\tb++;\n}\n"
    assert spans(text, "TJS010") == []


# TJS020 / TJS021 / TJS022 modules -----------------------------------------------------------------


def test_require_of_own_modules_is_flagged():
    text = PREFIX + "var storage = require('../modules/storage');\nvar db = require('./lib/db');\n"
    assert spans(text, "TJS020") == [(0, 29, 0, 58), (1, 9, 1, 28)]
    assert "MODS.storage" in found(text, "TJS020")[0].message


def test_require_of_config_is_flagged_use_conf():
    text = PREFIX + "var config = require('../config.json');\nvar env = require('./env');\n"
    assert spans(text, "TJS021") == [(0, 28, 0, 53), (1, 10, 1, 26)]
    assert "CONF" in found(text, "TJS021")[0].message
    assert spans(text, "TJS020") == []


def test_node_builtins_are_flagged_with_the_framework_replacement():
    text = PREFIX + "var Fs = require('fs');\nvar P = require('node:path');\nvar h = require('https');\n" \
        "var c = require('crypto');\nvar fp = require('fs/promises');\nimport http from 'http';\n"
    assert spans(text, "TJS022") == [(0, 24, 0, 37), (1, 8, 1, 28), (2, 8, 2, 24), (3, 8, 3, 25), (4, 9, 4, 31), (5, 0, 5, 24)]
    messages = [f.message for f in found(text, "TJS022")]
    assert "PATH" in messages[0] and "PATH.join" in messages[1] and "RESTBuilder" in messages[2] and "HASH" in messages[3]


def test_npm_packages_and_code_outside_the_app_pass():
    app = "require('querybuilderpg').init('', CONF.database, 1, ERROR('DB'));\nconst S3 = require('@aws-sdk/client-s3');\n"
    assert check_text("definitions/db.js", app, only=["TJS020", "TJS021", "TJS022"]).findings == []
    script = "var Fs = require('fs');\nvar helper = require('./helper');\n"
    for rel in ("index.js", "tests/orders.js", "scripts/migrate.js", "public/js/app.js"):
        assert check_text(rel, script, only=["TJS020", "TJS021", "TJS022"]).findings == [], rel


# TJS030 process.env, TJS031 setInterval -----------------------------------------------------------


def test_process_env_in_feature_code_is_flagged():
    text = PREFIX + "var key = process.env.API_KEY;\n"
    assert spans(text, "TJS030") == [(0, 25, 0, 36)]
    inside = "FUNC.key = function() {\n\treturn process.env.API_KEY;\n};\n"
    assert spans(inside, "TJS030", rel="definitions/func.js") == [(1, 8, 1, 19)]


def test_process_env_in_boot_and_at_the_top_of_a_definition_passes():
    top = "if (process.env.FEATURE_X != null)\n\tCONF.feature_x = process.env.FEATURE_X;\n"
    assert spans(top, "TJS030", rel="definitions/env.js") == []
    assert spans("var port = process.env.PORT;\n", "TJS030", rel="index.js") == []
    assert spans("var port = process.env.PORT;\n", "TJS030", rel="tests/run.js") == []


def test_set_interval_in_server_code_is_flagged():
    text = PREFIX + "setInterval(tick, 5 * 60 * 1000);\n"
    assert spans(text, "TJS031", rel="definitions/jobs.js") == [(0, 15, 0, 26)]
    assert "CRON" in found(text, "TJS031", rel="definitions/jobs.js")[0].message


def test_set_interval_in_browser_code_and_cron_pass():
    assert spans("setInterval(tick, 1000);\n", "TJS031", rel="public/js/app.js") == []
    assert spans("CRON('*/5 * * * *', tick);\nsetTimeout(tick, 10);\n", "TJS031", rel="definitions/jobs.js") == []


# TJS040 envelopes ---------------------------------------------------------------------------------


def test_hand_made_envelopes_are_flagged_and_fixed_to_success():
    text = PREFIX + "$.json({ success: true, value: item });\n$.json({ ok: true, data: rows });\n" \
        "$.json({ success: true });\n$.json({ success: true, value });\n"
    assert spans(text, "TJS040") == [(0, 15, 0, 53), (1, 0, 1, 32), (2, 0, 2, 25), (3, 0, 3, 32)]
    assert fix_all(text, "TJS040") == PREFIX + "$.success(item);\n$.success(rows);\n$.success();\n$.success(value);\n"


def test_envelopes_that_are_not_mechanical_have_no_fix():
    text = "$.json({ success: false, error: err });\n$.json({ success: true, value: a, extra: 1 });\n"
    assert [f.fix for f in found(text, "TJS040")] == [None, None]


def test_plain_json_answers_pass():
    text = "$.json({ name: CONF.name, api: '/api/' });\n$.json({ ok: true, ts: NOW });\n$.success(item);\nres.json({ success: true });\n"
    assert spans(text, "TJS040") == []


# TJS050 DB(), TJS051 table scans ----------------------------------------------------------------------


def test_db_calls_are_flagged_and_direct_queries_fixed_to_data():
    text = PREFIX + "DB().find('tbl_user').callback($.callback);\nvar db = DB();\n"
    assert spans(text, "TJS050") == [(0, 15, 0, 19), (1, 9, 1, 13)]
    assert [f.severity for f in found(text, "TJS050")] == ["information", "information"]
    assert [bool(f.fix) for f in found(text, "TJS050")] == [True, False]
    fixed = apply(text, found(text, "TJS050")[0].fix)
    assert fixed == PREFIX + "DATA.find('tbl_user').callback($.callback);\nvar db = DB();\n"


def test_data_queries_pass():
    assert spans("DATA.find('tbl_user').where('id', 1).promise($);\n", "TJS050") == []


def test_loading_a_whole_table_to_filter_it_is_flagged():
    text = (
        PREFIX + "async function f($, id) {\n"
        "\tvar all = await DATA.find('tbl_order').promise($);\n"
        "\tvar mine = all.filter(w => w.userid === id);\n"
        "\tDATA.find('tbl_user').callback(function(err, users) {\n"
        "\t\t$.callback(users.filter(u => u.isactive));\n"
        "\t});\n}\n"
    )
    assert spans(text, "TJS051") == [(2, 12, 2, 22), (4, 13, 4, 25)]
    message = found(text, "TJS051")[0].message
    assert "'tbl_order'" in message and "line 2" in message and ".where()" in message


def test_filtered_queries_and_other_filters_pass():
    text = (
        "async function f($, id, items) {\n"
        "\tvar mine = await DATA.find('tbl_order').where('userid', id).promise($);\n"
        "\tvar some = mine.filter(w => w.price > 10);\n"
        "\tvar other = items.filter(Boolean);\n"
        "\tDATA.find('tbl_user').in('id', ids).callback(function(err, users) {\n"
        "\t\t$.callback(users.filter(u => u.isactive));\n"
        "\t});\n}\n"
    )
    assert spans(text, "TJS051") == []


# TJS060 / TJS061 / TJS062 naming -------------------------------------------------------------------------


def test_file_names_with_capitals_are_flagged():
    assert spans("var a = 1;\n", "TJS060", rel="modules/AiEngine.js") == [(0, 0, 0, 0)]
    assert "ai-engine.js" in found("var a = 1;\n", "TJS060", rel="modules/AiEngine.js")[0].message
    assert spans("var a = 1;\n", "TJS060", rel="Modules/ai-engine.js") == []


def test_schema_names_must_be_pascal_case():
    text = PREFIX + "NEWSCHEMA('order_items', function(schema) {});\n"
    assert spans(text, "TJS061") == [(0, 25, 0, 38)]
    assert "NEWSCHEMA('OrderItems'" in found(text, "TJS061")[0].message
    assert spans("NEWSCHEMA('Orders', function(schema) {});\nNEWSCHEMA('@Profile', '*name:String');\n", "TJS061") == []


def test_action_ids_must_be_namespace_bar_action():
    text = PREFIX + "NEWACTION('list_orders', {});\nNEWACTION('orders|List', {});\n"
    assert spans(text, "TJS062") == [(0, 25, 0, 38), (1, 10, 1, 23)]
    assert [("Namespace|list_orders" in f.message, "Orders|list" in f.message) for f in found(text, "TJS062")] == [
        (True, False), (False, True)
    ]
    assert spans("NEWACTION('Orders|list', {});\nNEWACTION('Todo|create_item', {});\n", "TJS062") == []


# Pages and the checker ---------------------------------------------------------------------------------


def test_script_blocks_of_pages_are_checked_at_their_place_in_the_file():
    page = (
        "<html>\n<body>\n<p>é😀</p> <script>\n\tPLUGIN('x', function(exports) {\n"
        "\t\tconst a = \"b\";\n\t});\n</script>\n"
        '<script type="text/html">\n  <b>{{ value }}</b>\n</script>\n'
        '<script src="/x.js"></script>\n</body>\n</html>\n'
    )
    result = check_text("views/index.html", page)
    assert [(f.code, _span(f)) for f in result.findings] == [("TJS010", (4, 2, 4, 7)), ("TJS003", (4, 12, 4, 15))]


def test_script_on_the_line_of_its_tag_is_not_indentation():
    page = '<p>é😀</p> <script>var a = "b";</script>\n'
    assert [(f.code, _span(f)) for f in check_text("views/a.html", page).findings] == [("TJS003", (0, 27, 0, 30))]


@pytest.mark.parametrize("rel", ["README.md", "node_modules/x/index.js", "public/js/app.min.js", "style.css", ".totem/x.js"])
def test_other_files_are_not_checked(rel):
    assert not applies_to(rel)
    assert check_text(rel, "const a = \"x\"\n").findings == []


async def test_checker_protocol(tmp_path):
    checker = TotalJsChecker()
    assert checker.name == "totaljs" and checker.external is False
    result = await checker.check(tmp_path, "schemas/orders.js", "function f() {\n\tconst a = 1;\n}\n")
    assert [(f.code, f.source, f.fix.new_text) for f in result.findings] == [("TJS010", "totem", "var")]
    assert (await checker.check(tmp_path, "notes.txt", "const a = 1")).findings == []
    assert result.findings[0].for_model().startswith("2:2 TJS010 Use `var`")


def test_byte_offsets_agree_with_from_byte_offset_everywhere():
    from totem_engine.checks.positions import ByteOffsets, from_byte_offset

    data = "a é😀\n\n  😀x\r\nlast".encode()
    offsets = ByteOffsets(data)
    assert [offsets.position(i) for i in range(len(data) + 1)] == [from_byte_offset(data, i) for i in range(len(data) + 1)]


def test_lines_inside_nested_templates_are_not_indentation():
    text = "function f(a) {\n\tvar t = `${a ? `\n    inner\n  ` : ''}\n  outer`;\n\treturn t;\n}\n"
    assert spans(text, "TJS001") == []
    assert spans(text.replace("\treturn t;", "  return t;"), "TJS001") == [(5, 0, 5, 2)]
