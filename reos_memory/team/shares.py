"""Shares: a member proposes one of their personal memories to a team or the org (`sqrl share`);
a writer of that team (or an org writer) approves it, and it becomes a team memory through the
same write as any other (duplicates folded, a held key versioned), or rejects it with a reason.
Proposing is open to reader keys: it writes no memory, only a request someone else decides."""

from __future__ import annotations

import uuid
from typing import Any

import psycopg

from reos_memory.errors import Conflict, Forbidden, NotFound
from reos_memory.models import iso
from reos_memory.squirrel import team_api as tapi
from reos_memory.store.team import shares as share_sql
from reos_memory.team.actions import Action
from reos_memory.team.memories import TeamMemories, Who, clean_text, reach, require


def to_share(row: dict[str, Any]) -> tapi.Share:
    return tapi.Share(
        **{
            **row,
            "decided_at": None if row["decided_at"] is None else iso(row["decided_at"]),
            "created_at": iso(row["created_at"]),
        }
    )


class Shares:
    def __init__(self, memories: TeamMemories) -> None:
        self.memories = memories

    def propose(self, who: Who, p: tapi.ShareProposeParams) -> tapi.ShareResult:
        """A pending share of the key's team (or of a team its org key names, or the org)."""
        method: Action = "team/shares/propose"
        self.memories.new_memory(  # checks scope, project and prefix as an add would
            scope=p.scope, project_id=p.project_id, kind=p.kind, tier=p.tier, key=p.key,
            text=p.text, polarity=p.polarity, path_prefix=p.path_prefix,
        )  # fmt: skip
        proposed = {
            "text": clean_text(p.text),
            "kind": p.kind,
            "tier": p.tier,
            "scope": p.scope,
            "project_id": p.project_id,
            "key": p.key,
            "polarity": p.polarity,
            "path_prefix": p.path_prefix,
        }

        def work(conn: psycopg.Connection) -> tapi.ShareResult:
            team_id = self.memories.owner_team(conn, who, p.owner_type, p.owner_id)
            row = share_sql.insert(
                conn, who.org_id, f"share-{uuid.uuid4().hex[:20]}", team_id, who.key_id,
                p.local_memory_id, proposed,
            )  # fmt: skip
            self.memories.audit(conn, who, method, row["id"], team_id=row["team_id"])
            return tapi.ShareResult(share=to_share(row))

        return self.memories.once(who, method, p, p.idempotency_key, tapi.ShareResult, work)

    def list(self, who: Who, p: tapi.ShareListParams) -> tapi.ShareListResult:
        """The shares the key reaches; a reader key sees only the ones it proposed."""
        with self.memories.tenant(who) as conn:
            rows = share_sql.listed(
                conn, reach(who), p.status, who.key_id if who.role == "reader" else None, p.limit
            )
        return tapi.ShareListResult(shares=[to_share(r) for r in rows])

    def approve(self, who: Who, p: tapi.ShareDecideParams) -> tapi.ShareResult:
        """The pending share becomes a team memory (writer)."""
        method: Action = "team/shares/approve"
        require(who, "writer", method)

        def work(conn: psycopg.Connection) -> tapi.ShareResult:
            row = self._pending(conn, who, p.share_id, method)
            m = row["memory"]
            new = self.memories.new_memory(
                scope=m["scope"], project_id=m["project_id"], kind=m["kind"], tier=m["tier"],
                key=m["key"], text=m["text"], polarity=m["polarity"],
                path_prefix=m["path_prefix"], origin="share",
            )  # fmt: skip
            made = self.memories.write_new(conn, who, method, row["team_id"], new)
            done = share_sql.decide(
                conn, who.org_id, row["id"], "approved", who.key_id, p.reason, made.memory.id
            )
            self.memories.audit(
                conn, who, method, row["id"], made.memory.id, team_id=row["team_id"]
            )
            return tapi.ShareResult(share=to_share(done), memory=made.memory)

        return self.memories.once(who, method, p, p.idempotency_key, tapi.ShareResult, work)

    def reject(self, who: Who, p: tapi.ShareDecideParams) -> tapi.ShareResult:
        """The pending share is declined, with the reason given (writer)."""
        method: Action = "team/shares/reject"
        require(who, "writer", method)

        def work(conn: psycopg.Connection) -> tapi.ShareResult:
            row = self._pending(conn, who, p.share_id, method)
            done = share_sql.decide(
                conn, who.org_id, row["id"], "rejected", who.key_id, p.reason, None
            )
            self.memories.audit(conn, who, method, row["id"], team_id=row["team_id"])
            return tapi.ShareResult(share=to_share(done))

        return self.memories.once(who, method, p, p.idempotency_key, tapi.ShareResult, work)

    def _pending(
        self, conn: psycopg.Connection, who: Who, share_id: str, method: Action
    ) -> dict[str, Any]:
        """The pending share, locked, when the key may decide on it: a team's share by a writer
        of that team or of the org; an org-wide share by an admin of the org (no team)."""
        row = share_sql.get(conn, reach(who), share_id, lock=True)
        if row is None:
            raise NotFound("share", share_id, field="share_id")
        if row["team_id"] is None and (who.team_id is not None or who.role != "admin"):
            raise Forbidden(
                method,
                "admin",
                "an org-wide share is decided by an admin key of the org (one with no team)",
            )
        if row["status"] != "pending":
            raise Conflict(f"share {share_id!r} was {row['status']} already", field="$.share_id")
        return row
