"""file_io server: the sandbox rules and the server as a child process over stdio."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.types import CallToolResult

from engine.servers.file_io.sandbox import Sandbox, SandboxError


@pytest.fixture
def root(tmp_path: Path) -> Path:
    base = tmp_path / "root"
    (base / "notes").mkdir(parents=True)
    (base / "notes" / "todo.txt").write_text("buy rope\nfind the map\n")
    (base / "blob.bin").write_bytes(b"\x00\x01\x02")
    (base / "latin1.txt").write_bytes("caf\xe9".encode("latin-1"))
    (base / "big.txt").write_text("x" * 200)
    (tmp_path / "secret.txt").write_text("outside")
    os.symlink(tmp_path / "secret.txt", base / "escape.txt")
    os.symlink(tmp_path, base / "escape_dir")
    os.symlink(base / "notes" / "todo.txt", base / "inside.txt")
    return base


def test_sandbox_rules(root: Path) -> None:
    box = Sandbox.at(root, max_bytes=100)
    assert box.read_text("notes/todo.txt")[0].startswith("buy rope")
    assert box.read_text("inside.txt")[0].startswith("buy rope")  # a symlink inside the root is fine
    refused = {
        "../secret.txt": "contains '..'",
        "notes/../../secret.txt": "contains '..'",
        "/etc/passwd": "is an absolute path",
        "~/x": "is an absolute path",
        "escape.txt": "symlink that leads outside the root",
        "escape_dir/secret.txt": "symlink that leads outside the root",
        "blob.bin": "is a binary file",
        "latin1.txt": "is not UTF-8 text",
        "big.txt": "is 200 bytes; the limit is 100 bytes",
        "missing.txt": "does not exist",
        "notes": "is not a regular file",
        "": "the path is empty",
    }
    for path, message in refused.items():
        with pytest.raises(SandboxError, match=message):
            box.read_text(path)
    with pytest.raises(SandboxError, match="the content is 101 bytes; the limit is 100 bytes"):
        box.write_text("new.txt", "y" * 101, True)
    with pytest.raises(SandboxError, match="already exists; pass overwrite=true"):
        box.write_text("notes/todo.txt", "z", False)
    with pytest.raises(SandboxError, match="symlink that leads outside"):
        box.write_text("escape_dir/new.txt", "z", True)
    assert not (root.parent / "new.txt").exists()
    with pytest.raises(SandboxError, match="not an existing directory"):
        Sandbox.at(root / "nope")


async def test_file_io_server_over_stdio(
    spawn: Callable[..., Client], text: Callable[[CallToolResult], str], root: Path
) -> None:
    async with spawn("file_io", "--root", str(root), "--max-bytes", "100") as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert set(tools) == {"read_file", "write_file", "list_dir"}
        assert (tools["write_file"].meta or {})["idempotent"] is False
        assert (tools["read_file"].meta or {})["idempotent"] is True

        written = await client.call_tool("write_file", {"path": "logs/session1.txt", "content": "a\nb\nc\n"})
        assert not written.is_error and text(written) == "Created logs/session1.txt with 6 bytes."
        read = await client.call_tool("read_file", {"path": "logs/session1.txt"})
        assert (read.structured_content or {})["content"] == "a\nb\nc\n"
        assert text(read) == "logs/session1.txt has 3 lines."
        listing = await client.call_tool("list_dir", {"path": "."})
        names = [e["name"] for e in (listing.structured_content or {})["entries"]]
        assert {"notes", "logs", "todo.txt"} & set(names) == {"notes", "logs"}
        assert text(listing).startswith("The root folder has ")
        replaced = await client.call_tool("write_file", {"path": "logs/session1.txt", "content": "d"})
        assert text(replaced) == "Replaced logs/session1.txt with 1 byte."

        errors: list[tuple[str, dict[str, Any], str]] = [
            ("read_file", {"path": "../secret.txt"}, "cannot read: '../secret.txt' contains '..'"),
            ("read_file", {"path": "/etc/passwd"}, "is an absolute path"),
            ("read_file", {"path": "escape.txt"}, "symlink that leads outside the root"),
            ("read_file", {"path": "blob.bin"}, "is a binary file"),
            ("read_file", {"path": "big.txt"}, "is 200 bytes; the limit is 100 bytes"),
            ("write_file", {"path": "../x.txt", "content": "x"}, "cannot write: '../x.txt' contains '..'"),
            ("write_file", {"path": "x.txt", "content": "x" * 101}, "the limit is 100 bytes"),
            ("write_file", {"path": "notes/todo.txt", "content": "x", "overwrite": False}, "already exists"),
            ("list_dir", {"path": "escape_dir"}, "cannot list: 'escape_dir' is a symlink that leads outside"),
            ("list_dir", {"path": "notes/todo.txt"}, "is not a directory"),
        ]
        for tool, args, message in errors:
            bad = await client.call_tool(tool, args)
            assert bad.is_error and message in text(bad), (tool, args, text(bad))
    assert (root.parent / "secret.txt").read_text() == "outside"
