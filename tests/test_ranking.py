"""The ranking shared by the local service and the team server (squirrel/memory/ranking.py),
on candidates built by hand: no database, as the team server builds them from PostgreSQL rows."""

from __future__ import annotations

import itertools
import random
from typing import Any

import pytest

from reos_memory.models import Memory, MemoryMetrics
from reos_memory.squirrel.memory import local_context as context
from reos_memory.squirrel.memory import ranking
from reos_memory.squirrel.memory.policy import Policy, load_policy
from reos_memory.squirrel.memory.ranking import Candidate, Dropped, Scope, candidate, choose
from reos_memory.squirrel.token_count import count_tokens
from reos_memory.store import Database
from reos_memory.store import memories as memory_sql

NOW = "2026-01-01T00:00:00Z"
_ids = itertools.count(1)


@pytest.fixture(scope="module")
def policy() -> Policy:
    return load_policy(None, None)  # the shipped default: floor 0.3, relief 0.05


def mem(text: str = "Use pnpm, never npm.", **kw: Any) -> Memory:
    n = next(_ids)
    fields: dict[str, Any] = {
        "id": f"mem-{n:04d}",
        "project_id": "p1",
        "scope": "project",
        "owner_type": "user",
        "owner_id": "alice",
        "kind": "note",
        "tier": "short_term",
        "key": None,
        "text": text,
        "status": "active",
        "confidence": None,
        "expires_at": None,
        "created_at": f"2025-01-01T00:00:{n % 60:02d}Z",
        "updated_at": "2025-01-01T00:00:00Z",
        **kw,
    }
    return Memory(**fields)


def cand(policy: Policy, m: Memory, **signals: Any) -> Candidate:
    return candidate(m, MemoryMetrics(memory_id=m.id), policy, **signals)


def guard(text: str = "Never run the migration against production.") -> Memory:
    return mem(text, kind="guard", tier="emergency", polarity=-1)


def run(policy: Policy, cands: list[Candidate], budget: int = 400, **kw: Any) -> ranking.Choice:
    return choose(cands, policy, context_id="ctx-1", budget=budget, vectors_used=True, **kw)


def reasons(choice: ranking.Choice) -> dict[str, str]:
    return {d.id: d.reason for d in choice.result.dropped}


def test_a_candidate_is_scored_and_explained_from_its_raw_signals(policy: Policy) -> None:
    plain = cand(policy, mem(), cos=0.5)
    keyed = cand(policy, mem(key="project.pm"), cos=0.5, by_key=True)
    worded = cand(policy, mem(), cos=0.5, keyword=1.0, shared=["pnpm"])
    assert keyed.score == pytest.approx(plain.score + policy.retrieval.key_bonus)
    assert worded.score == pytest.approx(plain.score + policy.retrieval.keyword)
    assert plain.why == ["similar to the task (0.50)"]
    assert keyed.why == ["key project.pm", "similar to the task (0.50)"]
    assert worded.why == ["similar to the task (0.50)", "shares pnpm with the task"]


def test_emergency_guards_come_first_whatever_their_score(policy: Policy) -> None:
    g = cand(policy, guard(), cos=0.31)
    strong = [cand(policy, mem(f"Prefer option {i}."), cos=0.9, by_key=True) for i in range(3)]
    choice = run(policy, [*strong, g])
    assert all(c.score > g.score for c in strong)
    assert choice.result.memory_ids[0] == g.memory.id
    assert choice.result.memories[0].why.startswith("emergency guard")
    assert "## Guards (do not ignore)" in choice.result.context_prompt.split("\n")[2]
    # a guard passes the floor on its own: not similar at all, it is still given
    g2 = cand(policy, guard("Never delete the users table."), cos=0.01)
    assert run(policy, [g2]).result.memory_ids == [g2.memory.id]


def test_the_budget_is_never_overrun_and_the_rest_is_dropped_over_budget(policy: Policy) -> None:
    rnd = random.Random(5)
    words = ["deploy", "checkout", "pnpm", "the", "a", "retry", "→", "漢字", "`make`", "--force"]
    for budget in (16, 20, 40, 64, 100, 250, 600):
        cands = [
            cand(
                policy, mem(" ".join(rnd.choices(words, k=rnd.choice([1, 3, 8, 30, 400])))), cos=0.5
            )
            for _ in range(40)
        ]
        out = run(policy, cands, budget=budget).result
        assert out.tokens <= budget
        assert out.tokens == count_tokens(out.context_prompt)
        assert out.considered == len(cands) == len(out.memory_ids) + len(out.dropped)
        assert {d.reason for d in out.dropped} <= {"over_budget"}
        assert all(f"{budget}-token budget" in d.detail for d in out.dropped)


def test_relevant_only_drops_keys_and_guards_unrelated_to_the_task(policy: Policy) -> None:
    key = cand(policy, mem(key="project.pm"), cos=0.1, by_key=True)
    g = cand(policy, guard(), cos=0.12)
    near = cand(policy, mem("Run tests with make test."), cos=0.27, shared=["test"])
    assert run(policy, [key, g, near]).result.memory_ids == [
        g.memory.id,
        key.memory.id,
        near.memory.id,
    ]
    choice = run(policy, [key, g, near], relevant_only=True)
    assert choice.result.memory_ids == [near.memory.id]
    assert reasons(choice) == {key.memory.id: "not_relevant", g.memory.id: "not_relevant"}
    details = {d.id: d.detail for d in choice.result.dropped}
    assert details[key.memory.id] == "a key, but not related to the task (similarity 0.100)"
    assert details[g.memory.id].startswith("an emergency guard, but not related")
    assert choice.eligible == [near]  # only what is given counts an opportunity


def test_memories_already_given_to_the_session_are_left_out(policy: Policy) -> None:
    a, b = cand(policy, mem("A."), cos=0.6), cand(policy, mem("B."), cos=0.5)
    choice = run(policy, [a, b], given={a.memory.id})
    assert choice.result.memory_ids == [b.memory.id]
    assert reasons(choice) == {a.memory.id: "already_injected"}
    assert choice.eligible == [b] and choice.result.opportunities == 1


def test_every_memory_left_out_has_its_first_reason(policy: Policy) -> None:
    earlier = Dropped("mem-gone", "filtered", "another owner's", 0.4, 0.0, [])
    ok = cand(policy, mem("Use pnpm."), cos=0.4)
    relieved = cand(policy, mem("Run pnpm test."), cos=0.26, shared=["pnpm"])
    too_low = cand(policy, mem("Run pnpm build."), cos=0.2, shared=["pnpm"])
    common = cand(policy, mem("The test."), cos=0.2, keyword=0.5)
    unrelated = cand(policy, mem("Lunch is at noon."), cos=0.1)
    big = cand(policy, mem("long " * 300), cos=0.9)
    cands = [ok, relieved, too_low, common, unrelated, big]
    out = run(policy, cands, budget=60, dropped=[earlier]).result
    assert out.memory_ids == [ok.memory.id, relieved.memory.id]
    by_id = {d.id: d for d in out.dropped}
    assert [d.reason for d in out.dropped] == [
        "filtered", "under_floor", "under_floor", "under_floor", "over_budget"
    ]  # fmt: skip
    assert "lowered for sharing pnpm" in by_id[too_low.memory.id].detail
    assert by_id[too_low.memory.id].shared_words == ["pnpm"]
    assert "common ones" in by_id[common.memory.id].detail
    assert "no word in common" in by_id[unrelated.memory.id].detail
    assert by_id[big.memory.id].similarity == 0.9
    assert out.considered == 7 and out.opportunities == 3


def test_without_vectors_only_a_distinctive_word_passes_the_floor(policy: Policy) -> None:
    worded = cand(policy, mem("Run pnpm test."), keyword=1.0, shared=["pnpm"])
    common = cand(policy, mem("The test."), keyword=0.4)
    choice = choose([worded, common], policy, context_id="c", budget=400, vectors_used=False)
    assert choice.result.memory_ids == [worded.memory.id]
    assert choice.result.dropped[0].detail.startswith("no similarity (no embedder)")
    assert not choice.result.semantic_available


def test_with_no_task_there_is_no_floor(policy: Policy) -> None:
    cands = [cand(policy, mem(f"Note {i}.")) for i in range(3)]
    choice = choose(cands, policy, context_id="c", budget=400, vectors_used=False, floor=False)
    assert sorted(choice.result.memory_ids) == sorted(c.memory.id for c in cands)
    assert choice.result.opportunities == 3 and choice.result.dropped == []


def test_a_scope_may_hold_several_owners(policy: Policy) -> None:
    own, team, org = (
        mem(),
        mem(owner_type="team", owner_id="t1"),
        mem(owner_type="org", owner_id="o1"),
    )
    other = mem(owner_id="bob")
    merged = Scope("p1", frozenset({("user", "alice"), ("team", "t1"), ("org", "o1")}), None)
    assert [ranking.hidden(m, merged, NOW) for m in (own, team, org)] == [None, None, None]
    assert ranking.hidden(other, merged, NOW) == "another owner's"
    only_mine = Scope("p1", frozenset({("user", "alice")}), None)
    assert ranking.hidden(team, only_mine, NOW) == "another owner's"
    anyone = Scope("p1", None, None)
    assert all(ranking.hidden(m, anyone, NOW) is None for m in (own, team, org, other))
    assert ranking.hidden(own, Scope("p1", frozenset(), None), NOW) == "another owner's"


def test_search_keeps_similar_or_worded_matches_best_first(policy: Policy) -> None:
    similar = cand(policy, mem("A."), cos=0.8)
    worded = cand(policy, mem("B."), cos=0.05, keyword=1.0)
    neither = cand(policy, mem("C."), cos=0.2)
    weaker = cand(policy, mem("D."), cos=0.35)
    matches = ranking.search_matches([neither, weaker, worded, similar], policy, 2)
    assert [m.id for m in matches] == [similar.memory.id, weaker.memory.id]
    every = ranking.search_matches([neither, weaker, worded, similar], policy, 10)
    assert [m.id for m in every] == [similar.memory.id, weaker.memory.id, worded.memory.id]
    assert every[2].similarity == 0.05 and every[2].keyword == 1.0 and every[2].project_id == "p1"


def test_relative_keyword_scores() -> None:
    assert ranking.relative({"a": 4.0, "b": 1.0}) == {"a": 1.0, "b": 0.25}
    assert ranking.relative({"a": 0.0}) == {"a": 0.0}
    assert ranking.relative({}) == {}


# -- several owners over the local store (memory/local_context.py reads the store one owner at a time)


def test_the_local_store_finds_keys_and_guards_of_every_owner_of_a_scope(db: Database) -> None:
    policy = load_policy(None, None)
    own = mem("Use pnpm.", key="user.pm")
    team = mem("Never force-push main.", kind="guard", tier="emergency", polarity=-1)
    team.owner_type, team.owner_id = "team", "t1"
    bobs = mem("Bob's own key.", key="user.editor", owner_id="bob")
    db.write(lambda conn: [memory_sql.insert_memory(conn, m, None) for m in (own, team, bobs)])
    merged = Scope("p1", frozenset({("user", "alice"), ("team", "t1")}), None)
    found, used = context.candidates(db, None, "pnpm", merged, policy, key_lookup=True)
    assert not used
    assert {c.memory.id: (c.by_key, c.emergency) for c in found} == {
        own.id: (True, False),
        team.id: (False, True),
    }
    start = context.important(db, merged, policy)
    assert {c.memory.id for c in start} == {own.id, team.id}
    anyone = context.important(db, Scope("p1", None, None), policy)
    assert {c.memory.id for c in anyone} == {own.id, team.id, bobs.id}
    alone = context.important(db, Scope("p1", frozenset({("user", "bob")}), None), policy)
    assert [c.memory.id for c in alone] == [bobs.id]
