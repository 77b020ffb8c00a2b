"""The file_io MCP server: ``read_file``, ``write_file``, ``list_dir`` inside one root directory.

Why it exists: it lets an agent keep notes and read prepared material, while the sandbox module makes
sure nothing outside ``--root`` is ever touched.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from mcp.server import MCPServer
from mcp.types import CallToolResult

from engine.servers.common import (
    failing,
    join_spoken,
    make_parser,
    make_server,
    plural,
    serve,
    spoken_result,
    startup,
    tool_meta,
)
from engine.servers.file_io.sandbox import DEFAULT_MAX_BYTES, MAX_LISTING, Sandbox, SandboxError

# No probe for read_file: no file is guaranteed to exist under an operator's root; list_dir probes instead.
_READ_META = tool_meta(estimated_ms=5, max_ms=1000, idempotent=True)
_LIST_META = tool_meta(estimated_ms=5, max_ms=1000, idempotent=True, probe_args={"path": "."})
_WRITE_META = tool_meta(estimated_ms=10, max_ms=2000, idempotent=False)


def build_server(args: argparse.Namespace, sandbox: Sandbox) -> MCPServer[Any]:
    server = make_server("file_io", "Reads, writes and lists text files inside one folder.", args)

    @server.tool(description="Read a UTF-8 text file, by path relative to the root folder.", meta=_READ_META)
    def read_file(path: str) -> CallToolResult:
        with failing(SandboxError, doing="cannot read"):
            text, size = sandbox.read_text(path)
        lines = text.count("\n") + (1 if text and not text.endswith("\n") else 0)
        speech = f"{path.strip()} has {plural(lines, 'line')}."
        return spoken_result(speech, {"path": path.strip(), "content": text, "bytes": size, "lines": lines})

    @server.tool(
        description="Write a UTF-8 text file by relative path (folders are created); overwrite default true.",
        meta=_WRITE_META,
    )
    def write_file(path: str, content: str, overwrite: bool = True) -> CallToolResult:
        with failing(SandboxError, doing="cannot write"):
            target, size, existed = sandbox.write_text(path, content, overwrite)
        shown = sandbox.display(target)
        speech = f"{'Replaced' if existed else 'Created'} {shown} with {plural(size, 'byte')}."
        return spoken_result(speech, {"path": shown, "bytes": size, "replaced": existed})

    @server.tool(description="List a folder, by path relative to the root ('.' for the root itself).", meta=_LIST_META)
    def list_dir(path: str = ".") -> CallToolResult:
        with failing(SandboxError, doing="cannot list"):
            entries = sandbox.list_dir(path)
        names = [f"{e['name']}/" if e["type"] == "dir" else str(e["name"]) for e in entries]
        where = "The root folder" if path.strip() in ("", ".") else path.strip()
        speech = (
            (
                f"{where} has {plural(len(entries), 'entry', 'entries')}: {join_spoken(names[:10])}"
                + (" and more." if len(names) > 10 else ".")
            )
            if entries
            else f"{where} is empty."
        )
        return spoken_result(
            speech, {"path": path.strip() or ".", "entries": entries, "truncated": len(entries) >= MAX_LISTING}
        )

    return server


def create(argv: Sequence[str] | None = None) -> MCPServer[Any]:
    """The file_io server for this command line (``StartupError`` on a bad one)."""
    parser = make_parser("python -m engine.servers.file_io", "Sandboxed file MCP server.")
    parser.add_argument("--root", required=True, help="the only folder the tools may touch")
    parser.add_argument(
        "--max-bytes",
        type=int,
        default=DEFAULT_MAX_BYTES,
        help=f"largest file read or written, in bytes (default {DEFAULT_MAX_BYTES})",
    )
    args = parser.parse_args(list(argv or []))
    with startup("file_io", SandboxError):
        sandbox = Sandbox.at(args.root, args.max_bytes)
    return build_server(args, sandbox)


def main(argv: list[str] | None = None) -> None:
    serve(create, argv)
