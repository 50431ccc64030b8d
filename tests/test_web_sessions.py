"""Server-side sessions of the web UIs (`interfaces/web/sessions.py`): one key's sign-ins never
end another key's sessions; beyond the cap a new session is refused, not made at someone
else's expense (an outside attack signed one key in 10,050 times and so signed everyone out)."""

from __future__ import annotations

import pytest

from reos_memory.interfaces.web.sessions import Sessions, SessionsFull


def test_one_grant_holds_its_share_of_sessions_and_never_ends_anothers() -> None:
    now = [0.0]
    s: Sessions[str] = Sessions(ttl_s=100, max_sessions=5, clock=lambda: now[0], max_per_grant=2)
    a1, a2, b = s.begin("a"), s.begin("a"), s.begin("b")
    a3 = s.begin("a")  # a's oldest ends, b's stays
    assert (s.get(a1), s.get(a2), s.get(a3), s.get(b)) == (None, "a", "a", "b")
    c, d = s.begin("c"), s.begin("d")  # 5 live
    with pytest.raises(SessionsFull):
        s.begin("e")
    assert [s.get(x) for x in (a2, a3, b, c, d)] == ["a", "a", "b", "c", "d"]
    assert s.get(s.begin("a")) == "a"  # (a grant at its share still signs in: its oldest ends)
    now[0] = 200.0  # all expired: dropped to make room
    e = s.begin("e")
    assert s.get(e) == "e" and s.get(b) is None


def test_a_session_id_is_random_and_kept_only_hashed() -> None:
    s: Sessions[str] = Sessions()
    sid = s.begin("rmk_secret")
    assert len(sid) >= 40 and sid != s.begin("rmk_secret")
    assert sid.encode() not in repr(vars(s)).encode()


def test_one_owners_keys_cannot_fill_the_table_for_everyone() -> None:
    """A review made 500 keys in one org and signed each in 20 times: every other org was shut
    out. An owner (the org) holds its share; past it, its own oldest sessions end."""
    s: Sessions[str] = Sessions(max_sessions=10, max_per_grant=2, max_per_owner=4)
    mine = [s.begin(f"key-{i}", owner="org-a") for i in range(3) for _ in range(2)]
    assert sum(s.get(x) is not None for x in mine) == 4
    other = s.begin("key-b", owner="org-b")
    assert s.get(other) == "key-b"


def test_the_local_uis_one_person_keeps_every_browsers_session() -> None:
    from reos_memory.interfaces.web.guard import Guard

    g = Guard(port=1)
    opened = [g.sessions.begin(True) for _ in range(30)]
    assert all(g.sessions.get(x) for x in opened)
