"""Code actions: the fix of a Totem diagnostic, "Ask Totem to fix", "Ask Totem about this selection"."""

from __future__ import annotations

from lsprotocol import types

from totem_lsp import protocol


def code_actions(params: types.CodeActionParams) -> list[types.CodeAction]:
    uri = params.text_document.uri
    actions: list[types.CodeAction] = []
    for diagnostic in params.context.diagnostics:
        data = protocol.plain(diagnostic.data)
        if not (isinstance(data, dict) and data.get("totem")):
            continue
        fix = data.get("fix")
        if isinstance(fix, dict):
            edit = types.TextEdit(range=_range(fix["range"]), new_text=fix["newText"])
            actions.append(
                types.CodeAction(
                    title=fix.get("title") or f"Fix {diagnostic.code}",
                    kind=types.CodeActionKind.QuickFix,
                    diagnostics=[diagnostic],
                    edit=types.WorkspaceEdit(changes={uri: [edit]}),
                    is_preferred=True,
                )
            )
        actions.append(
            types.CodeAction(
                title="Ask Totem to fix",
                kind=types.CodeActionKind.QuickFix,
                diagnostics=[diagnostic],
                command=types.Command(
                    title="Ask Totem to fix",
                    command=protocol.CMD_ASK,
                    arguments=[{"uri": uri, "range": _wire_range(diagnostic.range), "diagnostic": _wire_diagnostic(diagnostic)}],
                ),
            )
        )
    if params.range.start != params.range.end:
        actions.append(
            types.CodeAction(
                title="Ask Totem about this selection",
                kind=types.CodeActionKind.Empty,
                command=types.Command(
                    title="Ask Totem about this selection",
                    command=protocol.CMD_ASK,
                    arguments=[{"uri": uri, "range": _wire_range(params.range)}],
                ),
            )
        )
    return actions


def _range(data: dict) -> types.Range:
    return types.Range(
        start=types.Position(line=data["start"]["line"], character=data["start"]["character"]),
        end=types.Position(line=data["end"]["line"], character=data["end"]["character"]),
    )


def _wire_range(r: types.Range) -> dict:
    return {"start": {"line": r.start.line, "character": r.start.character}, "end": {"line": r.end.line, "character": r.end.character}}


def _wire_diagnostic(d: types.Diagnostic) -> dict:
    return {"range": _wire_range(d.range), "message": d.message, "code": d.code, "source": d.source}
