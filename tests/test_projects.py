"""A project is a repository: every worktree and every clone of one origin share its memories;
projects of the old path-based ids merge into it without losing a memory."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import apsw
import pytest

from harness.agent_homes import ClaudeSession
from reos_memory.errors import InvalidInput
from reos_memory.squirrel.projects import (
    normalize_remote,
    origin_url,
    project_for_root,
    resolve_project,
)
from reos_memory.store import Database
from reos_memory.store.migrations import load_migrations, migrate

GIT_ENV = {
    **os.environ,
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.org",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.org",
}


def git(cwd: Path, *args: str) -> str:
    r = subprocess.run(
        ["git", *args], cwd=cwd, env=GIT_ENV, capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def new_repo(path: Path) -> Path:
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "commit", "-q", "--allow-empty", "-m", "init")
    return path


@pytest.fixture
def repo(tmp_path: Path) -> dict[str, Path]:
    """A repository with two linked worktrees, made by git itself."""
    main = new_repo(tmp_path / "main")
    git(main, "worktree", "add", "-q", "-b", "a", str(tmp_path / "wt-a"))
    git(main, "worktree", "add", "-q", "-b", "b", str(tmp_path / "wt-b"))
    for d in ("main", "wt-a", "wt-b"):
        (tmp_path / d / "src" / "api").mkdir(parents=True)
    return {"main": main, "a": tmp_path / "wt-a", "b": tmp_path / "wt-b"}


def legacy_id(top: Path) -> str:
    """The id a checkout had before project identities: by its path alone."""
    return f"{top.name}-{hashlib.sha256(str(top).encode()).hexdigest()[:12]}"


# -- identity -----------------------------------------------------------------------------------


def test_worktrees_of_one_repository_are_one_project(repo, tmp_path):
    main = project_for_root(str(repo["main"]))
    a = project_for_root(str(repo["a"] / "src" / "api"))
    b = project_for_root(str(repo["b"]))
    assert main.id == a.id == b.id
    assert (main.root, a.root, b.root) == tuple(str(repo[k]) for k in ("main", "a", "b"))
    common = os.path.realpath(repo["b"] / git(repo["b"], "rev-parse", "--git-common-dir"))
    assert b.identity == "git-dir:" + common  # what git itself says, read without git
    assert main.id.startswith("main-")
    other = project_for_root(str(new_repo(tmp_path / "other")))
    assert other.id != main.id
    plain = tmp_path / "plain"
    plain.mkdir()
    assert project_for_root(str(plain)).id == legacy_id(plain)  # outside git: as before
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / ".git").write_text("gitdir: /nowhere/at/all\n")
    assert project_for_root(str(broken)).id == legacy_id(broken)


def test_clones_of_one_origin_are_one_project_and_no_credential_is_kept(tmp_path):
    token = "ghp_Zq8XwV2mN5tLr7Kp3Hs9Yc1Bd4Fg6Jk0Qe2W"
    one, two = new_repo(tmp_path / "one"), new_repo(tmp_path / "two")
    git(one, "remote", "add", "origin", f"https://alice:{token}@GitHub.com:443/Acme/Shop.git")
    git(two, "remote", "add", "origin", "git@github.com:Acme/Shop")
    p1, p2 = project_for_root(str(one)), project_for_root(str(two))
    assert p1.id == p2.id and p1.id.startswith("Shop-")
    assert p1.identity == "git-remote:github.com/Acme/Shop"
    assert token not in repr(p1) and "alice" not in repr(p1)
    # clones of a repository on this machine: of a bare one, and of a checkout (which joins
    # the project of that checkout and its worktrees)
    central = tmp_path / "central.git"
    git(tmp_path, "init", "-q", "--bare", str(central))
    git(tmp_path, "clone", "-q", str(central), str(tmp_path / "c1"))
    git(tmp_path, "clone", "-q", f"file://{central}", str(tmp_path / "c2"))
    c1, c2 = project_for_root(str(tmp_path / "c1")), project_for_root(str(tmp_path / "c2"))
    assert c1.id == c2.id and c1.id.startswith("central-")
    git(tmp_path, "clone", "-q", str(one), str(tmp_path / "c3"))
    assert project_for_root(str(tmp_path / "c3")).id == p1.id
    solo = new_repo(tmp_path / "solo")
    git(tmp_path, "clone", "-q", str(solo), str(tmp_path / "c4"))
    assert project_for_root(str(tmp_path / "c4")).id == project_for_root(str(solo)).id


@pytest.mark.parametrize(
    ("url", "key"),
    [
        ("git@github.com:Acme/Shop.git", "github.com/Acme/Shop"),
        ("https://github.com/Acme/Shop", "github.com/Acme/Shop"),
        ("https://bob:s3cr3t@GITHUB.COM:8443/Acme/Shop.git/", "github.com/Acme/Shop"),
        ("ssh://git@github.com:22/Acme/Shop.git", "github.com/Acme/Shop"),
        ("git+ssh://git@github.com/Acme/Shop", "github.com/Acme/Shop"),
        ("https://github.com/Acme/Shop.git?token=abc#frag", "github.com/Acme/Shop"),
        (
            "https://gitlab.example.org/group/sub/My%20Repo.git",
            "gitlab.example.org/group/sub/My Repo",
        ),
        ("host.example:~user/repo.git", "host.example/~user/repo"),
        ("/srv/git/shop.git", "file:/srv/git/shop"),
        ("file:///srv/git/shop.git/", "file:/srv/git/shop"),
        ("/srv/git/shop/.git", "file:/srv/git/shop"),
    ],
)
def test_remote_urls_are_normalised(url, key):
    got = normalize_remote(url, Path("/work/checkout"))
    assert got is not None and got[0] == key
    assert "s3cr3t" not in got[0] and "bob" not in got[0] and "abc" not in got[0]


def test_the_origin_is_read_from_the_config_as_git_reads_it(tmp_path):
    r = new_repo(tmp_path / "r")
    config = r / ".git" / "config"
    base = config.read_text()
    cases = [
        '[remote "upstream"]\n\turl = https://example.org/up.git\n'
        '[Remote "origin"]\n\tURL = "https://example.org/a b.git" ; a comment\n'
        "\turl = https://example.org/second.git\n",
        '[remote "origin"]\n# url = https://example.org/commented.git\n'
        "\turl = git@example.org:team/\\\n  repo.git\n",
    ]
    for extra in cases:
        config.write_text(base + extra)
        assert (
            origin_url(r / ".git")
            == git(r, "config", "--get-all", "remote.origin.url").splitlines()[0]
        )
    config.write_text(base)
    assert origin_url(r / ".git") is None


def test_bad_project_roots_are_refused_by_name(tmp_path):
    for bad in ("", "relative/dir", "/tmp/\x00x"):
        with pytest.raises(InvalidInput, match="project_root"):
            project_for_root(bad)


# -- the old path-based ids, migrated ----------------------------------------------------------


def old_database(path: Path, repo: dict[str, Path], tmp_path: Path) -> dict[str, str]:
    """A database at the schema before project identities, with what two worktrees and the
    main checkout of one repository learned under their path ids, and an unrelated project."""
    db = Database(str(path))
    before = [m for m in load_migrations() if m.version < 9]
    migrate(db, before)
    plain = tmp_path / "plain"
    plain.mkdir(exist_ok=True)
    ids = {k: legacy_id(repo[k]) for k in ("main", "a", "b")} | {"plain": legacy_id(plain)}
    roots = {**{k: str(repo[k]) for k in ("main", "a", "b")}, "plain": str(plain)}
    conn = db.conn()

    def mem(
        mid,
        pid,
        text,
        *,
        key=None,
        updated="2026-01-01T00:00:00Z",
        scope="project",
        prefix=None,
        status="active",
    ):
        conn.execute(
            "INSERT INTO memories(id, project_id, scope, owner_type, owner_id, kind, tier, key,"
            " text, status, confidence, created_at, updated_at, polarity, path_prefix)"
            " VALUES (?, ?, ?, 'user', 'dev', 'invariant', 'long_term', ?, ?, ?, 0.8,"
            " '2026-01-01T00:00:00Z', ?, 1, ?)",
            (mid, pid, scope, key, text, status, updated, prefix),
        )
        conn.execute(
            "INSERT INTO evidence(id, memory_id, episode_id, source, frustration, created_at)"
            " VALUES (?, ?, ?, 'explicit_statement', 'none', '2026-01-01T00:00:00Z')",
            ("evd-" + mid, mid, "ep-" + mid),
        )

    for k, pid in ids.items():
        conn.execute(
            "INSERT INTO projects(id, root, name, created_at, last_seen_at)"
            " VALUES (?, ?, ?, '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z')",
            (pid, roots[k], Path(roots[k]).name),
        )
        conn.execute(
            "INSERT INTO episodes(id, project_id, start_ts, end_ts, events_json, processed)"
            " VALUES (?, ?, 't0', 't1', '{\"events\": []}', 1)",
            ("ep-" + k, pid),
        )
        conn.execute(
            "INSERT INTO squirrel_sessions(session_id, project_id, owner_type, owner_id,"
            " started_at, last_event_at) VALUES (?, ?, 'user', 'dev', 't0', 't1')",
            ("sess-" + k, pid),
        )
        conn.execute(
            "INSERT INTO context_requests(context_id, project_id, owner_type, owner_id, task,"
            " created_at, budget_tokens, tokens) VALUES (?, ?, 'user', 'dev', 'x', 't', 400, 0)",
            ("ctx-" + k, pid),
        )
        conn.execute(
            "INSERT INTO project_baselines(project_id, outcomes, avg_errors, avg_retries,"
            " updated_at) VALUES (?, 2, ?, 0.0, 't')",
            (pid, {"main": 1.0, "a": 3.0, "b": 5.0, "plain": 9.0}[k]),
        )
    for mid, k, text, extra in (
        ("m-main", "main", "Migrations run with alembic upgrade head.", {}),
        (
            "m-a",
            "a",
            "The API client uses httpx, never requests.",
            {"scope": "repo_path", "prefix": "src/api"},
        ),
        ("m-b", "b", "Run the tests with make test-integration.", {}),
        # one key learned in two worktrees: the newer value must win, the older stay deprecated
        ("k-old", "a", "The package manager is npm.", {"key": "project.package_manager"}),
        (
            "k-new",
            "b",
            "The package manager is pnpm.",
            {"key": "project.package_manager", "updated": "2026-02-01T00:00:00Z"},
        ),
        # the same text learned twice: one stays, with both pieces of evidence
        ("d-main", "main", "Never push to main directly.", {}),
        ("d-b", "b", "never push to main directly.  ", {"status": "provisional"}),
        ("p-plain", "plain", "Plain folders keep their memories.", {}),
    ):
        mem(mid, ids[k], text, **extra)
    db.close()
    return ids


def test_the_migration_keeps_every_row_and_the_first_resolve_merges_worktrees(repo, tmp_path):
    path = tmp_path / "old.db"
    ids = old_database(path, repo, tmp_path)
    raw = apsw.Connection(str(path))
    snapshot = raw.execute("SELECT id, text, project_id FROM memories ORDER BY id").fetchall()
    raw.close()

    db = Database(str(path))
    assert migrate(db) == [m.version for m in load_migrations() if m.version >= 9]
    conn = db.conn()
    assert (
        conn.execute("SELECT id, text, project_id FROM memories ORDER BY id").fetchall() == snapshot
    )
    assert conn.execute("SELECT count(*) FROM projects WHERE identity IS NULL").fetchall() == [(4,)]

    merges: list[dict] = []
    proj = resolve_project(db, None, str(repo["b"] / "src"), on_merge=merges.append)
    assert proj is not None and proj.id == project_for_root(str(repo["main"])).id
    assert proj.root == str(repo["b"])
    assert {m["merged"] for m in merges} == {ids["main"], ids["a"], ids["b"]}
    rows = dict(conn.execute("SELECT id, project_id FROM memories").fetchall())
    assert len(rows) == len(snapshot)  # nothing deleted
    assert {mid for mid, pid in rows.items() if pid == proj.id} == {
        "m-main",
        "m-a",
        "m-b",
        "k-old",
        "k-new",
        "d-main",
        "d-b",
    }
    assert rows["p-plain"] == ids["plain"]  # a folder outside git keeps its id
    status = dict(conn.execute("SELECT id, status FROM memories").fetchall())
    assert status["k-new"] == "active" and status["k-old"] == "deprecated"
    assert status["d-main"] == "active" and status["d-b"] == "deprecated"
    assert {
        r[0] for r in conn.execute("SELECT episode_id FROM evidence WHERE memory_id = 'd-main'")
    } == {"ep-d-main", "ep-d-b"}
    for table in ("episodes", "squirrel_sessions", "context_requests"):
        pids = {r[0] for r in conn.execute(f"SELECT project_id FROM {table}")}
        assert pids == {proj.id, ids["plain"]}, table
    baselines = dict(
        (r[0], (r[1], r[2]))
        for r in conn.execute("SELECT project_id, outcomes, avg_errors FROM project_baselines")
    )
    assert baselines == {proj.id: (6, 3.0), ids["plain"]: (2, 9.0)}
    # an old id names the project it became; given beside a root of the same repository too
    for old in (ids["main"], ids["a"]):
        again = resolve_project(db, old, None)
        assert again is not None and again.id == proj.id
        assert resolve_project(db, old, str(repo["a"])).id == proj.id  # type: ignore[union-attr]
    with pytest.raises(InvalidInput, match="not both"):
        resolve_project(db, ids["plain"], str(repo["a"]))
    # nothing left to do: a resolve only reads
    changes = db.conn().total_changes()
    assert resolve_project(db, None, str(repo["a"])).id == proj.id  # type: ignore[union-attr]
    assert db.conn().total_changes() == changes
    db.close()


def test_a_removed_worktree_and_a_new_origin_still_merge(repo, tmp_path):
    """A worktree deleted without `git worktree prune` is still found through git's list; a
    repository that gets an origin keeps what it learned before."""
    path = tmp_path / "old.db"
    ids = old_database(path, repo, tmp_path)
    subprocess.run(["rm", "-rf", str(repo["a"])], check=True)
    db = Database(str(path))
    migrate(db)
    proj = resolve_project(db, None, str(repo["main"]))
    assert proj is not None
    conn = db.conn()
    assert conn.execute("SELECT project_id FROM memories WHERE id = 'm-a'").fetchall() == [
        (proj.id,)
    ]
    assert conn.execute(
        "SELECT merged_into FROM projects WHERE id = ?", (ids["a"],)
    ).fetchall() == [(proj.id,)]
    git(repo["main"], "remote", "add", "origin", "https://github.com/acme/shop.git")
    now = resolve_project(db, None, str(repo["b"]))
    assert (
        now is not None and now.id != proj.id and now.identity == "git-remote:github.com/acme/shop"
    )
    assert conn.execute(
        "SELECT count(*) FROM memories WHERE project_id = ?", (now.id,)
    ).fetchall() == [(7,)]
    assert resolve_project(db, ids["a"], None).id == now.id  # type: ignore[union-attr]
    # the origin removed again: the checkout is its own project once more (empty), and what it
    # learned stays with the origin's project, which other clones may use
    git(repo["main"], "remote", "remove", "origin")
    back = resolve_project(db, None, str(repo["main"] / "src"))
    assert back is not None and back.id == proj.id
    assert conn.execute("SELECT merged_into FROM projects WHERE id = ?", (proj.id,)).fetchall() == [
        (None,)
    ]
    assert conn.execute(
        "SELECT count(*) FROM memories WHERE project_id = ?", (now.id,)
    ).fetchall() == [(7,)]
    db.close()


# -- every entry point, over real processes ----------------------------------------------------


@pytest.mark.e2e
def test_learned_in_one_worktree_is_found_from_another_through_every_door(repo, tmp_path):
    from harness.commands import agent_env, run_module, sqrl
    from harness.rpc_client import Server
    from tests.test_agents_e2e import _mcp_context

    db = tmp_path / "memory.db"
    home = tmp_path / "home"
    env = agent_env(home, db)
    with Server(db, env={"REOS_MEMORY_OWNER_ID": "dev"}) as srv:
        srv.wait_ready()
        added = srv.call(
            "squirrel/memories/add",
            {
                "project_root": str(repo["a"]),
                "kind": "invariant",
                "tier": "long_term",
                "text": "Deploys go through the blue-green script deploy.sh, never by hand.",
            },
        )
        scoped = srv.call(
            "squirrel/memories/add",
            {
                "project_root": str(repo["a"] / "src"),
                "kind": "pattern",
                "scope": "repo_path",
                "path_prefix": "src/api",
                "text": "The API client retries with httpx transports.",
            },
        )
        # a session log from worktree A, ingested: its project is the repository's
        s = ClaudeSession(repo["a"], datetime.now(UTC) - timedelta(hours=3))
        s.user("Fetch the exchange rates in rates.py")
        s.bash("python rates.py", "USD/EUR 0.92")
        s.user("great. From now on use pnpm, never npm.")
        s.say("Understood: pnpm from now on.")
        log = s.write(home / ".claude")
        ing = srv.call("squirrel/ingest_transcript", {"path": str(log), "session_end": True})
        pid = added["memory"]["project_id"]
        assert ing["project_id"] == pid == scoped["memory"]["project_id"]

        ctx = srv.call(
            "squirrel/get_task_context",
            {
                "project_root": str(repo["b"]),
                "task": "deploys through the blue-green script; the API client retries; pnpm or npm",
                "path": str(repo["b"] / "src" / "api" / "client.py"),
                "context_budget_tokens": 800,
            },
        )
        prompt = ctx["context_prompt"]
        assert "deploy.sh" in prompt and "httpx" in prompt and "pnpm" in prompt, prompt
        elsewhere = srv.call(
            "squirrel/get_task_context",
            {
                "project_root": str(repo["main"]),
                "task": "deploys through the blue-green script; the API client retries",
                "path": "docs/readme.md",
            },
        )
        assert "deploy.sh" in elsewhere["context_prompt"]
        assert "httpx" not in elsewhere["context_prompt"]  # repo_path: inside the repository
        listed = srv.call("squirrel/memories/list", {"project_root": str(repo["main"])})
        assert {m["id"] for m in listed["memories"]} >= {
            added["memory"]["id"],
            scoped["memory"]["id"],
        }

    hook = run_module(
        env,
        "reos_memory",
        "hook",
        "claude-code",
        stdin=json.dumps(
            {
                "hook_event_name": "SessionStart",
                "session_id": "s-main",
                "cwd": str(repo["main"]),
                "source": "startup",
            }
        ),
    )
    assert "deploy.sh" in hook.stdout, hook.stderr
    task = "deploys go through the blue-green script"
    out = sqrl(env, "context", task, "--json", cwd=repo["b"])
    assert out.returncode == 0 and "deploy.sh" in json.loads(out.stdout)["context_prompt"]
    assert "deploy.sh" in _mcp_context(env, repo["b"], task)["context_prompt"]


@pytest.mark.e2e
def test_an_old_database_served_merges_and_dumps_and_loads_the_same(repo, tmp_path):
    from harness.rpc_client import Server
    from tests.test_dump_e2e import dump, dump_rows, load

    path = tmp_path / "old.db"
    old_database(path, repo, tmp_path)
    with Server(path, env={"REOS_MEMORY_OWNER_ID": "dev"}) as srv:
        srv.wait_ready()
        ctx = srv.call(
            "squirrel/get_task_context",
            {
                "project_root": str(repo["b"]),
                "task": "run the migrations; test the API client",
                "path": "src/api/client.py",
                "context_budget_tokens": 800,
            },
        )
        prompt = ctx["context_prompt"]
        assert "alembic" in prompt and "make test-integration" in prompt and "httpx" in prompt
        assert "pnpm" in prompt and "npm." not in prompt.replace("pnpm", "")
        listed = srv.call(
            "squirrel/memories/list",
            {
                "project_root": str(repo["main"]),
                "include_global": False,
                "statuses": ["provisional", "active", "deprecated"],
            },
        )
        assert {m["id"] for m in listed["memories"]} == {
            "m-main",
            "m-a",
            "m-b",
            "k-old",
            "k-new",
            "d-main",
            "d-b",
        }
    target, copy = tmp_path / "dump.jsonl", tmp_path / "copy.db"
    done = dump(path, target)
    assert done.returncode == 0, done.stderr
    loaded = load(copy, target)
    assert loaded.returncode == 0, loaded.stderr
    assert dump_rows(copy)["projects"] == dump_rows(path)["projects"]
    merged = [r for r in dump_rows(copy)["projects"] if r[-1] is not None]
    assert len(merged) == 3
