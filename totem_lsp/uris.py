"""Document URIs and filesystem paths: the one place the server turns one into the other.

``file://`` URIs as LSP sends them (RFC 8089; pygls.uris does the percent-encoding and the
Windows drive letters). A URI of another scheme (``untitled:``, ``git:``) has no path.
"""

from __future__ import annotations

from pathlib import Path

from pygls.uris import from_fs_path, to_fs_path


def path_of(uri: str) -> Path | None:
    """The resolved path of a ``file://`` URI; None for any other scheme."""
    text = to_fs_path(uri)
    return Path(text).resolve() if text else None


def uri_of(path: Path) -> str:
    """The ``file://`` URI of ``path``, as the editor names the document."""
    uri = from_fs_path(str(path))
    if uri is None:
        raise ValueError(f"{path} has no file URI")
    return uri
