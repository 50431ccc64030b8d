"""Team memory over MCP (issue 21): a real `reos-memory team-server` subprocess on an embedded
PostgreSQL, driven by the official SDK's Streamable HTTP client at /mcp. The tools, the bearer
key (401 before anything runs), and the MCP rows of the isolation matrix: another org's memories
are not found by any tool, a team key does not reach another team, a reader cannot write."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import urllib.error
import urllib.request
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from reos_memory.interfaces.team_http.mcp_endpoint import tool_definitions
from reos_memory.team import admin
from reos_memory.team.database import TeamDatabase
from tests.team_fixtures import ACTOR, Server
from tests.test_team_memory import Org

pytestmark = pytest.mark.e2e

TOOLS = {
    "get_task_context", "search_memory", "remember", "forget", "get_memory", "list_memories",
    "update_memory", "deprecate_memory", "propose_share", "whoami",
}  # fmt: skip
# an Inspector whose CLI sends headers and runs on Node 20 (later ones need Node 22)
INSPECTOR = "@modelcontextprotocol/inspector@0.17.2"
# the tools the local MCP server also has: the same argument names, project_id for project_root
LOCAL_TWINS = {
    "get_task_context": {"task", "path", "session_id", "budget_tokens"},
    "search_memory": {"query", "limit"},
    "remember": {"text", "kind", "scope", "key", "avoid", "path_prefix"},
    "forget": {"memory_id"},
}


class Keys(Org):
    """The two orgs of test_team_memory, plus an admin of org A and a revoked writer."""

    def __init__(self, db: TeamDatabase) -> None:
        super().__init__(db)
        with db.connect() as conn:
            self.a_admin = admin.create_key(conn, ACTOR, org="acme", role="admin")[0].key
            revoked, _ = admin.create_key(conn, ACTOR, org="acme", role="writer")
            admin.revoke_key(conn, ACTOR, revoked.key_id)
            self.a_revoked = revoked.key


@pytest.fixture(scope="module")
def db(team_db: TeamDatabase) -> TeamDatabase:
    return team_db


@pytest.fixture(scope="module")
def keys(db: TeamDatabase) -> Keys:
    return Keys(db)


@pytest.fixture(scope="module")
def server(hash_team_server: Server, keys: Keys) -> Server:
    return hash_team_server


def session(server: Server, key: str, body: Callable[[ClientSession], Awaitable[Any]]) -> Any:
    """Run `body` in an initialized MCP session over Streamable HTTP with `key`."""

    async def go() -> Any:
        headers = {"Authorization": f"Bearer {key}"}
        with anyio.fail_after(60):
            async with (
                httpx2.AsyncClient(headers=headers, timeout=30) as http,
                streamable_http_client(f"{server.base}/mcp", http_client=http) as (read, write),
                ClientSession(read, write) as s,
            ):
                await s.initialize()
                return await body(s)

    return anyio.run(go)


def call(server: Server, key: str, tool: str, args: dict[str, Any] | None = None) -> Any:
    """One tool call in its own session: (is_error, structured content)."""

    async def body(s: ClientSession) -> Any:
        res = await s.call_tool(tool, args or {})
        if not res.is_error:
            assert json.loads(res.content[0].text) == res.structured_content
        return res.is_error, res.structured_content, res.content[0].text

    return session(server, key, body)


def ok(server: Server, key: str, tool: str, args: dict[str, Any] | None = None) -> Any:
    is_error, data, text = call(server, key, tool, args)
    assert not is_error, text
    return data


def fails(server: Server, key: str, tool: str, args: dict[str, Any] | None = None) -> Any:
    """A tool error: its structured error (code, reason, message, field or role)."""
    is_error, data, text = call(server, key, tool, args)
    assert is_error, data
    err = data["error"]
    assert text == f"{err['reason']}: {err['message']}"
    return err


def remember(server: Server, api_key: str, text: str, **extra: Any) -> dict[str, Any]:
    args = {"text": text, "kind": "invariant", "project_id": "proj-pay", **extra}
    return ok(server, api_key, "remember", args)["memory"]  # type: ignore[no-any-return]


def test_initialize_and_list_tools_with_schemas_from_the_params(server, keys):
    async def body(s: ClientSession) -> Any:
        return (await s.list_tools()).tools

    listed = session(server, keys.a_reader, body)
    assert {t.name for t in listed} == TOOLS
    by_name = {t.name: t for t in listed}
    for t in listed:
        assert t.description and len(t.description) > 40, t.name
        schema = t.input_schema
        assert schema["type"] == "object" and schema["additionalProperties"] is False, t.name
        assert "project_root" not in schema["properties"], t.name  # the server has no files
    for name, local_args in LOCAL_TWINS.items():
        assert local_args <= set(by_name[name].input_schema["properties"]), name
    assert by_name["get_task_context"].input_schema["required"] == ["task", "project_id"]
    assert by_name["remember"].input_schema["required"] == ["text"]
    assert by_name["get_memory"].annotations.read_only_hint is True
    assert by_name["forget"].annotations.destructive_hint is True
    assert by_name["remember"].annotations.read_only_hint is False


def test_every_tool_is_in_the_team_server_docs():
    page = Path(__file__).resolve().parents[1] / "docs" / "team-server.md"
    text = page.read_text(encoding="utf-8")
    section = text[text.index("**Team memory over MCP.**") :]
    missing = [t for t in sorted(TOOLS) if f"| `{t}` |" not in section]
    assert not missing, f"team MCP tools missing from docs/team-server.md: {missing}"
    assert {t.name for t in tool_definitions()} == TOOLS


def test_each_tool_answers_through_its_json_rpc_twin(server, keys):
    me = ok(server, keys.backend_writer, "whoami")
    assert me == server.result(keys.backend_writer, "team/whoami")
    assert me["team_id"] == keys.backend and me["role"] == "writer"

    text = f"Payment retries reuse the idempotency header X-Req {uuid.uuid4().hex[:6]}"
    mem = remember(server, keys.backend_writer, text, key="project.retry_header")
    assert mem["owner_type"] == "team" and mem["owner_id"] == keys.backend
    assert mem["tier"] == "short_term" and mem["polarity"] == 1 and mem["origin"] == "rpc"
    # the same memory through /rpc: one store, one path
    assert server.result(keys.backend_reader, "squirrel/memories/get",
                         {"memory_id": mem["id"]})["memory"] == mem  # fmt: skip
    avoid = remember(server, keys.backend_writer, "Never retry a charge without the header",
                     kind="guard", avoid=True)  # fmt: skip
    assert avoid["polarity"] == -1 and avoid["kind"] == "guard"

    got = ok(server, keys.backend_reader, "get_memory", {"memory_id": mem["id"]})
    assert got["memory"]["text"] == text and got["history"] == []
    listed = ok(server, keys.backend_reader, "list_memories", {"project_id": "proj-pay"})
    assert mem["id"] in {m["id"] for m in listed["memories"]}
    found = ok(server, keys.backend_reader, "search_memory",
               {"query": "idempotency header retries", "project_id": "proj-pay"})  # fmt: skip
    assert mem["id"] in {m["id"] for m in found["matches"]}
    ctx = ok(server, keys.backend_reader, "get_task_context",
             {"task": "payment retries reuse the idempotency header", "project_id": "proj-pay",
              "budget_tokens": 300})  # fmt: skip
    assert mem["id"] in {m["id"] for m in ctx["memories"]}
    assert text in ctx["context_prompt"] and ctx["dropped"] == []

    new_text = f"Payment retries reuse the header X-Request-Id {uuid.uuid4().hex[:6]}"
    upd = ok(
        server, keys.backend_writer, "update_memory", {"memory_id": mem["id"], "text": new_text}
    )
    assert upd["memory"]["version"] == 2 and upd["memory"]["text"] == new_text
    history = ok(server, keys.backend_reader, "get_memory", {"memory_id": mem["id"]})["history"]
    assert [h["text"] for h in history] == [text]
    dep = ok(server, keys.backend_writer, "deprecate_memory", {"memory_id": mem["id"]})
    assert dep["memory"]["status"] == "deprecated"
    gone = ok(server, keys.backend_writer, "forget", {"memory_id": mem["id"]})
    assert gone == {"forgotten": True, "memory_id": mem["id"]}
    assert server.error(keys.backend_reader, "squirrel/memories/get",
                        {"memory_id": mem["id"]})["code"] == -32004  # fmt: skip

    share = ok(server, keys.backend_reader, "propose_share",
               {"text": "Run migrations with make migrate", "kind": "invariant",
                "project_id": "proj-pay", "local_memory_id": "mem-local-7"})["share"]  # fmt: skip
    assert share["status"] == "pending" and share["team_id"] == keys.backend
    pending = server.result(keys.backend_writer, "team/shares/list", {})["shares"]
    assert share["id"] in {s["id"] for s in pending}

    # the writes are audited under the JSON-RPC method names, by the MCP caller's key
    audit = server.result(keys.a_admin, "team/audit/list", {"limit": 500})["entries"]
    methods = {(e["method"], tuple(e["target_ids"])) for e in audit}
    for method in ("squirrel/memories/add", "squirrel/memories/update",
                   "squirrel/memories/deprecate", "squirrel/memories/forget"):  # fmt: skip
        assert (method, (mem["id"],)) in methods, method


def test_a_search_result_is_fit_to_what_an_agent_takes_in(server, keys):
    """As on the local server: a result over MAX_RESULT_TOKENS keeps its best matches and says
    what was left out (agents refuse or cut bigger results)."""
    from reos_memory.interfaces.team_http.mcp_endpoint import MAX_RESULT_TOKENS
    from reos_memory.squirrel.token_count import count_tokens

    word = uuid.uuid4().hex[:8]
    for i in range(70):  # ~70 x 400 tokens, each its own memory (no two alike): over the limit
        noise = " ".join(uuid.uuid4().hex[:10] for _ in range(120))
        server.result(keys.backend_writer, "squirrel/memories/add", {
            "project_id": "proj-fit", "kind": "note", "text": f"{word} rollout {i}: {noise}"[:1900],
        })  # fmt: skip
    found = ok(server, keys.backend_reader, "search_memory",
               {"query": f"{word} rollout canary", "project_id": "proj-fit", "limit": 1000})  # fmt: skip
    cut = found["mcp_truncated"]
    assert cut["left_out"] > 0 and found["matches"]
    assert count_tokens(json.dumps(found, separators=(",", ":"))) <= MAX_RESULT_TOKENS * 1.05


def test_bad_arguments_are_tool_errors_naming_the_field_and_rule(server, keys):
    err = fails(server, keys.backend_writer, "remember", {"text": "", "project_id": "proj-pay"})
    assert err["reason"] == "invalid_params" and err["field"] == "$.text"
    err = fails(server, keys.backend_writer, "remember", {"text": "x y z", "owner_type": "user"})
    assert err["field"] == "$.owner_type" and "team" in err["message"]
    err = fails(server, keys.backend_reader, "get_memory", {"memory_id": "m", "org_id": "acme"})
    assert err["field"] == "$.org_id"  # the tenant is never an argument
    err = fails(server, keys.backend_reader, "get_task_context", {"task": "deploy"})
    assert err["rule"] == "Object missing required field `project_id`"
    err = fails(server, keys.backend_reader, "list_memories", {"project_root": "/srv/app"})
    assert err["field"] == "$.project_root" and "project_id" in err["message"]


def test_no_key_or_a_refused_key_gets_401_and_nothing_runs(server, keys):
    text = f"Written without a key {uuid.uuid4().hex}"
    call_msg = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "remember", "arguments": {"text": text, "project_id": "p"}}}  # fmt: skip
    tampered = keys.a_writer[:-1] + ("A" if keys.a_writer[-1] != "A" else "B")
    for key in (None, "", "rmk_nothing", tampered, keys.a_revoked):
        status, headers, reply = _post_mcp(server, call_msg, key)
        assert status == 401, (key, reply)
        assert headers["WWW-Authenticate"].startswith("Bearer"), headers
        assert reply["error"] == "unauthorized"
    listed = server.result(keys.a_reader, "squirrel/memories/list", {"limit": 1000})["memories"]
    assert text not in {m["text"] for m in listed}
    # the SDK's client gets no session: its initialize fails (the SDK does not say why)
    with pytest.raises(ExceptionGroup) as exc:
        session(server, tampered, lambda s: s.list_tools())
    assert exc.group_contains(MCPError, depth=2)


def test_a_body_over_the_limit_is_refused_with_413_and_nothing_runs(server, keys):
    text = "x" * (1 << 20)
    msg = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
           "params": {"name": "remember", "arguments": {"text": text, "project_id": "p"}}}  # fmt: skip
    try:
        status, _, _ = _post_mcp(server, msg, keys.a_writer)
    except (ConnectionError, urllib.error.URLError):  # closed before the whole body was sent
        status = 413
    assert status == 413
    listed = server.result(keys.a_reader, "squirrel/memories/list", {"limit": 1000})["memories"]
    assert text not in {m["text"] for m in listed}


# -- the MCP rows of the isolation matrix (tests/test_team_isolation.py has the JSON-RPC rows) ---

SECRET_WORD = "quixoticzebra"  # in org A's memories only: a result holding it has leaked


class Seeded:
    """Org A's memories, written through MCP: one of the backend team, one of the whole org."""

    def __init__(self, server: Server, keys: Keys) -> None:
        self.backend_mem = remember(server, keys.backend_writer,
                                    f"Deploy the ledger with make ship {SECRET_WORD}")["id"]  # fmt: skip
        self.org_mem = remember(server, keys.a_writer, f"Never drop the {SECRET_WORD} table",
                                kind="guard", owner_type="org")["id"]  # fmt: skip

    def outsiders(self, keys: Keys, memory_id: str) -> list[str]:
        """Keys that must not reach the memory: org B's, and for a team memory the other team's."""
        return [keys.b_writer, keys.b_admin] + (
            [keys.web_writer] if memory_id == self.backend_mem else []
        )

    def leaks(self, data: Any) -> bool:
        text = json.dumps({k: v for k, v in data.items() if k not in ("query", "task")})
        return any(x in text for x in (self.backend_mem, self.org_mem, SECRET_WORD))


@pytest.fixture(scope="module")
def seeded(server: Server, keys: Keys) -> Seeded:
    return Seeded(server, keys)


Row = Callable[[Server, Keys, Seeded], None]


def not_found_by_id(tool: str, **extra: Any) -> Row:
    def check(server: Server, keys: Keys, w: Seeded) -> None:
        for mem in (w.backend_mem, w.org_mem):
            for key in w.outsiders(keys, mem):
                err = fails(server, key, tool, {"memory_id": mem, **extra})
                assert err["reason"] == "not_found" and err["code"] == -32004, (tool, err)
                assert err["message"] == f"memory {mem!r} not found", err

    return check


def reads_nothing(tool: str, args: dict[str, Any]) -> Row:
    def check(server: Server, keys: Keys, w: Seeded) -> None:
        for key in (keys.b_writer, keys.b_admin):
            assert not w.leaks(ok(server, key, tool, args)), tool
        web = json.dumps(ok(server, keys.web_writer, tool, args))
        assert w.backend_mem not in web, tool

    return check


def forget_answers_as_for_no_memory(server: Server, keys: Keys, w: Seeded) -> None:
    """As squirrel/memories/forget: `forgotten: false`, as for an id that never existed."""
    for mem in (w.backend_mem, w.org_mem, "tmem-00000000000000000000"):
        for key in w.outsiders(keys, mem):
            assert ok(server, key, "forget", {"memory_id": mem}) == {
                "forgotten": False, "memory_id": mem,
            }  # fmt: skip


def writes_stay_home(server: Server, keys: Keys, w: Seeded) -> None:
    """Naming another org or team as the owner is not found; B's own write lands in B."""
    base = {"text": "x marks the spot", "project_id": "proj-pay"}
    for key, owner in (
        (keys.b_writer, {"owner_type": "org", "owner_id": keys.a}),
        (keys.b_writer, {"owner_type": "team", "owner_id": keys.backend}),
        (keys.web_writer, {"owner_type": "team", "owner_id": "backend"}),
    ):
        err = fails(server, key, "remember", {**base, **owner})
        assert err["reason"] == "not_found" and err["field"] == "$.owner_id", err
    mine = ok(server, keys.b_writer, "remember", {**base, "owner_type": "org"})["memory"]
    assert mine["owner_id"] == keys.b


def shares_stay_home(server: Server, keys: Keys, w: Seeded) -> None:
    base = {"text": "x marks the spot", "kind": "note", "project_id": "proj-pay"}
    for key, owner in (
        (keys.b_writer, {"owner_type": "org", "owner_id": keys.a}),
        (keys.b_writer, {"owner_type": "team", "owner_id": keys.backend}),
        (keys.web_writer, {"owner_type": "team", "owner_id": "backend"}),
    ):
        err = fails(server, key, "propose_share", {**base, **owner})
        assert err["reason"] == "not_found", err


def whoami_is_the_key(server: Server, keys: Keys, w: Seeded) -> None:
    assert ok(server, keys.b_writer, "whoami")["org_id"] == keys.b
    assert ok(server, keys.web_writer, "whoami")["team_id"] == keys.web


MATRIX: dict[str, list[Row]] = {
    "get_memory": [not_found_by_id("get_memory")],
    "update_memory": [not_found_by_id("update_memory", text="Globex was here")],
    "deprecate_memory": [not_found_by_id("deprecate_memory")],
    "forget": [forget_answers_as_for_no_memory],
    "list_memories": [reads_nothing("list_memories", {"limit": 1000})],
    "search_memory": [reads_nothing("search_memory", {"query": SECRET_WORD})],
    "get_task_context": [
        reads_nothing(
            "get_task_context", {"task": f"deploy {SECRET_WORD}", "project_id": "proj-pay"}
        )
    ],
    "remember": [writes_stay_home],
    "propose_share": [shares_stay_home],
    "whoami": [whoami_is_the_key],
}
READER_WRITES = {
    "remember": {"text": "x y z", "project_id": "proj-pay"},
    "update_memory": {"text": "changed"},
    "deprecate_memory": {},
    "forget": {},
}


def test_every_tool_has_its_isolation_row():
    assert set(MATRIX) == {t.name for t in tool_definitions()}, "add the new tool's row"


@pytest.mark.parametrize("tool", sorted(MATRIX))
def test_no_key_reaches_another_tenant_through(tool, server, keys, seeded):
    for check in MATRIX[tool]:
        check(server, keys, seeded)
    for mem in (seeded.backend_mem, seeded.org_mem):  # A's memories are there, unchanged
        got = ok(server, keys.a_writer, "get_memory", {"memory_id": mem})["memory"]
        assert got["version"] == 1 and got["status"] == "provisional", got


@pytest.mark.parametrize("tool", sorted(READER_WRITES))
def test_a_reader_cannot_write_through(tool, server, keys, seeded):
    args = {"memory_id": seeded.backend_mem, **READER_WRITES[tool]}
    if tool == "remember":
        args.pop("memory_id")
    err = fails(server, keys.backend_reader, tool, args)
    assert err["reason"] == "forbidden" and err["role"] == "writer", (tool, err)
    assert "'writer'" in err["message"]
    got = ok(server, keys.backend_reader, "get_memory", {"memory_id": seeded.backend_mem})
    assert got["memory"]["version"] == 1 and got["memory"]["status"] == "provisional"


def test_a_third_party_client_the_mcp_inspector_cli_calls_a_tool(server, keys):
    """One call through the MCP Inspector's CLI (the TypeScript SDK's Streamable HTTP client),
    from npm by npx, or the `mcp-inspector` named by REOS_MCP_INSPECTOR. Skipped only when the
    CLI cannot be had or started at all; once it starts, the call must succeed."""
    cli = os.environ.get("REOS_MCP_INSPECTOR")
    if cli is None and shutil.which("npx") is None:
        pytest.skip("npx is not installed: the MCP Inspector CLI cannot be fetched")
    cmd = [cli, "--cli"] if cli else ["npx", "--yes", INSPECTOR, "--cli"]
    try:
        probe = subprocess.run([*cmd, "--help"], capture_output=True, timeout=240, check=False)
    except subprocess.TimeoutExpired:
        pytest.skip(f"npx could not fetch {INSPECTOR} within 240 s (no npm registry?)")
    if probe.returncode != 0:
        pytest.skip(f"the MCP Inspector CLI cannot start: {probe.stderr.decode()[-300:]}")
    out = subprocess.run(
        [*cmd, f"{server.base}/mcp", "--transport", "http",
         "--header", f"Authorization: Bearer {keys.backend_reader}",
         "--method", "tools/call", "--tool-name", "whoami"],
        capture_output=True, timeout=120, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr.decode()[-2000:]
    reply = json.loads(out.stdout)
    assert not reply.get("isError"), reply
    me = json.loads(reply["content"][0]["text"])
    assert me["team_id"] == keys.backend and me["role"] == "reader"
    assert reply["structuredContent"] == me
    refused = subprocess.run(
        [*cmd, f"{server.base}/mcp", "--transport", "http",
         "--header", "Authorization: Bearer rmk_nothing", "--method", "tools/list"],
        capture_output=True, timeout=120, check=False,
    )  # fmt: skip
    assert refused.returncode != 0 and b"the API key was refused" in refused.stderr


def _post_mcp(server: Server, msg: Any, key: str | None) -> tuple[int, Any, Any]:
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if key is not None:
        headers["Authorization"] = f"Bearer {key}"
    req = urllib.request.Request(f"{server.base}/mcp", data=json.dumps(msg).encode(),
                                 headers=headers)  # fmt: skip
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.headers, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        body = exc.read()
        return exc.code, exc.headers, json.loads(body) if body.startswith(b"{") else body


def test_a_team_key_reads_org_memories_but_never_changes_them(server, keys):
    """Inside one org: a team's writer (or admin) key sees the org-wide memories, and its
    update, deprecate and forget of one are forbidden, over /rpc and /mcp alike; the org's own
    writer changes it. Another team's memory stays not found."""
    org_mem = remember(server, keys.a_writer, f"Org rule {uuid.uuid4().hex}", owner_type="org")
    web_mem = remember(server, keys.web_writer, f"Web rule {uuid.uuid4().hex}", owner_type="team")
    rpc = {
        "squirrel/memories/update": {"memory_id": org_mem["id"], "text": "Changed by a team"},
        "squirrel/memories/deprecate": {"memory_id": org_mem["id"]},
        "squirrel/memories/forget": {"memory_id": org_mem["id"]},
    }
    for method, params in rpc.items():
        err = server.error(keys.backend_writer, method, params)
        assert err["code"] == -32003 and "no team" in err["message"], (method, err)
        other_team = {**params, "memory_id": web_mem["id"]}
        if method == "squirrel/memories/forget":  # (one out of reach is "already gone")
            assert not server.result(keys.backend_writer, method, other_team)["forgotten"]
        else:
            assert server.error(keys.backend_writer, method, other_team)["code"] == -32004
    tools = {
        "update_memory": {"memory_id": org_mem["id"], "text": "Changed by a team over MCP"},
        "deprecate_memory": {"memory_id": org_mem["id"]},
        "forget": {"memory_id": org_mem["id"]},
    }
    for tool, args in tools.items():
        err = fails(server, keys.backend_writer, tool, args)
        assert err["reason"] == "forbidden", (tool, err)
    # the team key still reads it, unchanged; the org's writer changes it
    got = server.result(keys.backend_reader, "squirrel/memories/get", {"memory_id": org_mem["id"]})
    assert got["memory"]["text"] == org_mem["text"] and got["memory"]["version"] == 1
    done = server.result(keys.a_writer, "squirrel/memories/deprecate", {"memory_id": org_mem["id"]})
    assert done["memory"]["status"] == "deprecated"


def test_an_org_wide_share_is_decided_by_an_admin_of_the_org(server, keys):
    """A share proposed to the whole org: a team's writer may neither approve nor reject it,
    the org's writer (not an admin) neither; the org's admin approves it."""
    share = server.result(keys.a_writer, "team/shares/propose", {
        "project_id": "proj-pay", "kind": "note", "owner_type": "org",
        "text": f"Org-wide share {uuid.uuid4().hex}",
    })["share"]  # fmt: skip
    for key in (keys.backend_writer, keys.a_writer):
        for method in ("team/shares/approve", "team/shares/reject"):
            err = server.error(key, method, {"share_id": share["id"]})
            assert err["code"] == -32003 and err["data"]["role"] == "admin", (method, err)
    done = server.result(keys.a_admin, "team/shares/approve", {"share_id": share["id"]})
    assert done["share"]["status"] == "approved" and done["memory"]["owner_type"] == "org"


def test_a_nul_character_is_an_error_naming_the_field(server, keys):
    """PostgreSQL's text keeps no NUL: an outside attack's NUL in a tool's text was an internal
    error with a traceback in the log. It is refused like any bad argument, naming the field."""
    err = fails(server, keys.backend_writer, "remember",
                {"text": "use the \x00 queue", "project_id": "proj-pay"})  # fmt: skip
    assert err["reason"] == "invalid_params" and err["field"] == "$.text"
    assert "NUL" in err["message"]
    err = fails(server, keys.backend_reader, "get_memory", {"memory_id": "tmem-\x00"})
    assert err["reason"] == "invalid_params" and err["field"] == "$.memory_id"
