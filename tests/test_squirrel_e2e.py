"""Squirrel end to end over real stdio: two sessions of one project, the offline writer and the
two LLM providers against a local server; context, feedback and CR-Memory."""

from __future__ import annotations

import json
from pathlib import Path

import apsw
import pytest

from harness.rpc_client import Server
from tests.fake_llm import FakeProvider, provider_env, settle

pytestmark = pytest.mark.e2e

SSL_ERROR = (
    "Traceback (most recent call last):\n"
    '  File "rates.py", line 3, in <module>\n'
    "    r = requests.get(URL)\n"
    "requests.exceptions.SSLError: HTTPSConnectionPool(host='api.rates.example', port=443):"
    " Max retries exceeded with url: /v1/latest (Caused by SSLError(SSLCertVerificationError(1,"
    " '[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed')))"
)


def ev(role: str, kind: str, **kw: object) -> dict:
    return {"role": role, "kind": kind, **kw}


def first_session() -> list[dict]:
    """requests fails on SSL three times, the user gets angry, httpx works; then pnpm."""
    out = [
        ev(
            "user",
            "message",
            ts="2026-05-01T10:00:00Z",
            text="Fetch the exchange rates over HTTP in rates.py and print them",
        )
    ]
    for i in range(3):
        out.append(
            ev(
                "assistant",
                "tool_call",
                tool_name="Bash",
                command="python rates.py",
                call_id=f"run{i}",
            )
        )
        out.append(
            ev(
                "tool",
                "tool_result",
                tool_name="Bash",
                call_id=f"run{i}",
                is_error=True,
                exit_code=1,
                text=SSL_ERROR,
            )
        )
        if i == 1:
            out.append(ev("user", "message", text="ugh, still the same SSL error"))
    out += [
        ev("user", "message", text="WTF this is the third time!!! stop retrying the same thing"),
        ev(
            "assistant",
            "tool_call",
            tool_name="Edit",
            file="rates.py",
            call_id="edit1",
            summary="Replace requests with httpx in rates.py",
        ),
        ev(
            "tool",
            "tool_result",
            tool_name="Edit",
            call_id="edit1",
            text="The file rates.py has been updated.",
        ),
        ev("assistant", "tool_call", tool_name="Bash", command="python rates.py", call_id="ok"),
        ev("tool", "tool_result", tool_name="Bash", call_id="ok", exit_code=0, text="USD/EUR 0.92"),
        ev("user", "message", text="great, thanks. From now on use pnpm, never npm."),
    ]
    return out


LLM_OPS_1 = {
    "ops": [
        {
            "op": "ADD",
            "scope": "project",
            "owner_type": "user",
            "owner_id": "someone-else",
            "kind": "pattern",
            "tier": "short_term",
            "key": None,
            "text": "In this project requests hits SSL certificate errors; use httpx as the HTTP"
            " client instead.",
            "ttl_days": 30,
            "confidence": 0.85,
        },
        {
            "op": "ADD",
            "scope": "project",
            "owner_type": "user",
            "owner_id": "someone-else",
            "kind": "invariant",
            "tier": "short_term",
            "key": "project.http_client",
            "text": "The standard HTTP client for this project is httpx.",
            "ttl_days": None,
            "confidence": 0.9,
        },
        {
            "op": "ADD",
            "scope": "project",
            "owner_type": "user",
            "owner_id": "someone-else",
            "kind": "guard",
            "tier": "emergency",
            "polarity": -1,
            "key": None,
            "text": "Do not keep retrying requests after an SSL error; switch to httpx.",
            "ttl_days": 3,
            "confidence": 0.8,
        },
    ],
    "episode_evidence": {
        "episode_id": "x",
        "source": "failure_then_success",
        "frustration": "severe",
    },
}
LLM_OPS_2 = {
    "ops": [
        {
            "op": "ADD",
            "scope": "project",
            "kind": "guard",
            "tier": "long_term",
            "polarity": -1,
            "key": "project.package_manager",
            "text": "Use pnpm for packages in this project; never run npm.",
            "confidence": 0.95,
        },
    ],
    "episode_evidence": {"source": "explicit_statement", "frustration": "none"},
}

HTTP_TASK = "Add an HTTP call that downloads the invoice PDF from the billing API"
POLICY = """
[promotion.default]
min_opportunities = 2
min_use_ratio = 0.5
min_regret_hits = 1

[deprecation.default]
min_opportunities = 2
max_use_ratio = 0.0

[retrieval.kind]
note = -1.0  # notes rank last here, so the long one below never fits the budget
"""


def make_repo(path: Path) -> Path:
    (path / ".git").mkdir(parents=True)
    (path / "src").mkdir()
    return path


@pytest.mark.parametrize("writer", ["rules", "openai", "anthropic"])
def test_two_sessions_learn_and_help(tmp_path, db_path, provider: FakeProvider, writer):
    two_sessions(tmp_path, db_path, provider, writer, "hash")


@pytest.mark.model
def test_two_sessions_with_the_real_model(tmp_path, db_path, provider: FakeProvider):
    two_sessions(tmp_path, db_path, provider, "rules", "onnx")


def two_sessions(tmp_path, db_path, provider: FakeProvider, writer: str, embedder: str) -> None:
    shop = make_repo(tmp_path / "shop")
    other = make_repo(tmp_path / "other")
    (shop / ".sqrl").mkdir()
    (shop / ".sqrl" / "memory_policy.toml").write_text(POLICY)
    env = {"REOS_MEMORY_WRITER": "rules"} if writer == "rules" else provider_env(provider, writer)
    env["REOS_MEMORY_OWNER_ID"] = "alice"
    if writer != "rules":
        provider.replies = [
            provider.reply(writer, json.dumps(LLM_OPS_1)),
            provider.reply(writer, "```json\n" + json.dumps(LLM_OPS_2) + "\n```"),
        ]
    with Server(db_path, env=env, embedder=embedder) as srv:
        assert srv.wait_ready(120) == "ready"
        # -- session 1: learn ------------------------------------------------------------
        r = srv.call(
            "squirrel/ingest",
            {"project_root": str(shop), "session_id": "s1", "events": first_session()},
        )
        assert [e["cut_reason"] for e in r["episodes"]] == ["resolved_frustration"]
        ep1 = r["episodes"][0]
        assert ep1["stats"] == {
            "error_count": 3,
            "retry_loops": 3,
            "tests_final_status": "not_run",
            "user_frustration": "severe",
        }
        if writer == "rules":  # the offline writer commits inside the request
            assert ep1["outcome"] == "written" and ep1["writer"] == "rules"
        else:  # an LLM writer works in the background; its memories appear when it is done
            assert ep1["outcome"] == "queued"
            settle(srv, str(shop))
            ep1 = {
                **ep1,
                **srv.call("squirrel/episodes/get", {"episode_id": ep1["episode_id"]})["episode"],
            }
            assert ep1["outcome"] == "written"
        assert r["pending_events"] == 1
        # flush with wait: the writer's call (LLM too) happens inside the request
        flushed = srv.call(
            "squirrel/flush", {"project_root": str(shop), "session_id": "s1", "wait": True}
        )
        assert [e["cut_reason"] for e in flushed["episodes"]] == ["flush"]
        assert flushed["episodes"][0]["outcome"] == "written"
        texts = [
            op["text"]
            for e in [ep1, *flushed["episodes"]]
            for op in e["ops"]
            if op["action"] == "added"
        ]
        assert any("httpx" in t for t in texts) and any("pnpm" in t for t in texts), texts
        mems = srv.call("squirrel/memories/list", {"project_root": str(shop)})["memories"]
        assert {m["owner_id"] for m in mems} == {"alice"}  # a writer cannot file under others
        assert all(m["status"] == "provisional" for m in mems)
        # -- session 2: the memories come back, inside the budget ---------------------------
        note = srv.call(
            "squirrel/memories/add",
            {
                "project_root": str(shop),
                "kind": "note",
                "text": "Invoices older than a year are archived: the billing API answers 410 Gone"
                " for an archived invoice PDF, so the download must fall back to the archive"
                " bucket, which needs separate credentials from the ops team; those are"
                " rotated every month and requested through the internal access portal,"
                " and downloads from the archive are throttled to ten per minute per account.",
            },
        )
        note_id = note["memory"]["id"]
        contexts = []
        for _ in range(2):
            c = srv.call(
                "squirrel/get_task_context",
                {
                    "project_root": str(shop),
                    "task": HTTP_TASK,
                    "session_id": "s2",
                    "context_budget_tokens": 170,
                },
            )
            assert c["tokens"] <= 170 and c["budget"] == 170
            prompt = c["context_prompt"]
            assert prompt.startswith('<squirrel-context id="') and "httpx" in prompt
            assert "pnpm" in prompt
            assert prompt.strip().endswith("</squirrel-context>")
            assert note_id not in c["memory_ids"], prompt  # did not fit, had the opportunity
            contexts.append(c)
            fb = srv.call(
                "squirrel/feedback", {"context_id": c["context_id"], "errors": 0, "retries": 0}
            )
            assert fb["counted"] and fb["regret_hit"] and fb["regret_saved"] > 0
        again = srv.call(
            "squirrel/feedback",
            {"context_id": contexts[0]["context_id"], "errors": 0, "retries": 0},
        )
        assert again["counted"] is False  # the same context counts once
        got = srv.call("squirrel/memories/get", {"memory_id": contexts[0]["memory_ids"][0]})
        assert got["metrics"]["use_count"] == 2 and got["metrics"]["opportunities"] == 2
        assert got["metrics"]["suspected_regret_hits"] == 2
        assert got["evidence"] and got["evidence"][0]["episode_id"].startswith("ep-")
        nm = srv.call("squirrel/memories/get", {"memory_id": note_id})["metrics"]
        assert nm["opportunities"] == 2 and nm["use_count"] == 0
        # a second project sees none of it
        c2 = srv.call("squirrel/get_task_context", {"project_root": str(other), "task": HTTP_TASK})
        assert c2["memory_ids"] == [] and c2["context_prompt"] == "" and c2["tokens"] == 0
        # -- CR-Memory ---------------------------------------------------------------------
        dry = srv.call("squirrel/cr_memory/run", {"project_root": str(shop), "dry_run": True})
        by = {d["memory_id"]: d for d in dry["decisions"]}
        assert by[note_id]["action"] == "deprecate" and "0 of 2" in by[note_id]["reason"]
        used = contexts[0]["memory_ids"]
        assert all(by[m]["action"] == "promote" for m in used), [by[m] for m in used]
        assert str(shop / ".sqrl" / "memory_policy.toml") in dry["policy_sources"]
        listed = srv.call("squirrel/memories/list", {"project_root": str(shop)})["memories"]
        assert all(m["status"] == "provisional" for m in listed)  # dry run changed nothing
        run = srv.call("squirrel/cr_memory/run", {"project_root": str(shop)})
        assert run["promoted"] >= 2 and run["deprecated"] >= 1
        after = {
            m["id"]: m
            for m in srv.call(
                "squirrel/memories/list",
                {"project_root": str(shop), "statuses": ["provisional", "active", "deprecated"]},
            )["memories"]
        }
        assert after[note_id]["status"] == "deprecated"
        for m in used:
            assert after[m]["status"] == "active"
            if after[m]["kind"] in ("invariant", "preference", "pattern"):
                assert after[m]["tier"] == "long_term"
        status = srv.call("squirrel/status")
        assert status["episodes"]["written"] == 2
    if writer != "rules":
        assert len(provider.requests) == 2  # one call per episode, none for the context
        first = provider.requests[0]
        body = first["body"]
        if writer == "openai":
            assert first["path"] == "/v1/chat/completions"
            assert body["response_format"] == {"type": "json_object"}
            system, user = body["messages"][0]["content"], body["messages"][1]["content"]
        else:
            assert first["path"] == "/v1/messages"
            system, user = body["system"], body["messages"][0]["content"]
        assert "Memory Writer" in system and "[promotion.default]" in system
        sent = json.loads(user)
        assert sent["features"]["error_count"] == 3 and sent["owner"]["owner_id"] == "alice"
        assert any("SSLError" in json.dumps(e) for e in sent["events"])
        # the rules' reading of the same episode goes with its events: what they would write
        # (here the switch from requests to httpx after the SSL errors), with its source
        candidates = sent["reading"]["candidates"]
        assert any("httpx" in c["text"] and c["source"] for c in candidates), sent["reading"]
        assert status["writer_calls_by_day"][0]["input_tokens"] >= 642


def test_ingest_rejects_bad_events_and_keeps_state(db_path, tmp_path):
    shop = make_repo(tmp_path / "shop")
    with Server(db_path) as srv:
        srv.wait_ready()
        err = srv.error(
            "squirrel/ingest",
            {
                "project_root": str(shop),
                "session_id": "s",
                "events": [{"role": "robot", "kind": "message"}],
            },
        )
        assert err.code == -32602 and err.data["field"] == "$.events[0].role"
        err = srv.error(
            "squirrel/ingest",
            {
                "project_root": str(shop),
                "session_id": "s",
                "events": [ev("user", "message", ts="yesterday")],
            },
        )
        assert err.code == -32602 and err.data["field"] == "$.events[0].ts"
        err = srv.error(
            "squirrel/ingest", {"project_root": "relative/path", "session_id": "s", "events": []}
        )
        assert err.data["field"] == "$.project_root"
        err = srv.error("squirrel/ingest", {"session_id": "s", "events": []})
        assert err.data["field"] == "$.project_id"
        assert srv.call("squirrel/status")["pending_events"] == 0
        r = srv.call(
            "squirrel/ingest",
            {
                "project_root": str(shop),
                "session_id": "s",
                "events": [ev("user", "message", text="hi")],
            },
        )
        assert r["pending_events"] == 1
        # the same session cannot move to another project
        err = srv.error(
            "squirrel/ingest",
            {
                "project_id": "elsewhere",
                "session_id": "s",
                "events": [ev("user", "message", text="x")],
            },
        )
        assert err.code == -32009


def test_injected_context_is_never_learned_again(db_path, tmp_path):
    shop = make_repo(tmp_path / "shop")
    with Server(db_path, env={"REOS_MEMORY_WRITER": "rules"}) as srv:
        srv.wait_ready()
        srv.call(
            "squirrel/memories/add",
            {
                "project_root": str(shop),
                "kind": "guard",
                "polarity": -1,
                "text": "Never run npm; use pnpm.",
                "key": "project.package_manager",
            },
        )
        c = srv.call(
            "squirrel/get_task_context",
            {"project_root": str(shop), "task": "install the dependencies"},
        )
        assert "pnpm" in c["context_prompt"]
        # the agent's log echoes the injected block inside a user turn; the user also says
        # something of their own
        said = c["context_prompt"] + "\nPlease always run the linter before committing."
        r = srv.call(
            "squirrel/ingest",
            {
                "project_root": str(shop),
                "session_id": "s",
                "events": [ev("user", "message", text=said)],
                "session_end": True,
            },
        )
        ops = r["episodes"][0]["ops"]
        assert [o["action"] for o in ops] == ["added"] and "linter" in ops[0]["text"]
        ep = srv.call("squirrel/episodes/get", {"episode_id": r["episodes"][0]["episode_id"]})
        assert "squirrel-context" not in json.dumps(ep) and "pnpm" not in json.dumps(ep)


def test_explicit_add_dedups_updates_and_forgets(db_path, tmp_path):
    shop = make_repo(tmp_path / "shop")
    with Server(db_path) as srv:
        srv.wait_ready()
        a = srv.call(
            "squirrel/memories/add",
            {
                "project_root": str(shop),
                "kind": "invariant",
                "key": "project.database",
                "text": "The database is PostgreSQL 15.",
            },
        )
        assert a["memory"]["status"] == "provisional" and "deduplicated_into" not in a
        b = srv.call(
            "squirrel/memories/add",
            {
                "project_root": str(shop),
                "kind": "invariant",
                "text": "the database is PostgreSQL 15",
            },
        )
        assert b["deduplicated_into"] == a["memory"]["id"]
        got = srv.call("squirrel/memories/get", {"memory_id": a["memory"]["id"]})
        assert len(got["evidence"]) == 2
        assert {e["source"] for e in got["evidence"]} == {"explicit_statement"}
        c = srv.call(
            "squirrel/memories/add",
            {
                "project_root": str(shop),
                "kind": "invariant",
                "key": "project.database",
                "text": "The database moved to SQLite.",
            },
        )
        assert c["replaced"] == [a["memory"]["id"]]
        old = srv.call("squirrel/memories/get", {"memory_id": a["memory"]["id"]})["memory"]
        assert old["status"] == "deprecated"
        g = srv.call(
            "squirrel/memories/add",
            {"scope": "global", "kind": "preference", "text": "Answer in British English."},
        )
        assert g["memory"]["project_id"] is None
        err = srv.error(
            "squirrel/memories/add",
            {"scope": "repo_path", "kind": "note", "project_root": str(shop), "text": "x"},
        )
        assert err.code == -32602
        rp = srv.call(
            "squirrel/memories/add",
            {
                "project_root": str(shop),
                "scope": "repo_path",
                "path_prefix": "services/pay/",
                "kind": "invariant",
                "text": "Payments amounts are integer cents in services/pay.",
            },
        )
        assert rp["memory"]["path_prefix"] == "services/pay"
        inside = srv.call(
            "squirrel/get_task_context",
            {
                "project_root": str(shop),
                "task": "payments amounts in cents",
                "path": "services/pay/api.py",
            },
        )
        outside = srv.call(
            "squirrel/get_task_context",
            {
                "project_root": str(shop),
                "task": "payments amounts in cents",
                "path": "services/payroll/api.py",
            },
        )
        assert rp["memory"]["id"] in inside["memory_ids"]
        assert rp["memory"]["id"] not in outside["memory_ids"]
        found = srv.call("squirrel/search", {"project_root": str(shop), "query": "payments cents"})
        assert rp["memory"]["id"] in [m["id"] for m in found["matches"]]  # no path: shown
        narrowed = srv.call(
            "squirrel/search",
            {"project_root": str(shop), "query": "payments cents", "path": "services/payroll/x.py"},
        )
        assert rp["memory"]["id"] not in [m["id"] for m in narrowed["matches"]]
        f = srv.call("squirrel/memories/forget", {"memory_id": c["memory"]["id"]})
        assert f["removed"]["memories"] == 1
        assert srv.error("squirrel/memories/get", {"memory_id": c["memory"]["id"]}).code == -32004
    conn = apsw.Connection(str(db_path))
    assert not conn.execute("SELECT 1 FROM memories WHERE id = ?", (c["memory"]["id"],)).fetchall()
    assert (
        not conn.execute(
            "SELECT 1 FROM memory_vectors WHERE memory_id = ?", (c["memory"]["id"],)
        ).fetchall()
        if _has_vec(conn)
        else True
    )


def _has_vec(conn: apsw.Connection) -> bool:
    try:
        conn.enable_load_extension(True)
        from reos_memory.store.connection import vec_extension_path

        conn.load_extension(vec_extension_path())
        return True
    except apsw.Error:
        return False


def test_the_next_episode_of_the_session_judges_its_context(db_path, tmp_path):
    shop = make_repo(tmp_path / "shop")
    with Server(db_path) as srv:
        srv.wait_ready()
        # a baseline: one earlier task with trouble
        srv.call(
            "squirrel/ingest",
            {
                "project_root": str(shop),
                "session_id": "s1",
                "events": first_session(),
                "session_end": True,
            },
        )
        mem = srv.call(
            "squirrel/memories/add",
            {
                "project_root": str(shop),
                "kind": "invariant",
                "key": "project.http_client",
                "text": "Use httpx for HTTP.",
            },
        )["memory"]
        c = srv.call(
            "squirrel/get_task_context",
            {"project_root": str(shop), "session_id": "s2", "task": "call the rates API over HTTP"},
        )
        assert mem["id"] in c["memory_ids"]
        quiet = [
            ev("user", "message", text="call the rates API over HTTP"),
            ev("assistant", "tool_call", tool_name="Bash", command="python rates.py", call_id="x"),
            ev("tool", "tool_result", call_id="x", exit_code=0, text="USD/EUR 0.92"),
        ]
        r = srv.call(
            "squirrel/ingest",
            {"project_root": str(shop), "session_id": "s2", "events": quiet, "session_end": True},
        )
        assert r["episodes"][0]["contexts_judged"] == 1
        m = srv.call("squirrel/memories/get", {"memory_id": mem["id"]})["metrics"]
        assert m["suspected_regret_hits"] == 1 and m["estimated_regret_saved"] > 0
        again = srv.call(
            "squirrel/feedback", {"context_id": c["context_id"], "errors": 0, "retries": 0}
        )
        assert again["counted"] is False
        m2 = srv.call("squirrel/memories/get", {"memory_id": mem["id"]})["metrics"]
        assert m2["suspected_regret_hits"] == 1


def test_a_big_episode_is_summarised_under_the_input_cap(db_path, tmp_path, provider):
    shop = make_repo(tmp_path / "shop")
    env = provider_env(
        provider,
        "openai",
        REOS_MEMORY_WRITER_MAX_INPUT_TOKENS="3000",
        REOS_MEMORY_MAX_EPISODE_EVENTS="5000",
    )
    provider.replies = [provider.reply("openai", json.dumps({"ops": []}))]
    events = [ev("user", "message", text="build the thing")]
    for i in range(600):
        events.append(
            ev("assistant", "tool_call", tool_name="Bash", command=f"make step{i}", call_id=f"c{i}")
        )
        events.append(
            ev(
                "tool",
                "tool_result",
                call_id=f"c{i}",
                exit_code=int(i % 7 == 0),
                text=f"step {i} output " + "lorem ipsum dolor " * 30,
            )
        )
    with Server(db_path, env=env) as srv:
        srv.wait_ready()
        r = srv.call(
            "squirrel/ingest",
            {"project_root": str(shop), "session_id": "s", "events": events, "session_end": True},
            timeout=60,
        )
        ep = r["episodes"][0]
        assert ep["outcome"] == "queued" and ep["events"] == 1201
        [done] = settle(srv, str(shop))
        assert done["outcome"] == "written"
    from reos_memory.squirrel.token_count import count_tokens

    body = provider.requests[0]["body"]
    sent = sum(count_tokens(m["content"]) for m in body["messages"])
    assert sent <= 3000
    user = json.loads(body["messages"][1]["content"])
    assert any("omitted" in e for e in user["events"])  # start and end kept, middle dropped
    assert user["events"][0]["text"] == "build the thing"


def test_memory_and_episode_lists_page_by_cursor(db_path, tmp_path):
    shop = make_repo(tmp_path / "shop")
    with Server(db_path) as srv:
        srv.wait_ready()
        for word in ("ruff", "mypy", "pytest"):
            srv.call(
                "squirrel/memories/add",
                {"project_root": str(shop), "kind": "note", "text": f"Run {word} before pushing."},
            )
        first = srv.call("squirrel/memories/list", {"project_root": str(shop), "limit": 2})
        assert len(first["memories"]) == 2 and first["next_cursor"]
        rest = srv.call(
            "squirrel/memories/list",
            {"project_root": str(shop), "limit": 2, "cursor": first["next_cursor"]},
        )
        assert len(rest["memories"]) == 1 and rest["next_cursor"] is None
        assert "pytest" in rest["memories"][0]["text"]
        err = srv.error("squirrel/episodes/list", {"cursor": "not-a-cursor"})
        assert err.code == -32602 and err.data["field"] == "$.cursor"
