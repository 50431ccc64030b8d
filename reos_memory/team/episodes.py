"""squirrel/ingest_episode: an episode cut and redacted on a member's machine, learned into team
memories by the team's Memory Writer — the same offline writer (`squirrel/writer/offline.py`)
and the same worth-a-call prefilter as on every machine, so a team learns what a member would.

The server redacts the events again and keeps them (the episode row) with the writer's ops and
outcome. The episode is written once: its idempotency key defaults to the sending key and the
machine's episode id, so a member's outbox can send it again after a lost reply."""

from __future__ import annotations

import uuid
from typing import Any, Literal

import msgspec
import psycopg

from reos_memory.errors import InvalidInput, NotFound
from reos_memory.models import Episode, EpisodeStats, Memory, iso, now_iso
from reos_memory.squirrel import api
from reos_memory.squirrel import team_api as tapi
from reos_memory.squirrel.ingest.episodes import Limits, compress_episode, prefilter
from reos_memory.squirrel.writer import offline as rules
from reos_memory.squirrel.writer.schema import WriterOp
from reos_memory.store.team import memories as pgsql
from reos_memory.team.actions import Action
from reos_memory.team.memories import (
    TeamMemories,
    Who,
    _decode_cursor,
    _encode_cursor,
    no_root,
    reach,
    require,
    to_memory,
    writable,
)


class TeamEpisodes:
    def __init__(self, memories: TeamMemories, limits: Limits | None = None) -> None:
        self.memories = memories
        self.limits = limits or Limits()

    def list_episodes(self, who: Who, p: api.EpisodeListParams) -> api.EpisodeListResult:
        """The episodes members sent that the key reaches, newest first, without their events."""
        no_root(p.project_root)
        with self.memories.tenant(who) as conn:
            rows = pgsql.episodes_page(
                conn, reach(who), project_id=p.project_id, session_id=p.session_id,
                outcome=p.outcome, before=_decode_cursor(p.cursor), limit=p.limit + 1,
            )  # fmt: skip
        page = rows[: p.limit]
        more = len(rows) > p.limit
        return api.EpisodeListResult(
            episodes=[_episode(who, r) for r in page],
            next_cursor=_encode_cursor(page[-1], "created_at") if more and page else None,
        )

    def get_episode(self, who: Who, episode_id: str) -> api.EpisodeGetResult:
        """One episode the key reaches, with its events and the writer's ops; another org's or
        team's is not found."""
        with self.memories.tenant(who) as conn:
            row = pgsql.episode(conn, reach(who), episode_id)
        if row is None:
            raise NotFound("episode", episode_id, field="episode_id")
        return api.EpisodeGetResult(episode=_episode(who, row))

    def ingest(self, who: Who, p: tapi.IngestEpisodeParams) -> tapi.IngestEpisodeResult:
        """Learn one episode into the memories of the key's team (or the team/org named)."""
        method: Action = "squirrel/ingest_episode"
        require(who, "writer", method)
        events, stats = compress_episode(p.events, now_iso())
        verdict = prefilter(events, stats, self.limits)
        episode_id = f"tep-{uuid.uuid4().hex[:20]}"
        call_writer = bool(verdict["call_writer"])
        idem = p.idempotency_key or f"episode:{who.key_id}:{p.episode_id}"

        def work(conn: psycopg.Connection) -> tapi.IngestEpisodeResult:
            team_id = self.memories.owner_team(conn, who, p.owner_type, p.owner_id)
            ops: list[dict[str, Any]] = []
            ids: list[str] = []
            if call_writer:
                keyed = self._keyed(conn, who, team_id, p.project_id)
                # the writer's ops against what the team holds now (its key slots), in order
                for op in rules.write(episode_id, events, msgspec.structs.asdict(stats),
                                      keyed).output.ops:  # fmt: skip
                    done = self._apply(conn, who, method, team_id, p.project_id, op)
                    ops.append(done)
                    ids += [done["memory_id"]] if done.get("memory_id") else []
            outcome: Literal["written", "skipped"] = "written" if ids else "skipped"
            reason = None if call_writer else verdict.get("reason")
            if call_writer and not ids:
                reason = "the writer found nothing worth remembering"
            pgsql.insert_episode(
                conn,
                {
                    "org_id": who.org_id,
                    "id": episode_id,
                    "team_id": team_id,
                    "key_id": who.key_id,
                    "project_id": p.project_id,
                    "episode": {
                        "machine_episode_id": p.episode_id,
                        "session_id": p.session_id,
                        "cut_reason": p.cut_reason,
                        "events": events,
                        "stats": msgspec.to_builtins(stats),
                        "prefilter": verdict,
                    },
                    "outcome": outcome,
                    "reason": reason,
                    "ops": ops,
                },
            )
            self.memories.audit(conn, who, method, episode_id, *ids, team_id=team_id)
            return tapi.IngestEpisodeResult(
                episode_id=episode_id, outcome=outcome, reason=reason, ops=ops, memory_ids=ids
            )

        return self.memories.once(who, method, p, idem, tapi.IngestEpisodeResult, work)

    def _keyed(
        self, conn: psycopg.Connection, who: Who, team_id: str | None, project_id: str
    ) -> list[Memory]:
        """The live keyed memories of the episode's project and owner (the writer fills or
        updates their slots rather than adding a second memory for one key)."""
        owner = ("team", team_id) if team_id is not None else ("org", who.org_id)
        rows = pgsql.keyed(
            conn, reach(who), pgsql.Filters(project_id=project_id, include_global=True, owner=owner)
        )
        return [to_memory(r) for r in rows]

    def _apply(
        self,
        conn: psycopg.Connection,
        who: Who,
        method: Action,
        team_id: str | None,
        project_id: str,
        op: WriterOp,
    ) -> dict[str, Any]:
        """One writer op as a team write: ADD and UPDATE through the same write as
        squirrel/memories/add (a held key gets a new version), DEPRECATE by key or id."""
        out: dict[str, Any] = {"op": op.op, "kind": op.kind, "key": op.key}
        if op.op == "DEPRECATE":
            target = op.memory_id or (
                op.key and pgsql.live_key_holder(conn, who.org_id, team_id, project_id, op.key)
            )
            row = pgsql.get(conn, reach(who), target, lock=True) if target else None
            if row is None or row["status"] == "deprecated":
                return {**out, "action": "rejected", "reason": "no live memory to deprecate"}
            if not writable(who, row):
                return {**out, "action": "rejected", "reason": "an org-wide memory: a team key"
                        " does not change it"}  # fmt: skip
            self.memories.deprecate_locked(conn, who, row)
            return {**out, "action": "deprecated", "memory_id": row["id"]}
        if op.kind is None or not op.text:
            return {**out, "action": "rejected", "reason": f"{op.op} needs kind and text"}
        try:
            new = self.memories.new_memory(
                scope=op.scope, project_id=None if op.scope == "global" else project_id,
                kind=op.kind, tier=op.tier, key=op.key, text=op.text, polarity=op.polarity,
                path_prefix=op.path_prefix, confidence=op.confidence, ttl_days=op.ttl_days,
                origin="episode",
            )  # fmt: skip
        except InvalidInput as exc:
            return {**out, "action": "rejected", "reason": exc.message}
        made = self.memories.write_new(conn, who, method, team_id, new)
        action = (
            "deduplicated" if made.deduplicated_into else "updated" if made.replaced else "added"
        )
        return {**out, "action": action, "memory_id": made.memory.id, "text": made.memory.text}


def _episode(who: Who, row: dict[str, Any]) -> Episode:
    """A stored team episode as the local service shows one (the same Episode)."""
    meta = row["meta"] or {}
    stats = msgspec.convert(meta.get("stats") or {}, EpisodeStats)
    done = row["processed_at"] or row["created_at"]
    return Episode(
        id=row["id"], project_id=row["project_id"], session_id=meta.get("session_id"),
        owner_type="team" if row["team_id"] else "org", owner_id=row["team_id"] or who.org_id,
        start_ts=iso(row["created_at"]), end_ts=iso(done),
        processed=0 if row["outcome"] == "pending" else 1,
        cut_reason=meta.get("cut_reason") or "flush", outcome=row["outcome"],
        outcome_reason=row["reason"], attempts=1, prefilter=meta.get("prefilter"), stats=stats,
        event_count=int(row["event_count"]), created_at=iso(row["created_at"]),
        events=row.get("events"), ops=row.get("ops"),
    )  # fmt: skip
