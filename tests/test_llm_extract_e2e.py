"""memory/extract with an LLM provider: a local HTTP server stands in for OpenAI / Anthropic."""

from __future__ import annotations

import json

import pytest

from harness.rpc_client import Server
from tests.conftest import make_block
from tests.fake_llm import FakeProvider, provider_env

pytestmark = pytest.mark.e2e


def env(provider: FakeProvider, kind: str = "openai") -> dict[str, str]:
    return provider_env(provider, kind)


def blocks(srv):
    make_block(srv, "The ingest worker crashes when the queue is empty", id="crash")
    make_block(srv, "Queue depth alerts fire at 10,000 messages", id="alerts")
    return make_block(srv, "Restart the ingest worker and check the queue", id="chain")


def test_openai_compatible_extraction_with_retry(provider, db_path):
    reply = {
        "relationships": [
            {
                "target_id": "crash",
                "type": "elaborates",
                "confidence": 0.97,
                "reason": "same worker",
            },
            {
                "target_id": "ghost",
                "type": "supports",
                "confidence": 0.9,
            },  # not a candidate: ignored
        ]
    }
    provider.replies = [(503, ""), (200, provider.openai(json.dumps(reply)))]
    with Server(db_path, env=env(provider)) as srv:
        chain = blocks(srv)
        res = srv.call(
            "memory/extract",
            {
                "block_id": chain,
                "content": "Restart the ingest worker and check the queue",
                "use_llm": True,
            },
        )
        assert res["llm_used"] is True and res["llm_error"] is None
        got = {
            (r["target_block_id"], r["relationship_type"]): r for r in res["relationships_created"]
        }
        assert got[("crash", "elaborates")]["confidence"] == 0.9  # capped
        assert got[("crash", "elaborates")]["source"] == "inferred"
        assert not any(t == "ghost" for t, _ in got)
    assert len(provider.requests) == 2  # one retry after the 503
    req = provider.requests[-1]
    assert req["path"] == "/v1/chat/completions"
    assert req["headers"]["authorization"] == "Bearer sk-test-123"
    assert req["body"]["model"] == "test-model" and req["body"]["response_format"] == {
        "type": "json_object"
    }
    prompt = req["body"]["messages"][1]["content"]
    assert "- crash: The ingest worker crashes" in prompt and "- chain:" not in prompt


def test_anthropic_provider(provider, db_path):
    reply = {"relationships": [{"target_id": "alerts", "type": "related_to", "confidence": 0.6}]}
    provider.replies = [(200, provider.anthropic("```json\n" + json.dumps(reply) + "\n```"))]
    with Server(db_path, env=env(provider, "anthropic")) as srv:
        chain = blocks(srv)
        res = srv.call(
            "memory/extract", {"block_id": chain, "content": "queue alerts", "use_llm": True}
        )
        assert res["llm_used"] and ("alerts", "related_to") in {
            (r["target_block_id"], r["relationship_type"]) for r in res["relationships_created"]
        }
    req = provider.requests[0]
    assert req["path"] == "/v1/messages" and req["headers"]["x-api-key"] == "sk-test-123"
    assert req["headers"]["anthropic-version"] and req["body"]["system"].startswith(
        "You find typed relationships"
    )


def test_failures_are_reported_and_rule_based_edges_still_stored(provider, db_path):
    provider.replies = [(503, "")] * 3 + [(200, provider.openai("sorry, I cannot do JSON"))]
    with Server(db_path, env=env(provider)) as srv:
        chain = blocks(srv)
        res = srv.call(
            "memory/extract", {"block_id": chain, "content": "see @crash", "use_llm": True}
        )
        assert res["llm_used"] is False and "3 attempts" in res["llm_error"]
        assert [
            (r["target_block_id"], r["relationship_type"]) for r in res["relationships_created"]
        ] == [("crash", "references")]
        res = srv.call(
            "memory/extract", {"block_id": chain, "content": "see @alerts", "use_llm": True}
        )
        assert "not the requested JSON" in res["llm_error"] and res["count"] == 1
        assert "sk-test-123" not in srv.stderr()
    assert len(provider.requests) == 4


def test_llm_is_never_called_unless_asked(provider, db_path):
    with Server(db_path, env=env(provider)) as srv:
        chain = blocks(srv)
        res = srv.call(
            "memory/extract", {"block_id": chain, "content": "Restart the ingest worker"}
        )
        assert res["llm_used"] is False and res["llm_error"] is None
    assert provider.requests == []
    with Server(db_path) as srv:  # no provider configured
        err = srv.error("memory/extract", {"block_id": "chain", "content": "x", "use_llm": True})
        assert err.code == -32602 and err.data["field"] == "$.use_llm"


def test_a_hanging_llm_holds_no_write_and_costs_one_request_its_budget(provider, db_path):
    import time

    from tests.fake_llm import HANG

    provider.replies = [(200, HANG)] * 3
    timeouts = {"REOS_MEMORY_LLM_TIMEOUT_S": "1", "REOS_MEMORY_LLM_MAX_RETRIES": "2"}
    with Server(db_path, env={**env(provider), **timeouts}) as srv:
        chain = blocks(srv)
        t0 = time.monotonic()
        content = "Restart the ingest worker and check the queue"
        slow = srv.request(
            "memory/extract", {"block_id": chain, "content": content, "use_llm": True}
        )
        time.sleep(0.2)  # the extract is waiting on the LLM now
        make_block(srv, "written while the LLM hangs", id="meanwhile")
        wrote = time.monotonic() - t0
        found = srv.call("blocks/get", {"block_id": "meanwhile"})
        assert found["block"]["id"] == "meanwhile"
        reply = srv.response(slow, timeout=30)
        took = time.monotonic() - t0
    assert wrote < 1.0  # not behind the LLM's 3 x 1 s
    assert len(provider.requests) == 3 and took < 3 * 1 + 2 + 4  # timeout x attempts + backoff
    assert "result" in reply and reply["result"]["llm_error"]
