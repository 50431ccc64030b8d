"""The isolation matrix of the team server (issue 21), over real HTTP: for every registered
method, a key of org B cannot read, list, search, update, deprecate, forget, share or audit
anything of org A — by id, by key lookup or by search — and a team key cannot reach another team
of its org; reader keys cannot write. A method without a row here fails the test, so a new
method cannot ship without its isolation checked."""

from __future__ import annotations

import contextlib
import json
import os
import uuid
from collections.abc import Callable, Iterator
from typing import Any
from unittest import mock

import pytest

from reos_memory.interfaces.team_http.registry import registry
from reos_memory.team import admin, keys
from reos_memory.team.database import TeamDatabase, open_team_database
from tests.conftest import team_data_dir
from tests.team_fixtures import ACTOR, Server
from tests.team_fixtures import start_server as _start

pytestmark = pytest.mark.e2e

SECRET_WORD = "zanzibarquux"  # in org A's memories only: a search that finds it has leaked


class World:
    """Org A (teams backend and web) holding memories, a share, a context and audit rows; org B
    with keys of every role; the ids of A's objects."""

    def __init__(self, db: TeamDatabase) -> None:
        new = admin.create_key
        with db.connect() as conn:
            self.a = admin.create_org(conn, ACTOR, "iso-a").id
            self.b = admin.create_org(conn, ACTOR, "iso-b").id
            self.backend = admin.create_team(conn, ACTOR, "iso-a", "backend").id
            self.web = admin.create_team(conn, ACTOR, "iso-a", "web").id
            admin.create_team(conn, ACTOR, "iso-b", "backend")
            self.a_admin = new(conn, ACTOR, org="iso-a", role="admin")[0]
            self.backend_writer = new(conn, ACTOR, org="iso-a", team="backend", role="writer")[0]
            self.web_admin = new(conn, ACTOR, org="iso-a", team="web", role="admin")[0].key
            self.web_reader = new(conn, ACTOR, org="iso-a", team="web", role="reader")[0].key
            self.b_admin = new(conn, ACTOR, org="iso-b", role="admin")[0].key
            self.b_writer = new(conn, ACTOR, org="iso-b", role="writer")[0].key
            self.b_team_admin = new(conn, ACTOR, org="iso-b", team="backend", role="admin")[0].key

    def seed(self, server: Server) -> None:
        w = self.backend_writer.key
        add = "squirrel/memories/add"
        self.mem = server.result(w, add, {
            "project_id": "iso-proj", "kind": "invariant", "key": "project.deploy_cmd",
            "text": f"Deploy with make ship {SECRET_WORD}",
        })["memory"]["id"]  # fmt: skip
        self.org_mem = server.result(self.a_admin.key, add, {
            "project_id": "iso-proj", "kind": "guard", "tier": "emergency", "polarity": -1,
            "owner_type": "org", "text": f"Never drop the {SECRET_WORD} table",
        })["memory"]["id"]  # fmt: skip
        self.share = server.result(w, "team/shares/propose", {
            "project_id": "iso-proj", "kind": "note", "text": f"Share {SECRET_WORD}",
        })["share"]["id"]  # fmt: skip
        self.context = server.result(w, "squirrel/get_task_context", {
            "project_id": "iso-proj", "task": f"deploy {SECRET_WORD}",
        })["context_id"]  # fmt: skip
        assert self.mem in server.result(w, "squirrel/get_task_context", {
            "project_id": "iso-proj", "task": f"deploy {SECRET_WORD}"})["memory_ids"]  # fmt: skip
        self.member = server.result(self.a_admin.key, "team/members/add", {
            "name": f"ada {SECRET_WORD}", "team": "backend"})["member_id"]  # fmt: skip
        self.episode = server.result(w, "squirrel/ingest_episode", {
            "project_id": "iso-proj", "episode_id": f"iso-{SECRET_WORD}",
            "events": [{"role": "user", "kind": "message",
                        "text": f"Never use npm here, always use pnpm {SECRET_WORD}."}],
        })["episode_id"]  # fmt: skip

    @property
    def outsiders(self) -> list[str]:
        """Keys that must not reach A's backend objects: org B's, and A's web team's."""
        return [self.b_admin, self.b_writer, self.b_team_admin, self.web_admin]


@pytest.fixture(scope="module")
def world() -> Iterator[tuple[Server, World]]:
    with team_data_dir("team-isolation") as data_dir:
        db = open_team_database(None, data_dir)
        w = World(db)
        os.environ["REOS_MEMORY_EMBEDDER"] = "hash"
        try:
            srv = _start(data_dir)
        finally:
            del os.environ["REOS_MEMORY_EMBEDDER"]
        try:
            w.seed(srv)
            yield srv, w
        finally:
            if srv.proc.poll() is None:
                srv.stop()  # SIGTERM: a killed server keeps its hold on the embedded database
            db.close()


def not_found(server: Server, key: str, method: str, params: dict[str, Any]) -> None:
    err = server.error(key, method, params)
    assert err["code"] == -32004, (method, err)


def leaks(reply: Any, w: World) -> bool:
    if isinstance(reply, dict):  # a search echoes its query: that is the caller's own text
        reply = {k: v for k, v in reply.items() if k != "query"}
    text = json.dumps(reply)
    secrets = (w.mem, w.org_mem, w.share, w.context, w.episode, SECRET_WORD, w.a)
    return any(x in text for x in secrets)


def by_id(method: str, field: str, attr: str, **extra: Any) -> Callable[[Server, World], None]:
    def check(server: Server, w: World) -> None:
        for key in w.outsiders:
            if attr == "org_mem" and key == w.web_admin:
                continue  # an org memory is the whole org's, web team included
            not_found(server, key, method, {field: getattr(w, attr), **extra})

    return check


def reads(method: str, params: dict[str, Any]) -> Callable[[Server, World], None]:
    def check(server: Server, w: World) -> None:
        for key in (w.b_admin, w.b_writer, w.b_team_admin):
            reply = server.result(key, method, params)
            assert not leaks(reply, w), (method, reply)
        if method != "squirrel/status":
            web = server.result(w.web_admin, method, params)
            assert w.mem not in json.dumps(web) and w.share not in json.dumps(web), method

    return check


def writes_stay_home(server: Server, w: World) -> None:
    """Writing names another org's or team's owner: not found; B's own write lands in B."""
    base = {"project_id": "iso-proj", "kind": "note", "text": "x marks"}
    not_found(server, w.b_writer, "squirrel/memories/add",
              {**base, "owner_type": "org", "owner_id": w.a})  # fmt: skip
    not_found(server, w.b_writer, "squirrel/memories/add",
              {**base, "owner_type": "team", "owner_id": w.backend})  # fmt: skip
    not_found(server, w.web_admin, "squirrel/memories/add",
              {**base, "owner_type": "team", "owner_id": "backend"})  # fmt: skip
    mine = server.result(w.b_writer, "squirrel/memories/add", {**base, "owner_type": "org"})
    assert mine["memory"]["owner_id"] == w.b


def by_key_lookup(server: Server, w: World) -> None:
    """B holding the same key in the same project id sees only its own memory."""
    server.result(w.b_writer, "squirrel/memories/add", {
        "project_id": "iso-proj", "kind": "note", "key": "project.deploy_cmd", "owner_type": "org",
        "text": "B deploys with its own tool"})  # fmt: skip
    ctx = server.result(w.b_writer, "squirrel/get_task_context",
                        {"project_id": "iso-proj", "task": "deploy"})  # fmt: skip
    assert not leaks(ctx, w) and ctx["memory_ids"]


def ingest_stays_home(server: Server, w: World) -> None:
    ep = {"project_id": "iso-proj", "episode_id": f"e-{uuid.uuid4().hex}",
          "events": [{"role": "user", "kind": "message", "text": "Always use make ship."}]}  # fmt: skip
    not_found(server, w.b_writer, "squirrel/ingest_episode",
              {**ep, "owner_type": "team", "owner_id": w.backend})  # fmt: skip
    out = server.result(w.b_writer, "squirrel/ingest_episode", {**ep, "owner_type": "org"})
    assert not leaks(out, w)


def usage_stays_home(server: Server, w: World) -> None:
    for key in (w.b_writer, w.web_admin):
        out = server.result(key, "squirrel/usage/report", {
            "idempotency_key": f"u-{uuid.uuid4().hex}",
            "items": [{"memory_id": w.mem, "context_id": f"dlv_{uuid.uuid4().hex}",
                       "uses": 100}]})  # fmt: skip
        assert out == {"applied": 0, "unknown": [w.mem], "clipped": [], "not_received": []}
    got = server.result(w.a_admin.key, "squirrel/memories/get", {"memory_id": w.mem})
    assert got["metrics"]["use_count"] < 100


def cr_memory_stays_home(server: Server, w: World) -> None:
    for key in (w.b_writer, w.web_admin):
        out = server.result(key, "squirrel/cr_memory/run", {"dry_run": True})
        assert w.mem not in json.dumps(out)


def keys_stay_home(server: Server, w: World) -> None:
    for key in (w.b_admin, w.b_team_admin, w.web_admin):
        listed = server.result(key, "team/keys/list")
        assert w.backend_writer.key_id not in json.dumps(listed)
        not_found(server, key, "team/keys/revoke", {"key_id": w.backend_writer.key_id})


def episodes_stay_home(server: Server, w: World) -> None:
    for key in w.outsiders:
        listed = server.result(key, "squirrel/episodes/list", {"limit": 500})
        assert w.episode not in json.dumps(listed) and SECRET_WORD not in json.dumps(listed)
        not_found(server, key, "squirrel/episodes/get", {"episode_id": w.episode})
    mine = server.result(w.backend_writer.key, "squirrel/episodes/get", {"episode_id": w.episode})
    assert SECRET_WORD in json.dumps(mine["episode"]["events"])


def activity_stays_home(server: Server, w: World) -> None:
    """Each key's activity counts only the memories it reaches."""
    for key in (w.b_admin, w.web_admin, w.a_admin.key):
        act = server.result(key, "squirrel/activity", {"days": 1})
        listed = server.result(key, "squirrel/memories/list", {
            "statuses": ["provisional", "active", "deprecated"], "limit": 1000,
        })["memories"]  # fmt: skip
        today = act["days"][-1]["day"]
        made = [m for m in listed if m["created_at"].startswith(today)]
        assert sum(act["days"][-1]["memories"].values()) == len(made), key


def new_keys_stay_home(server: Server, w: World) -> None:
    """Org B's admins make keys of org B only: A's team names are B's (or unknown) to them, and
    a key made there reaches nothing of A; a team admin of A's web makes web keys only."""
    for key in (w.b_admin, w.b_team_admin):
        made = server.result(key, "team/keys/create", {"role": "reader", "team": "backend"})
        me = server.result(made["key"], "team/whoami")
        assert me["org_id"] == w.b and me["team_id"] != w.backend
        assert w.mem not in json.dumps(server.result(made["key"], "squirrel/memories/list", {}))
    err = server.error(w.web_admin, "team/keys/create", {"role": "admin", "team": "backend"})
    assert err["code"] == -32602 and "own team" in err["message"]
    err = server.error(w.web_admin, "team/keys/create", {"role": "admin", "team": w.backend})
    assert err["code"] == -32602
    web = server.result(w.web_admin, "team/keys/create", {"role": "writer"})
    assert server.result(web["key"], "team/whoami")["team_id"] == w.web


def members_stay_home(server: Server, w: World) -> None:
    """A's backend member: not listed, not removable and not joinable from org B or A's web
    team (a team admin reaches its own team's members only)."""
    for key in (w.b_admin, w.b_team_admin, w.web_admin):
        listed = server.result(key, "team/members/list")
        assert w.member not in json.dumps(listed) and not leaks(listed, w), key
        not_found(server, key, "team/members/remove", {"member_id": w.member})
    for key, team in ((w.b_admin, w.backend), (w.web_admin, "backend"), (w.web_admin, w.backend)):
        not_found(server, key, "team/members/add", {"name": "intruder", "team": team})
    listed = server.result(w.a_admin.key, "team/members/list")["members"]
    assert {m["member_id"]: m["status"] for m in listed}[w.member] == "active"


def audit_stays_home(server: Server, w: World) -> None:
    page = server.result(w.b_admin, "team/audit/list", {"limit": 500})
    assert not leaks(page, w)
    for key, team in ((w.b_admin, w.backend), (w.web_admin, w.backend)):
        not_found(server, key, "team/audit/list", {"team_id": team})
    web = server.result(w.web_admin, "team/audit/list", {"limit": 500})
    assert not leaks(web, w) and w.member not in json.dumps(web)


def whoami_is_the_key(server: Server, w: World) -> None:
    assert server.result(w.b_writer, "team/whoami")["org_id"] == w.b


def discover_is_public_schema(server: Server, w: World) -> None:
    assert not leaks(server.result(w.b_writer, "rpc.discover"), w)


def policy_is_the_servers(server: Server, w: World) -> None:
    assert not leaks(server.result(w.b_writer, "squirrel/policy/get"), w)


def forget_stays_home(server: Server, w: World) -> None:
    for key in (w.b_writer, w.b_admin, w.web_admin):
        out = server.result(key, "squirrel/memories/forget", {"memory_id": w.mem})
        assert out["forgotten"] is False, key


def propose_stays_home(server: Server, w: World) -> None:
    params = {"kind": "note", "text": "t", "project_id": "p", "owner_type": "team"}
    not_found(server, w.b_writer, "team/shares/propose", {**params, "owner_id": w.backend})
    not_found(server, w.web_admin, "team/shares/propose", {**params, "owner_id": "backend"})


MATRIX: dict[str, list[Callable[[Server, World], None]]] = {
    "squirrel/memories/get": [
        by_id("squirrel/memories/get", "memory_id", "mem"),
        by_id("squirrel/memories/get", "memory_id", "org_mem"),
    ],
    "squirrel/memories/update": [by_id("squirrel/memories/update", "memory_id", "mem", text="x")],
    "squirrel/memories/deprecate": [by_id("squirrel/memories/deprecate", "memory_id", "mem")],
    "squirrel/memories/forget": [forget_stays_home],
    "squirrel/memories/add": [writes_stay_home],
    "squirrel/memories/list": [reads("squirrel/memories/list", {"limit": 1000})],
    "squirrel/search": [reads("squirrel/search", {"query": SECRET_WORD})],
    "squirrel/get_task_context": [
        reads("squirrel/get_task_context", {"project_id": "iso-proj", "task": SECRET_WORD}),
        by_key_lookup,
    ],
    "squirrel/changes/pull": [reads("squirrel/changes/pull", {"limit": 1000})],
    "squirrel/status": [reads("squirrel/status", {})],
    "squirrel/feedback": [by_id("squirrel/feedback", "context_id", "context", errors=0, retries=0)],
    "squirrel/usage/report": [usage_stays_home],
    "squirrel/cr_memory/run": [cr_memory_stays_home],
    "squirrel/ingest_episode": [ingest_stays_home],
    "squirrel/policy/get": [policy_is_the_servers],
    "team/shares/propose": [propose_stays_home],
    "team/shares/list": [reads("team/shares/list", {"status": None})],
    "team/shares/approve": [by_id("team/shares/approve", "share_id", "share")],
    "team/shares/reject": [by_id("team/shares/reject", "share_id", "share")],
    "team/keys/list": [keys_stay_home],
    "team/keys/revoke": [keys_stay_home],
    "team/keys/create": [new_keys_stay_home],
    "squirrel/episodes/list": [episodes_stay_home],
    "squirrel/episodes/get": [episodes_stay_home],
    "squirrel/activity": [activity_stays_home],
    "team/audit/list": [audit_stays_home],
    "team/members/list": [members_stay_home],
    "team/members/add": [members_stay_home],
    "team/members/remove": [members_stay_home],
    "team/whoami": [whoami_is_the_key],
    "rpc.discover": [discover_is_public_schema],
}

READER_WRITES = {
    "squirrel/memories/add": {"project_id": "p", "kind": "note", "text": "t"},
    "squirrel/memories/update": {"memory_id": "x", "text": "t"},
    "squirrel/memories/deprecate": {"memory_id": "x"},
    "squirrel/memories/forget": {"memory_id": "x"},
    "squirrel/ingest_episode": {"project_id": "p", "episode_id": "e",
                                "events": [{"role": "user", "kind": "message", "text": "t"}]},
    "squirrel/cr_memory/run": {},
    "team/shares/approve": {"share_id": "x"},
    "team/shares/reject": {"share_id": "x"},
    "team/keys/revoke": {"key_id": "x"},
    "team/keys/create": {"role": "reader"},
    "team/members/add": {"name": "x"},
    "team/members/remove": {"member_id": "x"},
}  # fmt: skip


def test_every_registered_method_has_its_isolation_row():
    assert set(MATRIX) == set(registry.methods), "add the new method's row to MATRIX"


@pytest.mark.parametrize("method", sorted(MATRIX))
def test_no_key_reaches_another_tenant_through(method, world):
    server, w = world
    for check in MATRIX[method]:
        check(server, w)
    # A's objects are all still there and unchanged
    got = server.result(w.a_admin.key, "squirrel/memories/get", {"memory_id": w.mem})
    assert got["memory"]["status"] == "provisional" and got["memory"]["version"] == 1
    share = server.result(w.a_admin.key, "team/shares/list", {"status": "pending"})["shares"]
    assert w.share in {s["id"] for s in share}


@pytest.mark.parametrize("method", sorted(READER_WRITES))
def test_a_reader_key_cannot_write_through(method, world):
    server, w = world
    err = server.error(w.web_reader, method, READER_WRITES[method])
    assert err["code"] == -32003, (method, err)
    assert err["data"]["role"] in ("writer", "admin")


def test_a_tampered_unknown_or_right_key_costs_one_equal_length_comparison():
    """The hash comparison runs once, on equal-length digests, whether the key id exists, the
    secret is wrong or the key is right: the time taken does not say which part was wrong."""
    new = keys.new_key()
    key_id, secret = keys.parse_key(new.key)
    from datetime import UTC, datetime

    from reos_memory.store.team.tenancy import ApiKeyRow

    row = ApiKeyRow(
        org_id="o", key_id=key_id, team_id=None, role="reader", name="", prefix=new.prefix,
        hash=keys.hash_secret(key_id, secret), created_at=datetime.now(UTC), expires_at=None,
        revoked_at=None,
    )  # fmt: skip
    tampered = secret[:-1] + ("A" if secret[-1] != "A" else "B")
    for stored, presented in ((None, secret), (row, tampered), (row, secret)):
        spy = mock.patch.object(keys.hmac, "compare_digest", wraps=keys.hmac.compare_digest)
        with spy as cd, contextlib.suppress(keys.KeyRefused):
            keys.check_key(stored, key_id, presented, datetime.now(UTC))
        assert cd.call_count == 1
        a, b = cd.call_args.args
        assert len(a) == len(b) == 64
