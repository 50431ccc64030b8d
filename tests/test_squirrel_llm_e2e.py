"""The Memory Writer's LLM providers against a local server: failures leave episodes for a
retry, nothing is lost, and no secret ever reaches the disk or the wire."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from harness.rpc_client import Server
from harness.secret_corpus import BENIGN, SECRETS
from tests.fake_llm import HANG, FakeProvider, failing_episode, provider_env, settle

pytestmark = pytest.mark.e2e

GOOD = {"ops": [{"op": "ADD", "kind": "pattern", "text": "Run migrations before the tests."}]}


def repo(tmp_path: Path) -> Path:
    p = tmp_path / "repo"
    (p / ".git").mkdir(parents=True)
    return p


def ingest_failing_sessions(srv: Server, root: Path, n: int) -> None:
    """n ended sessions of one failing test run each; each episode's writer call is queued."""
    for i in range(n):
        r = srv.call(
            "squirrel/ingest",
            {
                "project_root": str(root),
                "session_id": f"s{i}",
                "events": failing_episode(str(i)),
                "session_end": True,
            },
        )
        assert r["episodes"][0]["outcome"] == "queued"


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_garbage_429_500_and_a_hang_leave_the_episode_for_retry(
    tmp_path, db_path, provider: FakeProvider, kind
):
    root = repo(tmp_path)
    env = provider_env(
        provider,
        kind,
        REOS_MEMORY_LLM_TIMEOUT_S="1",
        REOS_MEMORY_LLM_MAX_RETRIES="1",
        REOS_MEMORY_WRITER_MAX_CONCURRENT_CALLS="1",  # replies are scripted in order
    )
    provider.replies = [
        provider.reply(kind, "I think you should remember to run migrations."),  # not JSON
        provider.reply(
            kind, json.dumps({"ops": [{"op": "ADD", "kind": "gotcha", "text": "x"}]})
        ),  # schema violation
        (429, '{"error": "rate limited"}'),
        (500, "oops"),  # both attempts fail
        (200, HANG),
        (200, HANG),  # times out twice
        provider.reply(kind, json.dumps(GOOD)),
    ]
    with Server(db_path, env=env) as srv:
        srv.wait_ready()
        ingest_failing_sessions(srv, root, 4)  # the calls run in the background
        # meanwhile the connection is not held up by the provider (garbage, errors, a hang)
        t0 = time.monotonic()
        ctx = srv.call("squirrel/get_task_context", {"project_root": str(root), "task": "tests"})
        assert ctx["budget"] == 400 and time.monotonic() - t0 < 3
        eps = settle(srv, str(root))
        by_session = {e["session_id"]: e for e in eps}
        outcomes = [by_session[f"s{i}"] for i in range(4)]
        reasons = [o["outcome_reason"] or "" for o in outcomes]
        assert [o["outcome"] for o in outcomes] == ["failed"] * 4, reasons
        assert "not JSON" in reasons[0]
        assert "op schema" in reasons[1] and "gotcha" in reasons[1]
        assert "2 attempts" in reasons[2] and "HTTP 500" in reasons[2]
        assert "2 attempts" in reasons[3]  # each hang ended by the timeout
        assert all(e["processed"] == 0 for e in eps)
        # nothing is lost: a retry with a working provider writes the memories
        first = outcomes[0]["id"]
        out = srv.call("squirrel/episodes/retry", {"episode_id": first, "wait": True}, timeout=30)
        assert out["episodes"][0]["outcome"] == "written", out["episodes"][0].get("reason")
        got = srv.call("squirrel/episodes/get", {"episode_id": first})["episode"]
        assert got["processed"] == 1 and got["attempts"] == 2 and got["ops"][0]["action"] == "added"
        status = srv.call("squirrel/status")
        day = status["writer_calls_by_day"][0]
        assert day["calls"] == 5 and day["ok"] == 1 and day["input_tokens"] > 0
        # ping never waited behind any of it
        t0 = time.monotonic()
        srv.call("ping")
        assert time.monotonic() - t0 < 1
    # a hang costs at most timeout x attempts for that one request
    assert len(provider.requests) == 7  # 1 + 1 + 2 + 2 (each hang ended by the timeout) + 1


def wait_outcome(srv: Server, episode_id: str, outcome: str, timeout: float = 30) -> dict:
    """The episode once its outcome is `outcome` (its state at the deadline otherwise)."""
    deadline = time.monotonic() + timeout
    while True:
        ep = srv.call("squirrel/episodes/get", {"episode_id": episode_id})["episode"]
        if ep["outcome"] == outcome or time.monotonic() > deadline:
            return ep
        time.sleep(0.05)


def test_retry_without_wait_learns_a_failed_episode_once_the_provider_recovers(
    tmp_path, db_path, provider: FakeProvider
):
    root = repo(tmp_path)
    env = provider_env(provider, "openai", REOS_MEMORY_LLM_MAX_RETRIES="0")
    provider.replies = [(500, "down")]  # the provider is down for the first call
    with Server(db_path, env=env) as srv:
        srv.wait_ready()
        ingest_failing_sessions(srv, root, 1)
        (ep,) = settle(srv, str(root))
        assert ep["outcome"] == "failed" and "HTTP 500" in ep["outcome_reason"]
        # a failed episode is not retried by the writer on its own: a new episode's call is
        # the only one that follows (a failing provider never causes runaway calls)
        provider.replies = [(500, "still down")]
        r = srv.call(
            "squirrel/ingest",
            {
                "project_root": str(root),
                "session_id": "other",
                "events": failing_episode("y"),
                "session_end": True,
            },
        )
        assert wait_outcome(srv, r["episodes"][0]["episode_id"], "failed")["outcome"] == "failed"
        assert len(provider.requests) == 2
        assert (
            srv.call("squirrel/episodes/get", {"episode_id": ep["id"]})["episode"]["attempts"] == 1
        )

        # the provider is back; the user retries the first episode without waiting
        provider.replies = [provider.reply("openai", json.dumps(GOOD))]
        out = srv.call("squirrel/episodes/retry", {"episode_id": ep["id"]})
        assert out["episodes"] == [{"episode_id": ep["id"], "outcome": "queued"}]
        done = wait_outcome(srv, ep["id"], "written")
        assert done["outcome"] == "written" and done["processed"] == 1, done
        assert done["attempts"] == 2
        mems = srv.call("squirrel/memories/list", {"project_root": str(root)})["memories"]
        assert [m["text"] for m in mems] == ["Run migrations before the tests."]
    assert len(provider.requests) == 3  # one call per attempt, no more


def test_daily_token_budget_defers_the_call(tmp_path, db_path, provider: FakeProvider):
    root = repo(tmp_path)
    env = provider_env(provider, "openai", REOS_MEMORY_WRITER_DAILY_TOKEN_BUDGET="100")
    with Server(db_path, env=env) as srv:
        srv.wait_ready()
        r = srv.call(
            "squirrel/ingest",
            {
                "project_root": str(root),
                "session_id": "s",
                "events": failing_episode("x"),
                "session_end": True,
            },
        )
        ep_id = r["episodes"][0]["episode_id"]
        deadline = time.monotonic() + 20
        while True:  # the background writer looks at the budget and leaves it pending
            ep = srv.call("squirrel/episodes/get", {"episode_id": ep_id})["episode"]
            if "budget" in (ep["outcome_reason"] or "") or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert ep["outcome"] == "pending" and ep["processed"] == 0
        assert "daily writer token budget" in ep["outcome_reason"]
    assert provider.requests == []


def test_writer_rules_setting_forces_the_offline_writer(tmp_path, db_path, provider):
    root = repo(tmp_path)
    env = provider_env(provider, "openai", REOS_MEMORY_WRITER="rules")
    with Server(db_path, env=env) as srv:
        srv.wait_ready()
        r = srv.call(
            "squirrel/ingest",
            {
                "project_root": str(root),
                "session_id": "s",
                "events": [
                    {"role": "user", "kind": "message", "text": "Never push to main directly."}
                ],
                "session_end": True,
            },
        )
        assert r["episodes"][0]["writer"] == "rules"
        assert r["episodes"][0]["ops"][0]["kind"] == "guard"
    assert provider.requests == []


def test_secret_corpus_leaves_nothing_on_disk_or_on_the_wire(tmp_path, db_path, provider):
    root = repo(tmp_path)
    events = []
    fields = ["text", "command", "raw_snippet", "summary"]
    for i, (context, _secrets, _kind) in enumerate(SECRETS):
        field = fields[i % len(fields)]
        if i % 3 == 0:
            events.append({"role": "user", "kind": "message", "text": context})
        else:
            events.append(
                {
                    "role": "assistant",
                    "kind": "tool_call",
                    "tool_name": "Bash",
                    "command": context if field == "command" else "make deploy",
                    "call_id": f"c{i}",
                }
            )
            events.append(
                {
                    "role": "tool",
                    "kind": "tool_result",
                    "call_id": f"c{i}",
                    "is_error": True,
                    field if field != "command" else "text": context,
                }
            )
    for text, _keep in BENIGN:
        events.append({"role": "user", "kind": "message", "text": text})
    every_secret = [s for _c, secrets, _k in SECRETS for s in secrets]
    echo = {
        "ops": [
            {
                "op": "ADD",
                "kind": "note",
                "text": "The deploy token is " + every_secret[0] + " (from the logs).",
            }
        ]
    }
    provider.replies = [provider.reply("openai", json.dumps(echo))] * 200
    env = provider_env(
        provider,
        "openai",
        REOS_MEMORY_WRITER_MAX_INPUT_TOKENS="200000",
        REOS_MEMORY_MAX_EPISODE_EVENTS="5000",
    )
    with Server(db_path, env=env) as srv:
        srv.wait_ready()
        r = srv.call(
            "squirrel/ingest", {"project_root": str(root), "session_id": "s", "events": events}
        )
        out = srv.call("squirrel/flush", {"project_root": str(root)})
        eps = [*r["episodes"], *out["episodes"]]
        settled = settle(srv, str(root))
        assert eps and all(e["outcome"] == "written" for e in settled), settled
        stored = "\n".join(
            _strings(
                [srv.call("squirrel/episodes/get", {"episode_id": e["episode_id"]}) for e in eps]
            )
        )
        memories = json.dumps(srv.call("squirrel/memories/list", {"project_root": str(root)}))
        assert "[REDACTED:" in memories
    wire = b"".join(r["raw"] for r in provider.requests)
    assert len(provider.requests) == len(eps)
    disk = b"".join(
        p.read_bytes() for p in db_path.parent.iterdir() if p.name.startswith(db_path.name)
    )
    leaks = [
        s
        for s in every_secret
        if s.encode() in disk or s.encode() in wire or s in stored or s in memories
    ]
    assert leaks == []
    # ordinary text stays readable (paths, hashes, code) in what is stored
    kept = [k for _t, keep in BENIGN for k in keep]
    lost = [k for k in kept if k not in stored]
    assert lost == []


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def test_configuration_never_shows_or_logs_a_secret(tmp_path, provider):
    key = "sk-live-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c"
    url = provider.url.replace("://", "://admin:hunter2-secret-pass@") + "?api_key=qs-secret-123"
    env = {
        **provider_env(provider, "openai"),
        "REOS_MEMORY_LLM_BASE_URL": url,
        "REOS_MEMORY_LLM_API_KEY_ENV": "TEST_LLM_KEY",
        "TEST_LLM_KEY": key,
        "REOS_MEMORY_LOG_LEVEL": "debug",
    }
    with Server(tmp_path / "m.db", env=env) as srv:
        status = srv.call("squirrel/status", {})
        shown = json.dumps(status)
        assert status["writer_config"]["api_key_set"] is True
        assert status["writer_config"]["base_url"].startswith("http://127.0.0.1")
        stats = json.dumps(srv.call("memory/stats"))
    log = srv.stderr()
    for secret in (key, "hunter2-secret-pass", "qs-secret-123"):
        assert secret not in shown and secret not in stats and secret not in log
