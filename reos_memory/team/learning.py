"""Team CR-Memory: what proves useful across the whole team is promoted, what does not is
deprecated — with the local service's own decision (`squirrel/memory/cr_memory.py: decide`) and
regret judgement (`squirrel/memory/feedback.py: judge`), over the counts of every member: the
server's own contexts and the usage members' machines report (`squirrel/usage/report`).

A decision that changes a memory writes a new version of it (so it reaches every cache by the
change log), only if nobody changed the memory since it was read."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

import psycopg

from reos_memory.errors import NotFound
from reos_memory.models import iso
from reos_memory.squirrel import api
from reos_memory.squirrel.memory import feedback
from reos_memory.squirrel.memory.cr_memory import MAX_LISTED, decide
from reos_memory.squirrel.memory.feedback import judge
from reos_memory.squirrel.memory.policy import Policy
from reos_memory.store.team import memories as pgsql
from reos_memory.team.actions import Action
from reos_memory.team.memories import TeamMemories, Who, no_root, reach, require, writable

_CHANGEABLE = ("status", "tier", "expires_at")
# team CR-Memory decides by use on the evidence of at least this many keys: one key (a reader
# posting fabricated usage, one machine) can neither promote nor deprecate a team memory alone
MIN_REPORTERS = 2


class TeamLearning:
    def __init__(self, memories: TeamMemories) -> None:
        self.memories = memories

    def feedback(self, who: Who, p: api.FeedbackParams) -> api.FeedbackResult:
        """Judge a context the server gave by its task's outcome, once: fewer errors or retries
        than the project's average give each memory in it a regret hit."""
        method: Action = "squirrel/feedback"
        regret = self.memories.policy.regret
        with self.memories.tenant(who) as conn:
            ctx = pgsql.context_for_feedback(conn, reach(who), p.context_id)
            if ctx is None:
                raise NotFound("context", p.context_id, field="context_id")
            base = pgsql.baseline(conn, who.org_id, ctx["project_id"])
            mems = list(ctx["memory_ids"])
            if ctx["feedback"] is not None:
                return feedback.reply(p.context_id, mems, base, counted=False)
            pgsql.set_context_feedback(conn, who.org_id, p.context_id, feedback.outcome_of(p))
            saved, why = judge(base, p.errors, p.retries, regret)
            hit = saved > 0 and bool(mems)
            if hit:
                for mid in mems:
                    pgsql.add_metrics(conn, who.org_id, mid, regret_hits=1, regret_saved=saved)
                pgsql.note_reporter(conn, who.org_id, who.key_id, mems)
            pgsql.add_outcome(conn, who.org_id, ctx["project_id"], p.errors, p.retries)
            self.memories.audit(conn, who, method, p.context_id)
        return feedback.reply(p.context_id, mems, base, counted=True, hit=hit, saved=saved, why=why)

    def cr_memory(self, who: Who, p: api.CrMemoryParams) -> api.CrMemoryResult:
        """Evaluate every live memory the key reaches (of one project, or all) and, unless a
        dry run, apply the decisions (writer; a dry run is open to readers)."""
        method: Action = "squirrel/cr_memory/run"
        no_root(p.project_root)
        if not p.dry_run:
            require(who, "writer", method)
        t0 = time.monotonic()
        policy = self.memories.policy
        now = datetime.now(UTC)
        with self.memories.tenant(who) as conn:
            rows = pgsql.live_with_metrics(conn, reach(who), p.project_id)
            decisions = [_decide(r, policy, now) for r in rows]
            if not p.dry_run:
                self._apply(conn, who, method, rows, decisions)
        counts = {a: sum(d["action"] == a for d in decisions) for a in ("promote", "deprecate")}
        return api.CrMemoryResult(
            dry_run=p.dry_run,
            project_id=p.project_id,
            evaluated=len(decisions),
            promoted=counts["promote"],
            deprecated=counts["deprecate"],
            kept=len(decisions) - counts["promote"] - counts["deprecate"],
            decisions=decisions[:MAX_LISTED],
            decisions_truncated=len(decisions) > MAX_LISTED,
            seconds=round(time.monotonic() - t0, 3),
            policy_sources=policy.sources,
        )

    def _apply(
        self,
        conn: psycopg.Connection,
        who: Who,
        method: Action,
        rows: list[dict[str, Any]],
        decisions: list[dict[str, Any]],
    ) -> None:
        by_id = {r["id"]: r for r in rows}
        changed = []
        for d in decisions:
            if d["action"] == "keep":
                continue
            row = pgsql.get(conn, reach(who), d["memory_id"], lock=True)
            if row is None or row["status"] != by_id[d["memory_id"]]["status"]:
                continue  # changed meanwhile: decided again next run
            if not writable(who, row):
                continue  # an org-wide memory: a key of the org decides on it
            changes = {k: v for k, v in d["changes"].items() if k in _CHANGEABLE}
            self.memories.new_version_locked(conn, who, row, changes)
            changed.append(row["id"])
        if decisions:
            pgsql.mark_evaluated(conn, who.org_id, [d["memory_id"] for d in decisions])
        if changed:
            self.memories.audit(conn, who, method, *changed)


def _decide(r: dict[str, Any], policy: Policy, now: datetime) -> dict[str, Any]:
    """cr_memory.decide over a team row; while fewer than MIN_REPORTERS keys gave evidence of its
    use, what its use alone would decide is not done (its time to live and its idleness still
    count), and the decision says why."""
    n = r["reporters"]
    waits = None
    if n < MIN_REPORTERS:
        waits = f"waits for the evidence of {MIN_REPORTERS} keys ({n} key{'' if n == 1 else 's'})"
    return decide(_as_local(r), policy, now, use_waits=waits)


def _as_local(r: dict[str, Any]) -> dict[str, Any]:
    """A row as cr_memory.decide reads it (times as the local store keeps them)."""
    return {
        **r,
        "expires_at": None if r["expires_at"] is None else iso(r["expires_at"]),
        "created_at": iso(r["created_at"]),
        "last_used_at": None if r["last_used_at"] is None else iso(r["last_used_at"]),
    }
