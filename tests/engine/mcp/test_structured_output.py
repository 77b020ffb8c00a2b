"""Structured output (issue 18 item 4): outputSchema shown, structuredContent checked against it (a mismatch is
an error naming the JSON path, on that call only), speech on structured content, resource links and embedded
resources kept whole in data and summarised for speech."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from mcp.types import CallToolResult, EmbeddedResource, ResourceLink, TextContent, TextResourceContents

from engine.mcp.results import MAX_DATA_CHARS, SpeechOptions, to_tool_result
from tests.engine.mcp.helpers import FIXTURES, ROOT, settings
from tests.engine.mcp.test_real_peers import call, needs_everything

STRUCTURED = str(FIXTURES / "structured_server.py")
EVERYTHING = ROOT / ".peers" / "node_modules" / ".bin" / "mcp-server-everything"


def structured_cfg(*args: str, **extra: Any) -> dict[str, Any]:
    return {"transport": "stdio", "command": [sys.executable, STRUCTURED, *args], "connect_timeout_ms": 8000, **extra}


async def test_a_result_contradicting_its_schema_fails_that_call_only(make_engine: Any) -> None:
    engine = await make_engine(settings({"st": structured_cfg()}))
    r = await call(engine, "mcp_st_liar", {})
    assert r.status == "error"
    assert r.message == (
        "mcp_st_liar returned a result that does not match its output schema at $.temperature: "
        "'hot' is not of type 'number'"
    )
    r = await call(engine, "mcp_st_empty", {})
    assert (r.status, r.message) == (
        "error",
        "mcp_st_empty declares an output schema but returned no structured content",
    )
    r = await call(engine, "mcp_st_weather", {"city": "Oslo"})  # the server and its other tools carry on
    assert r.status == "success" and r.data == {"temperature": 21.5, "sky": "sunny in Oslo"}
    assert engine.server_status()["servers"][0]["state"] == "up"


async def test_speech_template_and_field_read_structured_content(make_engine: Any) -> None:
    tools = [
        {"name": "weather", "speech_template": "{temperature} degrees, {sky}."},
        {"name": "lookup", "speech_field": "result"},
    ]
    engine = await make_engine(settings({"st": structured_cfg(tools=tools, expose_unlisted=True)}))
    r = await call(engine, "mcp_st_weather", {"city": "Rome"})
    assert r.message == "21.5 degrees, sunny in Rome."
    r = await call(engine, "mcp_st_lookup", {"key": "k7"})
    assert r.message == "record k7" and r.data == {"result": "record k7"}


async def test_links_and_documents_kept_whole_and_summarised(make_engine: Any) -> None:
    engine = await make_engine(settings({"st": structured_cfg()}))
    r = await call(engine, "mcp_st_links", {})
    assert r.message == "Two links and the menu. 2 links: Opening hours and map; 1 attached document."
    hours, where, menu = r.data["attachments"]
    assert hours == {
        "type": "resource_link",
        "uri": "demo://hours",
        "name": "hours",
        "mime_type": None,
        "title": "Opening hours",
    }
    assert where["description"] == "Where we are"
    assert menu["text"] == "Soup 4, bread 2" and menu["uri"] == "demo://menu"


def test_embedded_resources_share_the_data_budget() -> None:
    big = "y" * (MAX_DATA_CHARS + 10)
    doc = EmbeddedResource(type="resource", resource=TextResourceContents(uri="demo://big", text=big))
    r = to_tool_result(CallToolResult(content=[doc]))
    (att,) = r.data["attachments"]
    assert att["truncated"] is True and len(att["text"]) == MAX_DATA_CHARS and att["size_bytes"] == len(big)
    assert r.message == "1 attached document."


def test_a_long_text_leaves_room_for_the_links_sentence() -> None:
    text = TextContent(type="text", text="A long answer. " * 40)
    link = ResourceLink(type="resource_link", name="doc", uri="demo://doc")
    r = to_tool_result(CallToolResult(content=[text, link]), SpeechOptions())
    assert r.message.endswith(" 1 link: doc.") and len(r.message) <= 300


def test_tools_json_shows_output_schema_title_and_annotations(tmp_path: Path) -> None:
    config = tmp_path / "ava.yaml"
    config.write_text(
        "engine:\n  http: {enabled: false}\nmcp:\n  servers:\n    st:\n      transport: stdio\n"
        f"      command: [{json.dumps(sys.executable)}, {json.dumps(STRUCTURED)}]\n",
        encoding="utf-8",
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run(
        [str(ROOT / ".venv" / "bin" / "ava-engine"), "--config", str(config), "tools", "--json"],
        capture_output=True,
        text=True,
        timeout=90,
        env=env,
    )
    assert p.returncode == 0, p.stderr
    info = json.loads(p.stdout)["tool_info"]
    assert info["mcp_st_liar"]["output_schema"]["properties"]["temperature"] == {"type": "number"}
    assert info["mcp_st_weather"]["title"] == "Weather"
    assert info["mcp_st_weather"]["annotations"] == {"title": "Look it up", "readOnlyHint": True}
    assert info["mcp_st_links"]["output_schema"] is None


@needs_everything
async def test_everything_structured_content_and_resource_links(make_engine: Any) -> None:
    cfg = {
        "transport": "stdio",
        "command": [str(EVERYTHING), "stdio"],
        "tools": [{"name": "get-structured-content", "speech_template": "{conditions}, {temperature} degrees."}],
        "expose_unlisted": True,
    }
    engine = await make_engine(settings({"ev": cfg}))
    rows = {t["exposed_name"]: t for t in engine.server_status()["servers"][0]["tools"]}
    schema = rows["mcp_ev_get_structured_content"]["output_schema"]
    assert schema["required"] == ["temperature", "conditions", "humidity"]
    assert rows["mcp_ev_get_structured_content"]["title"] == "Get Structured Content Tool"
    assert rows["mcp_ev_get_structured_content"]["annotations"]["readOnlyHint"] is True
    r = await call(engine, "mcp_ev_get_structured_content", {"location": "Chicago"})
    assert r.status == "success" and set(r.data) == {"temperature", "conditions", "humidity"}
    assert r.message == f"{r.data['conditions']}, {r.data['temperature']} degrees."
    r = await call(engine, "mcp_ev_get_resource_links", {"count": 2})
    links = r.data["attachments"]
    assert [a["type"] for a in links] == ["resource_link", "resource_link"]
    assert all(a["uri"].startswith("demo://") and a["description"] for a in links)
    assert r.message.endswith(f"2 links: {links[0]['name']} and {links[1]['name']}.")
    r = await call(engine, "mcp_ev_get_resource_reference", {"resourceType": "Text", "resourceId": 3})
    (doc,) = r.data["attachments"]
    assert doc["type"] == "resource" and doc["text"].startswith("Resource 3:")
    assert "1 attached document." in r.message and "demo://" not in r.message
