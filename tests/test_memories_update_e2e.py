"""`squirrel/memories/update` over real stdio: every editable field, what is refused (with which
error and field, leaving the memory as it was), and what an edit does to get, list, search and
get_task_context afterwards; evidence and metrics are kept."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.rpc_client import Server
from tests.test_squirrel_e2e import make_repo

pytestmark = pytest.mark.e2e

OLD = "Deploys go through the staging cluster first."
NEW = "Releases ship from the blue cluster on Tuesdays."


def _add(srv: Server, root: Path, text: str, **kw: object) -> dict:
    return srv.call(
        "squirrel/memories/add", {"project_root": str(root), "kind": "note", "text": text, **kw}
    )["memory"]


def _update(srv: Server, memory_id: str, **changes: object) -> dict:
    return srv.call("squirrel/memories/update", {"memory_id": memory_id, **changes})["memory"]


def _listed(srv: Server, root: Path, **kw: object) -> list[str]:
    out = srv.call("squirrel/memories/list", {"project_root": str(root), **kw})
    return [m["id"] for m in out["memories"]]


def _found(srv: Server, root: Path, query: str) -> list[str]:
    out = srv.call("squirrel/search", {"project_root": str(root), "query": query})
    return [m["id"] for m in out["matches"]]


def _context(srv: Server, root: Path, task: str) -> dict:
    return srv.call("squirrel/get_task_context", {"project_root": str(root), "task": task})


def test_every_field_is_edited_and_reads_see_the_edit(tmp_path):
    shop = make_repo(tmp_path / "shop")
    with Server(tmp_path / "m.db") as srv:
        srv.wait_ready()
        a = _add(srv, shop, OLD, key="project.deploy")
        _add(srv, shop, "Tests run with pytest -x.", key="project.tests")
        before = srv.call("squirrel/memories/get", {"memory_id": a["id"]})
        assert a["id"] in _found(srv, shop, "staging cluster")

        # text: stored whitespace-normalised, found by its new words only, in the context too
        m = _update(srv, a["id"], text=f"  {NEW}\n")
        assert m["text"] == NEW and m["updated_at"] >= a["updated_at"]
        assert a["id"] in _found(srv, shop, "blue cluster Tuesdays")
        assert a["id"] not in _found(srv, shop, "staging")
        ctx = _context(srv, shop, "ship the release from the blue cluster")
        assert a["id"] in ctx["memory_ids"] and NEW in ctx["context_prompt"]
        assert OLD not in ctx["context_prompt"]

        # kind, tier, polarity, confidence, ttl: each as sent; the rest untouched
        m = _update(srv, a["id"], kind="guard", tier="long_term", polarity=-1, confidence=0.9)
        assert (m["kind"], m["tier"], m["polarity"], m["confidence"]) == (
            "guard",
            "long_term",
            -1,
            0.9,
        )
        assert m["text"] == NEW and m["key"] == "project.deploy"
        assert m["status"] == "provisional" and m["expires_at"] is None
        assert _listed(srv, shop, kinds=["guard"]) == [a["id"]]
        m = _update(srv, a["id"], ttl_days=5)
        assert m["expires_at"] is not None and m["expires_at"] > m["updated_at"]
        assert _update(srv, a["id"], clear_ttl=True)["expires_at"] is None

        # key: a new slot, then none
        assert _update(srv, a["id"], key="project.release")["key"] == "project.release"
        assert a["id"] in _listed(srv, shop, key_prefix="project.release")
        assert _update(srv, a["id"], clear_key=True)["key"] is None
        assert a["id"] not in _listed(srv, shop, key_prefix="project.")

        # status: deprecated leaves every read but get (history kept); active brings it back
        assert _update(srv, a["id"], status="deprecated")["status"] == "deprecated"
        assert a["id"] not in _listed(srv, shop)
        assert a["id"] in _listed(srv, shop, statuses=["deprecated"])
        assert a["id"] not in _found(srv, shop, "blue cluster Tuesdays")
        ctx = _context(srv, shop, "ship the release from the blue cluster")
        assert a["id"] not in ctx["memory_ids"]
        assert _update(srv, a["id"], status="active")["status"] == "active"
        assert a["id"] in _listed(srv, shop)
        assert (
            a["id"] in _context(srv, shop, "ship the release from the blue cluster")["memory_ids"]
        )

        # an empty edit changes nothing; the evidence and the metrics stayed with the memory
        after = srv.call("squirrel/memories/get", {"memory_id": a["id"]})
        assert _update(srv, a["id"]) == after["memory"]
        assert after["evidence"] == before["evidence"]
        assert after["metrics"]["use_count"] >= 2  # the contexts above counted their uses


def test_refused_edits_name_the_field_and_change_nothing(tmp_path):
    shop = make_repo(tmp_path / "shop")
    with Server(tmp_path / "m.db") as srv:
        srv.wait_ready()
        a = _add(srv, shop, OLD, key="project.deploy")
        b = _add(srv, shop, "Tests run with pytest -x.", key="project.tests")
        gone = _add(srv, shop, "Deploy with the old script.", key="project.script")
        _update(srv, gone["id"], status="deprecated")
        _add(srv, shop, "Deploy with make deploy.", key="project.script")
        held = srv.call("squirrel/memories/get", {"memory_id": a["id"]})

        refused = [
            ({"memory_id": "mem-nope"}, -32004, "$.memory_id"),
            ({"text": " \n\t "}, -32602, "$.text"),
            ({"text": "x" * 2001}, -32602, "$.text"),
            ({"kind": "habit"}, -32602, "$.kind"),
            ({"tier": "forever"}, -32602, "$.tier"),
            ({"status": "archived"}, -32602, "$.status"),
            ({"confidence": 1.5}, -32602, "$.confidence"),
            ({"polarity": 0}, -32602, "$.polarity"),
            ({"ttl_days": 0}, -32602, "$.ttl_days"),
            ({"key": "Not A Key"}, -32602, "$.key"),
            ({"scope": "global"}, -32602, "$.scope"),  # scope and project are not editable
            ({"key": "project.other", "clear_key": True}, -32602, "$.clear_key"),
            ({"ttl_days": 3, "clear_ttl": True}, -32602, "$.clear_ttl"),
            ({"key": "project.tests"}, -32009, "$.key"),  # held by b
        ]
        for change, code, field in refused:
            params = {"memory_id": a["id"], **change}
            err = srv.error("squirrel/memories/update", params)
            assert (err.code, err.data.get("field")) == (code, field), change
        err = srv.error("squirrel/memories/update", {"memory_id": a["id"], "key": "project.tests"})
        assert err.data["existing_id"] == b["id"] and err.data["reason"] == "conflict"
        assert srv.call("squirrel/memories/get", {"memory_id": a["id"]}) == held

        # reviving a deprecated memory whose key another live memory took is the same conflict
        err = srv.error("squirrel/memories/update", {"memory_id": gone["id"], "status": "active"})
        assert (err.code, err.data["field"]) == (-32009, "$.status")
        got = srv.call("squirrel/memories/get", {"memory_id": gone["id"]})["memory"]
        assert got["status"] == "deprecated"
        # ... unless it comes back without the key
        m = _update(srv, gone["id"], status="active", clear_key=True)
        assert (m["status"], m["key"]) == ("active", None)
        # a key nobody holds, or the memory's own, is fine
        assert _update(srv, a["id"], key="project.deploy")["key"] == "project.deploy"
        assert _update(srv, b["id"], key="project.testing")["key"] == "project.testing"
        assert _update(srv, a["id"], key="project.tests")["key"] == "project.tests"
