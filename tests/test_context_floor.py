"""get_task_context's hybrid floor (similarity, or nearly so with a distinctive word of the
task) and the reasons it gives for every memory it looked at and did not return."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

from harness.rpc_client import Server
from reos_memory.config import load_config
from reos_memory.store.keywords import STOPWORDS

TASK = "fix the failing checkout test"
REPORTED = "Always run the tests with `make test-integration`."  # cosine 0.295 with TASK


@pytest.fixture(scope="module")
def onnx_ready() -> None:
    folder = Path(load_config().model_dir)
    if not (folder / "manifest.json").is_file():
        pytest.fail(
            f"model not prepared in {folder}: run `./dev setup` (reos-memory model prepare)"
        )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    p = tmp_path / "shop"
    (p / ".git").mkdir(parents=True)
    return p


@pytest.fixture
def srv(tmp_path: Path, onnx_ready: None) -> Iterator[Server]:
    with Server(tmp_path / "m.db", embedder="onnx", env={"REOS_MEMORY_OWNER_ID": "alice"}) as s:
        assert s.wait_ready() == "ready"
        yield s


def add(srv: Server, repo: Path, text: str, **kw: object) -> str:
    params = {"project_root": str(repo), "kind": "note", "text": text, **kw}
    return str(srv.call("squirrel/memories/add", params)["memory"]["id"])


def context(srv: Server, repo: Path, task: str = TASK, **kw: object) -> dict:
    return srv.call("squirrel/get_task_context", {"project_root": str(repo), "task": task, **kw})


def dropped_by_id(ctx: dict) -> dict[str, dict]:
    return {d["id"]: d for d in ctx["dropped"]}


# -- the reported case, over stdio with the real model -----------------------------------------


@pytest.mark.e2e
@pytest.mark.model
def test_the_reported_memory_is_returned_for_its_task(srv: Server, repo: Path) -> None:
    wanted = add(srv, repo, REPORTED)
    other = add(srv, repo, "Use pnpm, never npm.")
    ctx = context(srv, repo)
    assert ctx["memory_ids"] == [wanted], ctx.get("dropped")
    (mem,) = ctx["memories"]
    assert "near the task (0.29)" in mem["why"] and "shares test" in mem["why"]
    # every memory looked at is accounted for: returned, or dropped with its reason and scores
    assert ctx["considered"] == 2 and ctx["opportunities"] == 1
    (drop,) = ctx["dropped"]
    assert drop["id"] == other and drop["reason"] == "under_floor"
    assert drop["similarity"] < 0.25 and drop["keyword"] == 0 and drop["shared_words"] == []
    assert "no word in common with the task" in drop["detail"]


@pytest.mark.e2e
@pytest.mark.model
def test_shared_words_alone_never_let_a_memory_through(srv: Server, repo: Path) -> None:
    # "test" in most of the project's memories: sharing it says nothing, so the reported memory,
    # just under the floor, is not let through by it
    reported = add(srv, repo, REPORTED)
    for text in (
        "Integration tests need the docker compose stack running.",
        "CI runs the test suite on every push.",
        "The test fixtures live in tests/fixtures and are shared by every suite.",
        "Snapshot tests are updated with the --update flag.",
        "Flaky tests are quarantined in tests/quarantine.",
    ):
        add(srv, repo, text)
    # a distinctive word shared, but the memory is not near the task (cosine 0.23): dropped
    page = add(srv, repo, "The checkout page lives in src/checkout and talks to the cart service.")
    # a stopword is no keyword at all
    config = add(srv, repo, "the config of the service")
    ctx = context(srv, repo)
    drops = dropped_by_id(ctx)
    assert reported not in ctx["memory_ids"] and page not in ctx["memory_ids"]
    assert config not in ctx["memory_ids"]
    r = drops[reported]
    assert r["reason"] == "under_floor" and 0.28 < r["similarity"] < 0.3
    assert r["shared_words"] == [] and "common ones" in r["detail"]
    p = drops[page]
    assert p["reason"] == "under_floor" and p["shared_words"] == ["checkout"]
    assert p["similarity"] < 0.25 and "lowered for sharing checkout" in p["detail"]
    c = drops[config]
    assert c["keyword"] == 0 and c["shared_words"] == []
    assert ctx["considered"] == len(ctx["memory_ids"]) + len(ctx["dropped"]) == 8


@pytest.mark.e2e
@pytest.mark.model
def test_every_other_reason_a_memory_is_not_returned(srv: Server, repo: Path) -> None:
    kept = add(srv, repo, "Write a unit test for every bug fix in the checkout flow.")
    bobs = add(srv, repo, "Checkout tests must mock the payment gateway.", owner_id="bob")
    under = add(
        srv,
        repo,
        "Checkout failures are logged to logs/checkout.log.",
        scope="repo_path",
        path_prefix="services/payments",
    )
    long = add(srv, repo, "When a checkout test fails, first rerun it alone: " + "x " * 150)
    ctx = context(srv, repo, context_budget_tokens=90, session_id="s1")
    drops = dropped_by_id(ctx)
    assert kept in ctx["memory_ids"]
    assert drops[bobs]["reason"] == "filtered" and drops[bobs]["detail"] == "another owner's"
    assert drops[bobs]["similarity"] > 0.3  # similar enough, but not this owner's
    assert drops[under]["reason"] == "filtered" and "repo_path" in drops[under]["detail"]
    assert drops[long]["reason"] == "over_budget" and "90-token budget" in drops[long]["detail"]
    again = context(srv, repo, context_budget_tokens=90, session_id="s1", exclude_injected=True)
    assert dropped_by_id(again)[kept]["reason"] == "already_injected"
    assert again["considered"] == len(again["memory_ids"]) + len(again["dropped"])


# -- the rules, without the model --------------------------------------------------------------


def test_a_distinctive_word_is_rare_and_never_a_stopword() -> None:
    from reos_memory.squirrel.memory.ranking import distinctive

    words = ["checkout", "test", "the", "failing"]
    # 1,000 memories: "test" in 300 is common, "checkout" in 12 is not, "failing" in none
    assert distinctive(words, [12, 300, 900, 0], 1000, 0.05) == ["checkout"]
    # a small project: one memory holding a word is always few
    assert distinctive(["test"], [1], 3, 0.05) == ["test"]
    assert distinctive(["test"], [2], 3, 0.05) == []
    # a stopword never counts, however rare
    assert "the" in STOPWORDS and distinctive(["the"], [1], 1000, 0.05) == []


def test_not_relevant_keys_are_dropped_with_their_reason(tmp_path: Path, repo: Path) -> None:
    """relevant_only (the prompt hook): a keyed memory not related to the task is dropped."""
    from reos_memory.app import App
    from reos_memory.logs import setup_logging
    from reos_memory.squirrel import api

    cfg = load_config(None, {"db": str(tmp_path / "m.db"), "embedder": "hash"})
    app = App(msgspec.structs.replace(cfg, catch_up_indexing=False), setup_logging("warning"))
    app.start()
    try:
        app.embeddings.wait_ready(30)
        sq = app.squirrel
        add = api.MemoryAddParams(
            project_root=str(repo),
            kind="invariant",
            key="project.package_manager",
            text="Use pnpm.",
        )
        mid = sq.add_memory(add).memory.id
        ask = api.ContextParams(project_root=str(repo), task="rename the basket component")
        plain = sq.get_task_context(ask)
        assert plain.memory_ids == [mid]  # a key is always there...
        hook = sq.get_task_context(ask, relevant_only=True)
        assert hook.memory_ids == []  # ...but not when only related memories are wanted
        (d,) = hook.dropped
        assert d.id == mid and d.reason == "not_relevant" and "a key" in d.detail
    finally:
        app.close()
