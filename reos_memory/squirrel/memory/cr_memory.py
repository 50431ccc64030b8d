"""CR-Memory (seed 001 section 4): promote what proves useful, deprecate what does not.

For each provisional memory, exactly the seed's algorithm: nothing before `min_opportunities`;
then promotion (status active; tier long_term for invariants, preferences and patterns; a TTL
extended to at least `extend_ttl_days`) when the use ratio and regret hits reach the policy's
bars, or deprecation when it had `deprecation.min_opportunities` chances and a use ratio at or
under `max_use_ratio`. Thresholds come from the kind's section over `default`. Then, for every
live memory: TTL expiry (`expires_at` passed) and inactivity decay (`max_inactive_days` since
`last_used_at`, or since creation when never used). Kinds listed in `[protection]` are never
deprecated by time alone. Heuristics only; no LLM. `dry_run` computes and explains, changes
nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import apsw

from reos_memory.errors import Cancelled
from reos_memory.models import iso, now_iso
from reos_memory.squirrel.api import CrMemoryResult
from reos_memory.squirrel.memory.policy import Policy
from reos_memory.store import Database
from reos_memory.store import memories as memory_sql

PROMOTE_TO_LONG_TERM = ("invariant", "preference", "pattern")
MAX_LISTED = 10_000


def _parse(ts: str | None) -> datetime | None:
    if not ts:
        return None
    return datetime.fromisoformat(ts.replace("Z", "+00:00"))


def decide(
    row: dict[str, Any], policy: Policy, now: datetime, *, use_waits: str | None = None
) -> dict[str, Any]:
    """The decision for one memory: action (promote, deprecate, keep), reason, changes.
    `use_waits`: why its use may not decide yet (the team server's, while too few keys gave
    evidence of it); then what use alone would decide is not done and the keep says why."""
    kind, status = row["kind"], row["status"]
    opp, uses, hits = row["opportunities"], row["use_count"], row["hits"]
    ratio = uses / opp if opp else 0.0
    protected = kind in policy.protected_kinds
    out: dict[str, Any] = {
        "memory_id": row["id"],
        "kind": kind,
        "tier": row["tier"],
        "status": status,
        "metrics": {
            "opportunities": opp,
            "use_count": uses,
            "use_ratio": round(ratio, 4),
            "suspected_regret_hits": hits,
            "estimated_regret_saved": round(row["saved"], 4),
            "last_used_at": row["last_used_at"],
        },
    }
    waited = None
    if status == "provisional":
        by_use = _by_use(row, out, policy, now, ratio)
        if by_use is not None:
            if use_waits is None:
                return by_use
            waited = f"{by_use['action']} by use {use_waits}"
    expired = _by_ttl(row, out, protected, now)
    if expired is not None:
        return expired
    idle = _by_inactivity(row, out, policy, protected, now)
    if idle is not None:
        return idle
    if waited is not None:
        reason = waited
    elif status == "provisional":
        prom = policy.promotion(kind)
        if opp < (prom.min_opportunities or 0):
            reason = f"not enough evidence yet ({opp} of {prom.min_opportunities} opportunities)"
        else:
            reason = (
                f"use ratio {ratio:.2f} and {hits} regret hits: neither promoted nor deprecated"
            )
    else:
        reason = "active and in use"
    return {**out, "action": "keep", "reason": reason}


def _by_use(
    row: dict[str, Any], out: dict[str, Any], policy: Policy, now: datetime, ratio: float
) -> dict[str, Any] | None:
    """A provisional memory promoted (used enough, with enough regret hits) or deprecated
    (seldom used) once it has had its opportunities; None while the evidence decides nothing."""
    kind, opp, uses, hits = row["kind"], row["opportunities"], row["use_count"], row["hits"]
    prom = policy.promotion(kind)
    dep = policy.deprecation(kind)
    if opp < (prom.min_opportunities or 0):
        return None
    if ratio >= (prom.min_use_ratio or 0.0) and hits >= (prom.min_regret_hits or 0):
        changes: dict[str, Any] = {"status": "active"}
        if kind in PROMOTE_TO_LONG_TERM:
            changes["tier"] = "long_term"
        expires_s = row["expires_at"]
        if expires_s is not None and prom.extend_ttl_days:
            floor = iso(now + timedelta(days=prom.extend_ttl_days))
            if expires_s < floor:
                changes["expires_at"] = floor
        return {
            **out,
            "action": "promote",
            "changes": changes,
            "reason": f"use ratio {ratio:.2f} >= {prom.min_use_ratio} and"
            f" {hits} regret hits >= {prom.min_regret_hits}"
            f" after {opp} opportunities",
        }
    if (
        dep.max_use_ratio is not None
        and ratio <= dep.max_use_ratio
        and opp >= (dep.min_opportunities or 0)
    ):
        return {
            **out,
            "action": "deprecate",
            "changes": {"status": "deprecated"},
            "reason": f"used {uses} of {opp} opportunities (ratio {ratio:.2f} <="
            f" {dep.max_use_ratio})",
        }
    return None


def _by_ttl(
    row: dict[str, Any], out: dict[str, Any], protected: bool, now: datetime
) -> dict[str, Any] | None:
    """Deprecated once its expiry has passed, unless its kind is protected (then a note)."""
    expires_s = row["expires_at"]
    if expires_s is None or expires_s > iso(now):  # ISO 8601 UTC strings sort as times
        return None
    if not protected:
        return {
            **out,
            "action": "deprecate",
            "changes": {"status": "deprecated"},
            "reason": f"TTL passed (expires_at {row['expires_at']})",
        }
    out["note"] = "TTL passed, but the kind is protected from time-based deprecation"
    return None


def _by_inactivity(
    row: dict[str, Any], out: dict[str, Any], policy: Policy, protected: bool, now: datetime
) -> dict[str, Any] | None:
    """Deprecated when unused for longer than its kind's max_inactive_days, unless its kind is
    protected (then a note); the days inactive join the metrics."""
    max_days = policy.max_inactive_days(row["kind"])
    since_s = row["last_used_at"] or row["created_at"]
    if max_days is None or not since_s or since_s >= iso(now - timedelta(days=max_days)):
        return None
    since = _parse(since_s)
    assert since is not None
    idle = (now - since).total_seconds() / 86400
    out["metrics"]["days_inactive"] = round(idle, 2)
    if not protected:
        what = "not used" if row["last_used_at"] else "never used"
        return {
            **out,
            "action": "deprecate",
            "changes": {"status": "deprecated"},
            "reason": f"{what} for {idle:.0f} days (> max_inactive_days {max_days})",
        }
    out["note"] = f"inactive {idle:.0f} days, but the kind is protected"
    return None


def run(
    db: Database,
    *,
    project_id: str | None,
    policy_for: Callable[[str | None], Policy],
    dry_run: bool,
    cancelled: Callable[[], bool] | None = None,
) -> CrMemoryResult:
    """Evaluate every live memory (of a project, or all) and apply the decisions in one tx."""
    t0 = datetime.now(UTC)
    rows = db.read(lambda c: memory_sql.live_with_metrics(c, project_id))
    policies: dict[str | None, Policy] = {}
    decisions = []
    for i, r in enumerate(rows):
        if cancelled and i % 5000 == 0 and cancelled():
            raise Cancelled("CR-Memory was cancelled; nothing was changed")
        pid = r[1]
        if pid not in policies:
            policies[pid] = policy_for(pid)
        row = {
            "id": r[0],
            "kind": r[2],
            "tier": r[3],
            "status": r[4],
            "expires_at": r[5],
            "created_at": r[6],
            "opportunities": int(r[7]),
            "use_count": int(r[8]),
            "hits": int(r[9]),
            "saved": float(r[10]),
            "last_used_at": r[11],
        }
        decisions.append(decide(row, policies[pid], t0))
    changed = [d for d in decisions if d["action"] != "keep"]
    if not dry_run:
        now = now_iso()

        def tx(conn: apsw.Connection) -> None:
            if cancelled and cancelled():
                raise Cancelled("CR-Memory was cancelled; nothing was changed")
            groups: dict[tuple[str, ...], list[tuple[Any, ...]]] = {}
            for d in changed:
                cols = tuple(d["changes"])
                groups.setdefault(cols, []).append(
                    (*d["changes"].values(), now, d["memory_id"], d["status"])
                )
            for cols, rows in groups.items():
                # only if nobody changed its status meanwhile
                memory_sql.update_many_if_status(conn, cols, rows)
            memory_sql.mark_evaluated(conn, [d["memory_id"] for d in decisions], now)

        if decisions:
            db.write(tx)
    counts = {
        a: sum(1 for d in decisions if d["action"] == a) for a in ("promote", "deprecate", "keep")
    }
    listed = decisions[:MAX_LISTED]
    return CrMemoryResult(
        dry_run=dry_run,
        project_id=project_id,
        evaluated=len(decisions),
        promoted=counts["promote"],
        deprecated=counts["deprecate"],
        kept=counts["keep"],
        decisions=listed,
        decisions_truncated=len(decisions) > len(listed),
        seconds=round((datetime.now(UTC) - t0).total_seconds(), 3),
        policy_sources=sorted({s for p in policies.values() for s in p.sources}),
    )
