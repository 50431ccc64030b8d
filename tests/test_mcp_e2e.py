"""`reos-memory mcp` driven by the official MCP SDK's own stdio client, on a real process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from harness.rpc_client import ROOT, Server
from tests.conftest import make_block

pytestmark = pytest.mark.e2e

TOOLS = {
    "get_task_context",
    "search_memory",
    "remember",
    "forget",
    "flush",
    "search_blocks",
    "related_blocks",
}


def _pythonpath() -> str:
    return os.environ.get("PYTHONPATH", "")


def _result(res: Any) -> dict[str, Any]:
    """A successful tool result: JSON text content, the same value as structured content."""
    assert not res.is_error, res.content
    data = json.loads(res.content[0].text)
    assert res.structured_content == data
    return data


def _error(res: Any) -> str:
    assert res.is_error, res.content
    return res.content[0].text


def test_mcp_tools_over_stdio(tmp_path: Path, db_path: Path) -> None:
    home = tmp_path / "home"
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "src").mkdir()
    env = {"REOS_MEMORY_HOME": str(home), "REOS_MEMORY_OWNER_ID": "alice"}

    # blocks and an edge, written beforehand by the JSON-RPC server on the same database file
    with Server(db_path, env=env) as srv:
        srv.wait_ready()
        deploy = make_block(srv, "Blue-green deploys switch the load balancer after health checks")
        rollback = make_block(srv, "Rolling back means pointing the balancer at the old colour")
        srv.call(
            "memory/relationships/create",
            {"source_id": deploy, "target_id": rollback, "rel_type": "elaborates"},
        )

    _run_mcp(tmp_path, db_path, env, repo, lambda s: _exercise(s, repo, deploy, rollback))


def _run_mcp(tmp_path: Path, db_path: Path, env: dict[str, str], cwd: Path, body: Any) -> None:
    """Spawn `reos-memory mcp` with the SDK's stdio client, run `body(session)`, close stdin;
    then check that stdout carried protocol only and that the process stopped by itself."""
    errlog_path = tmp_path / "mcp-stderr.log"
    stream_faults: list[Exception] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, Exception):  # a line on stdout that is not a protocol message
            stream_faults.append(message)

    async def session() -> None:
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "reos_memory", "mcp", "--db", str(db_path), "--embedder", "hash"],
            # the SDK passes only a few variables on: this checkout first, as `-m` would from ROOT
            env={**env, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), _pythonpath()]))},
            cwd=str(cwd),  # the default project is the server's working directory
        )
        with errlog_path.open("w") as errlog, anyio.fail_after(60):
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write, message_handler=on_message) as s,
            ):
                await s.initialize()
                await body(s)

    anyio.run(session)

    assert not stream_faults, stream_faults
    log = [
        json.loads(line) for line in errlog_path.read_text().splitlines() if line.startswith("{")
    ]
    started = next(e for e in log if e["event"] == "started")
    stopped = [e for e in log if e["event"] == "stopped"]
    # the client closed stdin: the server stopped by itself (no signal) and the process is gone
    assert stopped and stopped[0]["reason"] == "end_of_input", log[-5:]
    assert not [e for e in log if e["event"] in ("signal", "internal_error")]
    with pytest.raises(ProcessLookupError):
        os.kill(started["pid"], 0)


async def _exercise(s: ClientSession, repo: Path, deploy: str, rollback: str) -> None:
    listed = (await s.list_tools()).tools
    assert {t.name for t in listed} == TOOLS
    for t in listed:
        assert t.description and len(t.description) > 40, t.name
        schema = t.input_schema
        assert schema["type"] == "object" and schema["additionalProperties"] is False, t.name
        assert schema["properties"], t.name
        for name, prop in schema["properties"].items():
            assert prop.get("description") and prop.get("type"), (t.name, name)
    by_name = {t.name: t for t in listed}
    assert by_name["remember"].input_schema["required"] == ["text"]
    assert by_name["get_task_context"].input_schema["required"] == ["task"]

    # remember, through the commit layer; the same memory again is deduplicated
    added = _result(
        await s.call_tool(
            "remember",
            {
                "text": "Use pnpm, never npm.",
                "kind": "guard",
                "avoid": True,
                "key": "project.package_manager",
            },
        )
    )
    mem = added["memory"]
    assert mem["kind"] == "guard" and mem["polarity"] == -1 and mem["status"] == "provisional"
    assert mem["owner_id"] == "alice" and mem["project_id"].startswith("repo-")
    again = _result(
        await s.call_tool(
            "remember", {"text": "Use pnpm, never npm.", "kind": "guard", "avoid": True}
        )
    )
    assert again["deduplicated_into"] == mem["id"]

    # get it back, for the default project (the server's cwd) and for an explicit project_root
    ctx = _result(await s.call_tool("get_task_context", {"task": "install dependencies with npm"}))
    assert mem["id"] in ctx["memory_ids"] and "Use pnpm, never npm." in ctx["context_prompt"]
    assert ctx["memories"][0]["id"] == mem["id"] and ctx["tokens"] <= ctx["budget"] == 400
    ctx = _result(
        await s.call_tool(
            "get_task_context",
            {
                "task": "add a package",
                "project_root": str(repo),
                "path": "src",
                "budget_tokens": 200,
            },
        )
    )
    assert mem["id"] in ctx["memory_ids"] and ctx["budget"] == 200
    found = _result(await s.call_tool("search_memory", {"query": "pnpm npm", "limit": 5}))
    assert [m["id"] for m in found["matches"]] == [mem["id"]]

    # bad arguments: a tool error naming the field and the rule; the server keeps serving
    bad = await s.call_tool("get_task_context", {"task": "x", "budget_tokens": 3})
    msg = _error(bad)
    assert "invalid_params" in msg and "$.budget_tokens" in msg and ">= 16" in msg
    # as on the team server's /mcp: the JSON-RPC error as structured content
    err = (bad.structured_content or {}).get("error", {})
    assert err.get("reason") == "invalid_params" and err.get("field") == "$.budget_tokens"
    msg = _error(await s.call_tool("remember", {"text": "x", "kind": "rumour"}))
    assert "$.kind" in msg and "preference" in msg
    msg = _error(await s.call_tool("search_memory", {"query": "x", "colour": "red"}))
    assert "$.colour" in msg
    msg = _error(await s.call_tool("get_task_context", {"task": "x", "project_root": "relative"}))
    assert "$.project_root" in msg and "absolute" in msg
    msg = _error(await s.call_tool("remember", {"text": "Keep it short.", "scope": "repo_path"}))
    assert "path_prefix" in msg
    assert _result(await s.call_tool("search_memory", {"query": "pnpm"}))["matches"]

    # forget erases it for good; forgetting it again names what is missing
    gone = _result(await s.call_tool("forget", {"memory_id": mem["id"]}))
    assert gone["forgotten"] is True and gone["memory_id"] == mem["id"]
    assert not _result(await s.call_tool("search_memory", {"query": "pnpm npm"}))["matches"]
    assert "not_found" in _error(await s.call_tool("forget", {"memory_id": mem["id"]}))

    flushed = _result(await s.call_tool("flush", {"session_id": "sess-1"}))
    assert flushed["project_id"].startswith("repo-") and flushed["episodes"] == []
    assert "episodes" in _result(await s.call_tool("flush", {"project_root": str(repo)}))

    # the block graph, through the handlers of memory/search and memory/related
    hits = _result(
        await s.call_tool("search_blocks", {"query": "blue-green deploys", "max_results": 5})
    )
    assert hits["matches"][0]["block_id"] == deploy and "Relevant Memory" in hits["markdown"]
    walk = _result(await s.call_tool("related_blocks", {"block_id": deploy, "depth": 1}))
    assert walk["start_block_id"] == deploy and rollback in walk["visited_blocks"]
    assert walk["edges"][0]["relationship_type"] == "elaborates"
    assert "$.depth" in _error(
        await s.call_tool("related_blocks", {"block_id": deploy, "depth": 99})
    )
    assert "not_found" in _error(await s.call_tool("related_blocks", {"block_id": "missing-1"}))


def test_mcp_answers_every_piped_request(tmp_path: Path, db_path: Path) -> None:
    """Input closed right after the requests: each is still answered, nothing but protocol
    reaches stdout, and an oversized or unparseable line does not stop the server."""
    requests = [
        "x" * 3000,  # over max_message_bytes: dropped with a warning in the log
        "not json",
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "pipe", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "nope"}},
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "remember", "arguments": {"text": "Tabs, not spaces."}},
        },
        {"jsonrpc": "2.0", "id": 4, "method": "tools/list"},
    ]
    data = "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in requests)
    env = {
        **os.environ,
        "REOS_MEMORY_HOME": str(tmp_path / "home"),
        "REOS_MEMORY_MAX_MESSAGE_BYTES": "1024",
    }
    r = subprocess.run(
        [sys.executable, "-m", "reos_memory", "mcp", "--db", str(db_path), "--embedder", "hash"],
        input=data.encode(),
        capture_output=True,
        env=env,
        cwd=str(ROOT),
        timeout=30,
    )
    assert r.returncode == 0, r.stderr.decode()[-2000:]
    replies = {m["id"]: m for m in map(json.loads, r.stdout.decode().splitlines())}
    assert sorted(replies) == [1, 2, 3, 4]
    assert replies[1]["result"]["serverInfo"]["name"] == "reos-memory"
    assert replies[2]["error"]["code"] == -32602 and "nope" in replies[2]["error"]["message"]
    added = replies[3]["result"]
    assert added["isError"] is False and added["structuredContent"]["memory"]["kind"] == "note"
    assert len(replies[4]["result"]["tools"]) == len(TOOLS)
    assert b"message_too_large" in r.stderr


def test_mcp_results_fit_an_agents_limit(tmp_path: Path, db_path: Path) -> None:
    """Agents refuse tool results over a token limit (Claude Code: 25,000): a result over
    `mcp_max_result_tokens` keeps its best items, cuts a giant text, and says what it left out."""
    from reos_memory.squirrel.token_count import count_tokens

    limit = 2000
    env = {"REOS_MEMORY_OWNER_ID": "alice", "REOS_MEMORY_MCP_MAX_RESULT_TOKENS": str(limit)}
    words = [
        "deploy",
        "canary",
        "rollout",
        "cluster",
        "ingress",
        "health",
        "check",
        "replica",
        "balancer",
    ]
    with Server(db_path, env=env) as srv:
        srv.wait_ready()
        hub = make_block(srv, "Kubernetes deploy runbook: the hub of the deploy notes")
        ids = []
        for i in range(30):
            body = " ".join(words[(i + j) % len(words)] for j in range(400))
            ids.append(make_block(srv, f"Kubernetes deploy note {i}: {body}"))
            srv.call(
                "memory/relationships/create",
                {"source_id": hub, "target_id": ids[-1], "rel_type": "references"},
            )
        giant = make_block(srv, "Zeppelin hangar manual. " + "zeppelin hangar door " * 20_000)

    async def body(s: ClientSession) -> None:
        def fits(res: Any) -> dict[str, Any]:
            assert count_tokens(res.content[0].text) <= limit
            return _result(res)

        many = fits(
            await s.call_tool("search_blocks", {"query": "kubernetes deploy", "max_results": 30})
        )
        cut = many["mcp_truncated"]
        assert cut["limit_tokens"] == limit and cut["left_out"] > 0
        assert len(many["matches"]) + cut["left_out"] == 30 and many["matches"]
        assert "max_results" in cut["ask_for_less"]
        # the best matches are the ones kept, and the markdown section shows just them
        assert many["markdown"].count("### Memory #") == len(many["matches"])

        big = fits(
            await s.call_tool("search_blocks", {"query": "zeppelin hangar", "max_results": 1})
        )
        (m,) = big["matches"]
        assert m["block_id"] == giant and big["mcp_truncated"]["texts_cut"] == 1
        assert "more characters; the whole text: blocks/get" in m["content"]

        walk = fits(
            await s.call_tool("related_blocks", {"block_id": hub, "depth": 1, "max_nodes": 100})
        )
        kept = set(walk["visited_blocks"])
        assert walk["truncated"] is True and walk["mcp_truncated"]["left_out"] == 31 - len(kept)
        assert all(e["target_block_id"] in kept for e in walk["edges"]) and walk["edges"]
        assert {b for ids_ in walk["blocks_by_depth"].values() for b in ids_} == kept

        small = _result(await s.call_tool("search_blocks", {"query": "runbook", "max_results": 1}))
        assert "mcp_truncated" not in small  # a result within the limit is left as it is

        # the context budget is bounded by the limit too
        ctx = _result(
            await s.call_tool("get_task_context", {"task": "deploy", "budget_tokens": 100_000})
        )
        assert ctx["budget"] == limit // 4

    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    _run_mcp(tmp_path, db_path, env, repo, body)
