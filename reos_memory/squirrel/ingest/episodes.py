"""Sessions into episodes (seed 001 section 2.1): events accumulate per session and are cut on
a task boundary, on severe frustration followed by success, on an explicit flush, at session
end and at a size cap. Each episode stores its compressed events and the stats computed from
them, and a cheap pre-filter decides whether it deserves a Memory Writer call."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import apsw
import msgspec

from reos_memory.models import Episode, EpisodeStats, EventIn, new_id, now_iso
from reos_memory.squirrel.api import EpisodeRun
from reos_memory.squirrel.events import call_ref, compress, main_text
from reos_memory.squirrel.memory import feedback
from reos_memory.squirrel.memory.policy import RegretWeights
from reos_memory.squirrel.redaction import SecretScope, peek_scope, scope_for
from reos_memory.squirrel.text import commands, frustration, instructions, replies, statements
from reos_memory.store import episodes as episode_sql
from reos_memory.store import projects as project_sql
from reos_memory.store import sessions as session_sql

if TYPE_CHECKING:
    from reos_memory.squirrel.memory.policy import Policy
    from reos_memory.squirrel.projects import Project

_enc = msgspec.json.Encoder()
_dec = msgspec.json.Decoder()
TASK_WORDS = 80  # content words remembered of the episode's requests
TASK_OVERLAP = 0.2  # below this, a new request is about something else
MIN_ACTIVITY_FOR_BOUNDARY = 1


@dataclass
class Limits:
    max_episode_events: int = 400
    writer_min_tool_calls: int = 12


@dataclass
class IngestReport:
    accepted: int = 0
    episodes: list[EpisodeRun] = field(default_factory=list)
    pending_events: int = 0


def _new_state(seq: int) -> dict[str, Any]:
    return {
        "seq": seq,
        "n": 0,
        "start_ts": None,
        "task": [],
        "activity": 0,
        "severe": False,
        "failed": [],
        "calls": {},
        "last_call": None,
    }


@dataclass
class Prepared:
    """A session's new events compressed and cut against a snapshot of its row, the costly part
    of an ingest done before the write transaction; `apply` commits it when the row is still
    that snapshot (else does it again on the row as it is)."""

    base: dict[str, Any] | None  # the row it was computed from (None: a new session)
    sess: dict[str, Any]
    first_seq: int
    stored: list[bytes]
    cuts: list[tuple[int, str]]
    args: dict[str, Any]


def prepare(
    base: dict[str, Any] | None,
    *,
    project_id: str,
    owner: tuple[str, str],
    session_id: str,
    events: Sequence[EventIn],
    session_end: bool,
    limits: Limits,
    now: str | None = None,
) -> Prepared:
    """Compress a session's events and find the episodes they complete, on a copy of `base`
    (the session's stored row); touches no database."""
    now = now or now_iso()
    args = {
        "project_id": project_id,
        "owner": owner,
        "session_id": session_id,
        "events": events,
        "session_end": session_end,
        "limits": limits,
        "now": now,
    }
    sess: dict[str, Any]
    if base is None:
        sess = {
            "session_id": session_id,
            "project_id": project_id,
            "owner_type": owner[0],
            "owner_id": owner[1],
            "started_at": now,
            "last_event_at": now,
            "state": _new_state(1),
            "ended": False,
        }
    elif base["project_id"] != project_id:
        from reos_memory.errors import Conflict

        raise Conflict(
            f"session {session_id!r} belongs to project {base['project_id']!r}",
            field="$.session_id",
            project_id=base["project_id"],
        )
    else:
        sess = {**base, "state": _dec.decode(_enc.encode(base["state"]))}
    # A value redacted in one event is redacted in all of them (and a key split over two events
    # is found across their seam): the session's scope learns values as the events go by. When
    # an event learned one that an earlier event of this batch holds, the batch is done again
    # with every value known from its start (rare: a secret shown twice, once in a readable form).
    scope = scope_for(session_scope_key(project_id, session_id))
    state0 = _enc.encode(sess["state"])
    tail = scope.tail
    first_seq, stored, cuts = _compress_all(sess, events, limits, now, scope, session_end)
    if scope.values and _holds_known(stored, sess["state"], scope):
        scope.tail = tail
        sess["state"] = _dec.decode(state0)
        first_seq, stored, cuts = _compress_all(sess, events, limits, now, scope, session_end)
    sess["ended"] = session_end
    sess["last_event_at"] = now
    return Prepared(base, sess, first_seq, stored, cuts, args)


def session_scope_key(project_id: str, session_id: str) -> str:
    """The key of a session's redaction scope."""
    return f"{project_id}\x00{session_id}"


def _holds_known(stored: list[bytes], state: dict[str, Any], scope: SecretScope) -> bool:
    """Whether a stored event or the state holds a value the scope knows."""
    blob = b"".join(stored).decode("utf-8", "replace") + _enc.encode(state).decode()
    return any(v in blob or _enc.encode(v).decode()[1:-1] in blob for v in scope.values)


def _compress_all(
    sess: dict[str, Any],
    events: Sequence[EventIn],
    limits: Limits,
    now: str,
    scope: SecretScope,
    session_end: bool,
) -> tuple[int, list[bytes], list[tuple[int, str]]]:
    """Compress `events` into the session's state; (first seq, stored events, cuts)."""
    state = sess["state"]
    cuts: list[tuple[int, str]] = []
    stored: list[bytes] = []
    first_seq = state["seq"]
    for i, ev in enumerate(events):
        seq = state["seq"]
        call = _pairing(state, ev, scope)
        scope.seam(main_text(ev))
        c = compress(ev, i, call, now, scope.redact)
        if ev.kind == "tool_call":
            _remember_call(state, ev, c)
        boundary = _is_boundary(state, c)
        if boundary and state["n"] > 0:
            cuts.append((seq - 1, "task_boundary"))
            _reset(state)
        _absorb(state, c)
        stored.append(_enc.encode(c))
        state["seq"] = seq + 1
        if state["severe"] and _success(state, c):
            cuts.append((seq, "resolved_frustration"))
            _reset(state)
        elif state["n"] >= limits.max_episode_events:
            cuts.append((seq, "size_cap"))
            _reset(state)
    if session_end and state["n"] > 0:
        cuts.append((state["seq"] - 1, "session_end"))
        _reset(state)
    return first_seq, stored, cuts


def apply(conn: apsw.Connection, prep: Prepared, regret: RegretWeights) -> IngestReport:
    """Commit a prepared ingest inside the caller's write transaction."""
    current = session_sql.get_session(conn, prep.args["session_id"])
    if current != prep.base:  # another writer moved the session meanwhile: do it again on it
        prep = prepare(current, **prep.args)
    return _commit(conn, prep, regret)


def _commit(conn: apsw.Connection, prep: Prepared, regret: RegretWeights) -> IngestReport:
    """Store what `prep` holds: prepared from the session row as it is in this transaction."""
    args = prep.args
    sess = prep.sess
    report = IngestReport(accepted=len(args["events"]))
    session_sql.put_session(conn, sess)  # the events reference it
    session_sql.append_events(conn, sess["session_id"], prep.first_seq, prep.stored)
    for upto, reason in prep.cuts:
        ep = cut_episode(conn, sess, upto, reason, args["limits"], regret)
        if ep is not None:
            report.episodes.append(ep)
    report.pending_events = sess["state"]["n"]
    return report


def ingest(
    conn: apsw.Connection,
    *,
    project_id: str,
    owner: tuple[str, str],
    session_id: str,
    events: Sequence[EventIn],
    session_end: bool,
    limits: Limits,
    regret: RegretWeights,
) -> IngestReport:
    """Append a session's events and cut the episodes they complete (inside one write tx)."""
    prep = prepare(
        session_sql.get_session(conn, session_id),
        project_id=project_id,
        owner=owner,
        session_id=session_id,
        events=events,
        session_end=session_end,
        limits=limits,
    )
    return _commit(conn, prep, regret)  # read in this transaction: nothing to compare


def flush_session(
    conn: apsw.Connection,
    session_id: str,
    limits: Limits,
    regret: RegretWeights,
    reason: str = "flush",
) -> EpisodeRun | None:
    """Cut the open episode of a session now (None when it holds no events)."""
    sess = session_sql.get_session(conn, session_id)
    if sess is None or sess["state"]["n"] == 0:
        return None
    upto = sess["state"]["seq"] - 1
    _reset(sess["state"])
    session_sql.put_session(conn, sess)
    return cut_episode(conn, sess, upto, reason, limits, regret)


def cut_episode(
    conn: apsw.Connection,
    sess: dict[str, Any],
    upto_seq: int,
    reason: str,
    limits: Limits,
    regret: RegretWeights,
) -> EpisodeRun | None:
    """Turn the session's pending events up to `upto_seq` into a stored episode."""
    events = session_sql.take_events(conn, sess["session_id"], upto_seq)
    if not events:
        return None
    # events stored by earlier ingests may hold a value the session showed as a secret since
    scope = peek_scope(session_scope_key(sess["project_id"], sess["session_id"]))
    if scope is not None and scope.values:
        events = [scope.known_value(e) for e in events]
    st = compute_stats(events)
    pre = prefilter(events, st, limits)
    now = now_iso()
    ep = Episode(
        id=new_id("ep"),
        project_id=sess["project_id"],
        session_id=sess["session_id"],
        owner_type=sess["owner_type"],
        owner_id=sess["owner_id"],
        start_ts=events[0]["ts"],
        end_ts=events[-1]["ts"],
        processed=0 if pre["call_writer"] else 1,
        cut_reason=reason,
        outcome="pending" if pre["call_writer"] else "skipped",
        outcome_reason=None if pre["call_writer"] else pre["reason"],
        attempts=0,
        prefilter=pre,
        stats=st,
        event_count=len(events),
        created_at=now,
    )
    stats = msgspec.structs.asdict(st)
    body = {"events": events, "stats": stats}
    episode_sql.insert_episode(conn, ep, _enc.encode(body).decode())
    # the outcome of this task judges the contexts served to the session before it ended
    judged = feedback.judge_session_contexts(
        conn, sess["project_id"], sess["session_id"], st, ep.end_ts, regret, now
    )
    if not judged:
        project_sql.add_outcome(conn, sess["project_id"], st.error_count, st.retry_loops, now)
    return EpisodeRun(
        episode_id=ep.id,
        cut_reason=reason,
        events=len(events),
        call_writer=pre["call_writer"],
        stats=stats,
        contexts_judged=judged,
        outcome="pending" if pre["call_writer"] else "skipped",  # until the writer is asked
    )


# -- the running state of an open episode ------------------------------------------------------


def compress_episode(
    events: Sequence[EventIn], now: str
) -> tuple[list[dict[str, Any]], EpisodeStats]:
    """A whole episode's events in their stored form (redacted, tool results paired with their
    calls), and its stats: what a cut episode holds, for an episode that arrives already cut
    (the team server's squirrel/ingest_episode)."""
    state = _new_state(0)
    scope = SecretScope()
    out = []
    for i, ev in enumerate(events):
        call = _pairing(state, ev, scope)
        scope.seam(main_text(ev))
        c = compress(ev, i, call, now, scope.redact)
        if ev.kind == "tool_call":
            _remember_call(state, ev, c)
        out.append(c)
    return out, compute_stats(out)


def _reset(state: dict[str, Any]) -> None:
    keep = state["seq"]
    calls = state["calls"]
    state.clear()
    state.update(_new_state(keep))
    state["calls"] = calls  # a result may arrive after the cut of its call


def _pairing(state: dict[str, Any], ev: EventIn, scope: SecretScope) -> dict[str, Any] | None:
    if ev.kind != "tool_result":
        return None
    if ev.call_id:
        key = call_ref(ev.call_id, scope.redact)
        if key in state["calls"]:
            return state["calls"][key]
    return state["last_call"]


def _remember_call(state: dict[str, Any], ev: EventIn, c: dict[str, Any]) -> None:
    # the compressed (redacted) fields only: the state is stored with the session
    info = {"tool_name": c.get("tool_name"), "command": c.get("command"), "file": c.get("file")}
    state["last_call"] = info
    if ev.call_id:
        calls = state["calls"]
        calls[c.get("call_id") or ev.call_id[:80]] = info
        if len(calls) > 32:  # only recent calls can still get results
            for k in list(calls)[: len(calls) - 32]:
                del calls[k]


def _is_boundary(state: dict[str, Any], c: dict[str, Any]) -> bool:
    """A new user request about a different task, after the open episode did something."""
    if (
        c["role"] != "user"
        or c["kind"] != "message"
        or state["activity"] < MIN_ACTIVITY_FOR_BOUNDARY
    ):
        return False
    said = c.get("text", "")
    if c.get("origin") in ("queued", "rejection") or state.get("rejected_last"):
        return False  # typed mid-work or on rejecting a call: about the task at hand
    if not said or c.get("correction") or c.get("frustration") or replies.is_continuation(said):
        return False  # complaints and corrections are about the task at hand
    if replies.is_new_task(said):
        return True
    words = replies.content_words(said)
    if not words or not state["task"]:
        return False
    return replies.topic_overlap(words, set(state["task"])) < TASK_OVERLAP


def _absorb(state: dict[str, Any], c: dict[str, Any]) -> None:
    state["n"] += 1
    if c["role"] != "system":  # an interrupt notice may sit between a rejection and the reply
        state["rejected_last"] = bool(c["kind"] == "tool_result" and c.get("rejected"))
    state["start_ts"] = state["start_ts"] or c["ts"]
    if c["role"] == "user" and c["kind"] == "message":
        if c.get("frustration") == "severe":
            state["severe"] = True
        words = [w for w in replies.content_words(c.get("text", "")) if w not in state["task"]]
        state["task"] = (state["task"] + sorted(words))[:TASK_WORDS]
    else:
        state["activity"] += 1
    key = c.get("key")
    if c["kind"] == "tool_result" and c.get("error") and key and key not in state["failed"]:
        state["failed"] = (state["failed"] + [key])[-50:]


def _success(state: dict[str, Any], c: dict[str, Any]) -> bool:
    """The event that resolves a frustrating stretch: a passing test, a failed call now working,
    or the user saying it works."""
    if c["role"] == "user":
        return bool(c.get("success"))
    if c["kind"] != "tool_result" or c.get("error"):
        return False
    return c.get("test") == "passed" or c.get("key") in state["failed"]


# -- stats and the pre-filter -----------------------------------------------------------------


def compute_stats(events: Sequence[dict[str, Any]]) -> EpisodeStats:
    """error_count, retry_loops, tests_final_status, user_frustration of compressed events."""
    errors = 0
    retries = 0
    failed: set[str] = set()
    tests = "not_run"
    levels = []
    for e in events:
        if e.get("error"):
            errors += 1
        if e["kind"] == "tool_call" and e.get("key") in failed:
            retries += 1  # the same call again after it failed
        if e["kind"] in ("tool_result", "tool_call") and e.get("error") and e.get("key"):
            failed.add(e["key"])
        if e.get("test"):
            tests = e["test"]
        if e.get("frustration"):
            levels.append(e["frustration"])
    return EpisodeStats(
        error_count=errors,
        retry_loops=retries,
        tests_final_status=tests,
        user_frustration=frustration.combine_frustration(levels) if levels else "none",
    )


def prefilter(events: Sequence[dict[str, Any]], st: EpisodeStats, limits: Limits) -> dict[str, Any]:
    """Whether an episode is worth a Memory Writer call, and why (recorded with the episode)."""
    reasons = []
    if st.error_count:
        reasons.append(f"{st.error_count} error(s)")
    users = [e for e in events if e["role"] == "user" and e["kind"] == "message"]
    if any(e.get("correction") for e in users):
        reasons.append("user correction")
    if any(e.get("rejected") for e in events):
        reasons.append("rejected tool call")
    if any(statements.explicit_statements(e.get("text", "")) for e in users):
        reasons.append("explicit statement")
    if any(e.get("notes") for e in events):
        reasons.append("agent diagnosis or session summary")
    if any(e.get("retracts") for e in events):
        reasons.append("the agent took back a cause")  # (one written earlier may be wrong)
    if any(e.get("origin") in ("queued", "rejection") for e in users):
        reasons.append("user instruction")
    if st.user_frustration in ("moderate", "severe"):
        reasons.append(f"{st.user_frustration} frustration")
    calls = sum(1 for e in events if e["kind"] == "tool_call")
    if calls >= limits.writer_min_tool_calls:
        reasons.append(f"{calls} tool calls")
    # the costlier readings, only when nothing above made the call worth it already
    if not reasons and any(
        instructions.find(e.get("text", ""), "reply" if i else "request")
        for i, e in enumerate(users)
    ):
        reasons.append("user instruction")
    if not reasons and any(
        e["kind"] == "tool_result"
        and e.get("command")
        and not e.get("error")
        and any(commands.classify(c) for c in commands.split(e["command"]))
        for e in events
    ):
        reasons.append("project check command")
    out: dict[str, Any] = {"call_writer": bool(reasons), "reasons": reasons, "tool_calls": calls}
    if not reasons:
        out["reason"] = (
            "no error, correction, rejected call, statement or instruction of the user, agent"
            " diagnosis, project check command or frustration, and only"
            f" {calls} tool call(s) (< {limits.writer_min_tool_calls})"
        )
    return out


def store_session(
    conn: apsw.Connection,
    proj: Project,
    owner: tuple[str, str],
    session_id: str,
    events: Sequence[EventIn],
    session_end: bool,
    pol: Policy,
    limits: Limits,
    prepared: Prepared | None = None,
) -> IngestReport:
    """Append a session's events to its project inside the caller's write transaction (from
    `prepared`, their compressed form made before it, when given); the caller hands the
    episodes it cut to the Memory Writer once that transaction has committed."""
    project_sql.touch_project(conn, proj.id, proj.root, now_iso(), proj.identity)
    if prepared is not None and prepared.args["project_id"] == proj.id:
        return apply(conn, prepared, pol.regret)
    return ingest(
        conn,
        project_id=proj.id,
        owner=owner,
        session_id=session_id,
        events=events,
        session_end=session_end,
        limits=limits,
        regret=pol.regret,
    )
