"""Squirrel's pure parts: projects, tokens, policy files, CR-Memory decisions, episode stats."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta

import pytest

from reos_memory.models import EventIn
from reos_memory.squirrel.events import compress, strip_injected
from reos_memory.squirrel.ingest import episodes
from reos_memory.squirrel.memory import cr_memory
from reos_memory.squirrel.memory.policy import PolicyError, load_policy
from reos_memory.squirrel.memory.ranking import path_inside
from reos_memory.squirrel.projects import project_for_root, relative_path
from reos_memory.squirrel.token_count import count_tokens, truncate_to_tokens


def test_project_ids_are_stable_and_follow_the_git_top_level(tmp_path):
    repo = tmp_path / "My Repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "pkg" / "sub").mkdir(parents=True)
    a = project_for_root(str(repo))
    b = project_for_root(str(repo / "pkg" / "sub"))
    assert a == b and a.root == str(repo) and a.id.startswith("My-Repo-")
    link = tmp_path / "link"
    os.symlink(repo, link)
    assert project_for_root(str(link)).id == a.id  # symlinks resolved
    copy = tmp_path / "copy"
    (copy / ".git").mkdir(parents=True)
    assert project_for_root(str(copy)).id != a.id  # another checkout, another project
    plain = tmp_path / "plain"
    plain.mkdir()
    assert project_for_root(str(plain)).root == str(plain)  # no git: the directory itself
    assert relative_path(str(repo / "pkg" / "x.py"), a.root) == "pkg/x.py"
    assert path_inside("services/pay/api.py", "services/pay")
    assert not path_inside("services/payroll/api.py", "services/pay")


def test_token_count_is_an_upper_estimate_and_truncation_respects_it():
    assert count_tokens("") == 0
    assert count_tokens("hello world") == 3  # ceil(11/4)
    assert count_tokens("a.b(c)") == 6  # punctuation counts
    long = "word " * 500
    cut = truncate_to_tokens(long, 50)
    assert count_tokens(cut) <= 50 and cut.endswith("…")


def test_policy_layers_and_errors_name_file_and_key(tmp_path):
    user = tmp_path / "user.toml"
    user.write_text("[promotion.default]\nmin_opportunities = 3\n")
    proj = tmp_path / "proj"
    (proj / ".sqrl").mkdir(parents=True)
    (proj / ".sqrl" / "memory_policy.toml").write_text(
        "[promotion.guard]\nmin_use_ratio = 0.9\n[protection]\nkinds = ['guard']\n"
    )
    p = load_policy(str(user), str(proj))
    assert p.promotion("pattern").min_opportunities == 3  # user file over default
    assert p.promotion("guard").min_use_ratio == 0.9 and p.promotion("guard").min_regret_hits == 2
    assert p.protected_kinds == {"guard"}
    assert p.sources == ["(shipped default)", str(user), str(proj / ".sqrl" / "memory_policy.toml")]
    user.write_text("[promotion.default]\nmin_opportunitiez = 3\n")
    with pytest.raises(PolicyError) as e:
        load_policy(str(user), None)
    assert str(user) in e.value.message and "min_opportunitiez" in e.value.message
    user.write_text("[deprecation.default]\nmax_use_ratio = 2.5\n")
    with pytest.raises(PolicyError) as e:
        load_policy(str(user), None)
    assert "max_use_ratio" in e.value.message
    user.write_text("[decay.gotcha]\nmax_inactive_days = 3\n")
    with pytest.raises(PolicyError) as e:
        load_policy(str(user), None)
    assert "decay.gotcha" in e.value.message
    user.write_text("not toml ][")
    with pytest.raises(PolicyError, match="not valid TOML"):
        load_policy(str(user), None)


def _row(**kw):
    now = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    row = {
        "id": "m",
        "kind": "pattern",
        "tier": "short_term",
        "status": "provisional",
        "expires_at": None,
        "created_at": now,
        "opportunities": 0,
        "use_count": 0,
        "hits": 0,
        "saved": 0.0,
        "last_used_at": None,
    }
    row.update(kw)
    return row


def _ago(days: float) -> str:
    t = datetime.now(UTC) - timedelta(days=days)
    return t.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def test_cr_memory_decisions_follow_the_seed():
    p = load_policy(None, None)
    now = datetime.now(UTC)
    d = cr_memory.decide(_row(opportunities=4, use_count=4, hits=5), p, now)
    assert d["action"] == "keep" and "not enough evidence" in d["reason"]
    d = cr_memory.decide(_row(opportunities=5, use_count=3, hits=2, expires_at=_ago(-1)), p, now)
    assert d["action"] == "promote" and d["changes"]["tier"] == "long_term"
    assert d["changes"]["expires_at"] > _ago(-89)  # TTL extended
    d = cr_memory.decide(
        _row(kind="guard", tier="emergency", opportunities=5, use_count=3, hits=2), p, now
    )
    assert d["action"] == "promote" and "tier" not in d["changes"]  # guards keep their tier
    d = cr_memory.decide(_row(opportunities=5, use_count=3, hits=1), p, now)
    assert d["action"] == "keep"  # used, but no regret hits yet
    d = cr_memory.decide(_row(opportunities=10, use_count=1), p, now)
    assert d["action"] == "deprecate" and d["metrics"]["use_ratio"] == 0.1
    d = cr_memory.decide(_row(opportunities=9, use_count=0), p, now)
    assert d["action"] == "keep"
    # time: TTL and inactivity, except for protected kinds
    d = cr_memory.decide(_row(expires_at=_ago(1)), p, now)
    assert d["action"] == "deprecate" and "TTL" in d["reason"]
    d = cr_memory.decide(_row(kind="guard", expires_at=_ago(1)), p, now)
    assert d["action"] == "keep" and "protected" in d["note"]
    d = cr_memory.decide(_row(kind="note", created_at=_ago(31)), p, now)
    assert d["action"] == "deprecate" and "never used for 31 days" in d["reason"]
    d = cr_memory.decide(_row(kind="pattern", status="active", last_used_at=_ago(121)), p, now)
    assert d["action"] == "deprecate" and "not used for 121 days" in d["reason"]
    d = cr_memory.decide(_row(kind="invariant", status="active", last_used_at=_ago(400)), p, now)
    assert d["action"] == "keep" and "protected" in d["note"]


def _events(*raw: dict) -> list[dict]:
    state: dict = {}
    out = []
    for i, r in enumerate(raw):
        ev = EventIn(**r)
        call = state.get(ev.call_id) if ev.kind == "tool_result" else None
        c = compress(ev, i, call)
        if ev.kind == "tool_call":
            state[ev.call_id] = c
        out.append(c)
    return out


def test_episode_stats_from_test_runners_and_retries():
    evs = _events(
        {"role": "user", "kind": "message", "text": "make the tests pass"},
        {
            "role": "assistant",
            "kind": "tool_call",
            "tool_name": "Bash",
            "command": "pytest -q",
            "call_id": "a",
        },
        {
            "role": "tool",
            "kind": "tool_result",
            "call_id": "a",
            "exit_code": 1,
            "text": "F.\n=== 1 failed, 1 passed in 0.10s ===",
        },
        {
            "role": "assistant",
            "kind": "tool_call",
            "tool_name": "Bash",
            "command": "pytest  -q",
            "call_id": "b",
        },
        {
            "role": "tool",
            "kind": "tool_result",
            "call_id": "b",
            "exit_code": 0,
            "text": "..\n=== 2 passed in 0.09s ===",
        },
        {"role": "user", "kind": "message", "text": "WHY DID THIS TAKE SO LONG, what the hell"},
    )
    st = episodes.compute_stats(evs)
    assert st.error_count == 1 and st.retry_loops == 1
    assert st.tests_final_status == "passed" and st.user_frustration == "severe"
    pre = episodes.prefilter(evs, st, episodes.Limits())
    assert pre["call_writer"] and "1 error(s)" in pre["reasons"]
    quiet = _events(
        {"role": "user", "kind": "message", "text": "show me the README"},
        {"role": "assistant", "kind": "tool_call", "tool_name": "Read", "file": "README.md"},
        {"role": "tool", "kind": "tool_result", "tool_name": "Read", "text": "# Project"},
    )
    st = episodes.compute_stats(quiet)
    pre = episodes.prefilter(quiet, st, episodes.Limits())
    assert not pre["call_writer"] and "1 tool call" in pre["reason"]


def test_injected_context_is_cut_before_anything_else():
    block = '<squirrel-context id="ctx-1">\n- Use pnpm\n</squirrel-context>'
    assert strip_injected(f"before {block} after") == "before  after"
    assert strip_injected('x <squirrel-context id="ctx-2">\n- cut off mid') == "x "
    c = _events({"role": "user", "kind": "message", "text": block + "\nthanks"})[0]
    assert "pnpm" not in c["text"] and c["text"] == "thanks"
