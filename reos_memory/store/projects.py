"""SQL for Squirrel's projects: their rows and roots, their identities (which rows still need one,
what an id names now, merging two project ids that turn out to be one repository:
reos_memory/squirrel/projects.py) and their baselines (the running averages of task outcomes)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import apsw
import msgspec

from reos_memory.models import new_id
from reos_memory.store.connection import fetch, scalar

_enc = msgspec.json.Encoder()

# Every table whose rows belong to a project by its id (project_baselines is folded, not moved).
PROJECT_TABLES = (
    "memories",
    "episodes",
    "squirrel_sessions",
    "context_requests",
    "transcript_cursors",
)


@dataclass(frozen=True)
class ProjectRow:
    id: str
    root: str | None
    identity: str | None
    merged_into: str | None = None


def pending(
    conn: apsw.Connection, project_id: str | None, identities: Sequence[str]
) -> list[ProjectRow]:
    """Rows a resolve must act on: live ones from before identities (identity unknown, root
    known), live ones holding one of `identities` under an id other than `project_id`, and
    `project_id` itself when it was merged into another project."""
    rows = fetch(
        conn,
        "SELECT id, root, identity, merged_into FROM projects WHERE (merged_into IS NULL AND ("
        " (identity IS NULL AND root IS NOT NULL)"
        " OR (identity IN (SELECT value FROM json_each(?)) AND id IS NOT ?)))"
        " OR (id IS ? AND merged_into IS NOT NULL)"
        " ORDER BY created_at, id",
        (_enc.encode(list(identities)).decode(), project_id, project_id),
    )
    return [ProjectRow(*r) for r in rows]


def revive(conn: apsw.Connection, project_id: str) -> None:
    """A merged id that names a checkout's own project again (its origin was removed): live,
    empty; what it held stays with the project it was merged into."""
    conn.execute("UPDATE projects SET merged_into = NULL WHERE id = ?", (project_id,))


def canonical(conn: apsw.Connection, project_id: str) -> tuple[str, str | None, str | None] | None:
    """(id, root, identity) of the live project `project_id` names: itself, or the project it
    was merged into (None when the id has no row)."""
    rows = fetch(
        conn,
        "SELECT p.id, p.root, p.identity FROM projects a"
        " JOIN projects p ON p.id = coalesce(a.merged_into, a.id) WHERE a.id = ?",
        (project_id,),
    )
    return tuple(rows[0]) if rows else None  # type: ignore[return-value]


def set_identity(conn: apsw.Connection, project_id: str, identity: str) -> None:
    conn.execute("UPDATE projects SET identity = ? WHERE id = ?", (identity, project_id))


_LIVE_COLS = (
    "id, project_id, key, scope, owner_type, owner_id, kind, lower(trim(text)),"
    " coalesce(path_prefix, ''), status, created_at, updated_at"
)


def merge(conn: apsw.Connection, source: str, target: str, now: str) -> dict[str, Any]:
    """Move everything of project `source` to `target` inside the caller's transaction and make
    `source` an alias of `target`. Nothing is deleted: where both hold a live memory of one key
    slot the most recently updated stays and the others are deprecated; where both hold the same
    text in one slot the active (else the oldest) stays, the other is deprecated and its
    evidence is copied to the one that stays."""
    live = fetch(
        conn,
        f"SELECT {_LIVE_COLS} FROM memories WHERE project_id IN (?, ?) AND status != 'deprecated'",
        (source, target),
    )
    deprecated: set[str] = set()
    by_key: dict[tuple[Any, ...], list[Any]] = defaultdict(list)
    for r in live:
        if r[2] is not None:
            by_key[(r[2], r[3], r[4], r[5])].append(r)
    for group in by_key.values():
        if len({r[1] for r in group}) < 2:
            continue  # one project's own slot: not this merge's business
        keep = max(group, key=lambda r: (r[11], r[10], r[0]))
        deprecated.update(r[0] for r in group if r is not keep)
    by_text: dict[tuple[Any, ...], list[Any]] = defaultdict(list)
    for r in live:
        if r[0] not in deprecated:
            by_text[(r[3], r[4], r[5], r[6], r[7], r[8])].append(r)
    folded: list[tuple[str, str]] = []
    for group in by_text.values():
        if len({r[1] for r in group}) < 2:
            continue
        keep = min(group, key=lambda r: (r[9] != "active", r[10], r[0]))
        for r in group:
            if r is not keep:
                deprecated.add(r[0])
                folded.append((r[0], keep[0]))
    for mid in sorted(deprecated):
        conn.execute(
            "UPDATE memories SET status = 'deprecated', updated_at = ? WHERE id = ?", (now, mid)
        )
    for dup, keep_id in folded:
        for ep, source_kind, frustration, created in fetch(
            conn,
            "SELECT episode_id, source, frustration, created_at FROM evidence e WHERE memory_id = ?"
            " AND NOT EXISTS (SELECT 1 FROM evidence k WHERE k.memory_id = ?"
            " AND k.episode_id = e.episode_id)",
            (dup, keep_id),
        ):
            conn.execute(
                "INSERT INTO evidence(id, memory_id, episode_id, source, frustration, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (new_id("evd"), keep_id, ep, source_kind, frustration, created),
            )
    moved: dict[str, int] = {}
    for table in PROJECT_TABLES:
        conn.execute(f"UPDATE {table} SET project_id = ? WHERE project_id = ?", (target, source))
        moved[table] = conn.changes()
    _fold_baseline(conn, source, target, now)
    conn.execute(
        "UPDATE projects SET merged_into = ? WHERE id = ? OR merged_into = ?",
        (target, source, source),
    )
    return {
        "merged": source,
        "into": target,
        "moved": moved,
        "deprecated": sorted(deprecated),
    }


def _fold_baseline(conn: apsw.Connection, source: str, target: str, now: str) -> None:
    """One project's running averages of task outcomes, weighted by how many each saw."""
    rows = fetch(
        conn,
        "SELECT outcomes, avg_errors, avg_retries FROM project_baselines WHERE project_id = ?",
        (source,),
    )
    if not rows:
        return
    n1, e1, r1 = rows[0]
    have = fetch(
        conn,
        "SELECT outcomes, avg_errors, avg_retries FROM project_baselines WHERE project_id = ?",
        (target,),
    )
    n2, e2, r2 = have[0] if have else (0, 0.0, 0.0)
    n = n1 + n2
    e = (e1 * n1 + e2 * n2) / n if n else 0.0
    r = (r1 * n1 + r2 * n2) / n if n else 0.0
    conn.execute(
        "INSERT INTO project_baselines(project_id, outcomes, avg_errors, avg_retries, updated_at)"
        " VALUES (?, ?, ?, ?, ?) ON CONFLICT(project_id) DO UPDATE SET outcomes = excluded.outcomes,"
        " avg_errors = excluded.avg_errors, avg_retries = excluded.avg_retries,"
        " updated_at = excluded.updated_at",
        (target, n, e, r, now),
    )
    conn.execute("DELETE FROM project_baselines WHERE project_id = ?", (source,))


def touch_project(
    conn: apsw.Connection, project_id: str, root: str | None, now: str, identity: str | None = None
) -> None:
    name = (root or project_id).rstrip("/").rsplit("/", 1)[-1] or project_id
    conn.execute(
        "INSERT INTO projects(id, root, name, created_at, last_seen_at, identity)"
        " VALUES (?, ?, ?, ?, ?, ?)"
        " ON CONFLICT(id) DO UPDATE SET last_seen_at = excluded.last_seen_at,"
        " root = coalesce(excluded.root, projects.root),"
        " identity = coalesce(excluded.identity, projects.identity)",
        (project_id, root, name, now, now, identity),
    )


def project_root(conn: apsw.Connection, project_id: str) -> str | None:
    return scalar(conn, "SELECT root FROM projects WHERE id = ?", (project_id,))


def project_ids(conn: apsw.Connection) -> list[str]:
    """The live projects (not the ids merged into another)."""
    sql = "SELECT id FROM projects WHERE merged_into IS NULL ORDER BY id"
    return [r[0] for r in fetch(conn, sql)]


def project_roots(conn: apsw.Connection) -> list[str]:
    """The directories of the live projects that have one."""
    sql = "SELECT root FROM projects WHERE merged_into IS NULL AND root IS NOT NULL ORDER BY root"
    return [r[0] for r in fetch(conn, sql)]


def baseline(conn: apsw.Connection, project_id: str) -> tuple[int, float, float]:
    """(outcomes seen, average errors, average retries) of a project's tasks."""
    rows = fetch(
        conn,
        "SELECT outcomes, avg_errors, avg_retries FROM project_baselines WHERE project_id = ?",
        (project_id,),
    )
    return (int(rows[0][0]), float(rows[0][1]), float(rows[0][2])) if rows else (0, 0.0, 0.0)


def add_outcome(
    conn: apsw.Connection, project_id: str, errors: int, retries: int, now: str
) -> None:
    """Fold one task's outcome into the project's running averages."""
    n, e, r = baseline(conn, project_id)
    n2 = n + 1
    conn.execute(
        "INSERT INTO project_baselines(project_id, outcomes, avg_errors, avg_retries, updated_at)"
        " VALUES (?, ?, ?, ?, ?) ON CONFLICT(project_id) DO UPDATE SET outcomes = excluded.outcomes,"
        " avg_errors = excluded.avg_errors, avg_retries = excluded.avg_retries,"
        " updated_at = excluded.updated_at",
        (project_id, n2, e + (errors - e) / n2, r + (retries - r) / n2, now),
    )
