"""Team writes made through the local service: the Squirrel methods a user already calls
(`squirrel/memories/add` with owner_type team/org, update/deprecate/forget of a cached team
memory, `squirrel/share`) become outbox items for the team server. Nothing is changed locally:
the server orders every write, and the cache learns the result from the pull that follows."""

from __future__ import annotations

import hashlib
from typing import Any

import msgspec

from reos_memory.errors import InvalidInput
from reos_memory.models import Memory
from reos_memory.squirrel import api
from reos_memory.squirrel import team_api as wire
from reos_memory.squirrel.sync.sync import TeamSync
from reos_memory.store import Database
from reos_memory.store import memories as memory_sql
from reos_memory.store import team_cache as team_cache_sql

NO_SERVER = "needs a team server: set team_server_url and its API key (README: Team server)"


def is_cached(db: Database, memory_id: str) -> bool:
    """Whether a memory mirrors a team server (its changes go to the server, not here)."""
    return db.read(lambda c: team_cache_sql.cached_version(c, memory_id)) is not None


def add(
    team: TeamSync, db: Database, p: api.MemoryAddParams, project_id: str | None
) -> api.MemoryAddResult:
    """A team or org memory, sent to the server (the project by its id: the server cannot see
    this machine's directories)."""
    fields = msgspec.structs.asdict(p)
    fields.update(project_id=project_id, project_root=None)
    tw = team.write("squirrel/memories/add", wire.TeamMemoryAddParams(**fields))
    return api.MemoryAddResult(memory=_written(db, tw), team=tw)


def update(team: TeamSync, db: Database, p: api.MemoryUpdateParams) -> api.MemoryResult:
    params = wire.TeamMemoryUpdateParams(**msgspec.structs.asdict(p))
    tw = team.write("squirrel/memories/update", params, p.memory_id)
    return api.MemoryResult(memory=_now(db, p.memory_id, tw), team=tw)


def deprecate(team: TeamSync, db: Database, memory_id: str) -> api.MemoryResult:
    params = wire.TeamMemoryIdParams(memory_id=memory_id)
    tw = team.write("squirrel/memories/deprecate", params, memory_id)
    return api.MemoryResult(memory=_now(db, memory_id, tw), team=tw)


def forget(team: TeamSync, db: Database, memory_id: str) -> api.ForgetResult:
    params = wire.TeamMemoryIdParams(memory_id=memory_id)
    tw = team.write("squirrel/memories/forget", params, memory_id)
    gone = db.read(lambda c: memory_sql.get_memory(c, memory_id)) is None
    return api.ForgetResult(
        forgotten=tw.state == "sent", memory_id=memory_id, removed={"memories": int(gone)}, team=tw
    )


def share(team: TeamSync, db: Database, p: api.ShareParams) -> api.ShareResult:
    """Propose a personal memory to a team (or the org): what it says, not its id. Sharing the
    same text to the same place again is the same proposal (one idempotency key)."""
    m = db.read(lambda c: memory_sql.get_memory(c, p.memory_id))
    if m is None:
        from reos_memory.errors import NotFound

        raise NotFound("memory", p.memory_id, field="memory_id")
    if is_cached(db, m.id):
        raise InvalidInput("memory_id", "is a team memory already; share a memory of your own")
    params = msgspec.convert(
        {
            "text": m.text, "kind": m.kind, "tier": m.tier, "scope": m.scope,
            "project_id": m.project_id, "key": m.key, "polarity": m.polarity,
            "path_prefix": m.path_prefix, "local_memory_id": m.id,
            "owner_type": "team" if p.team_id else None, "owner_id": p.team_id,
        },
        wire.ShareProposeParams,
    )  # fmt: skip
    digest = hashlib.sha256(f"{m.id}\0{p.team_id or ''}\0{m.text}".encode()).hexdigest()
    tw = team.write("team/shares/propose", params, m.id, key=f"share-{digest[:40]}")
    return api.ShareResult(memory_id=m.id, team=tw)


def _written(db: Database, tw: api.TeamWrite) -> Memory | None:
    """The memory a sent add made: as cached by the pull that followed, else as replied."""
    reply: Any = (tw.result or {}).get("memory")
    if tw.state != "sent" or not isinstance(reply, dict):
        return None
    cached = db.read(lambda c: memory_sql.get_memory(c, str(reply.get("id"))))
    return cached or msgspec.convert(reply, Memory, strict=False)


def _now(db: Database, memory_id: str, tw: api.TeamWrite) -> Memory:
    """A cached memory after a write: the pulled result, else the server's reply, else the
    cache as it was (a queued write changes nothing until the server has it)."""
    cached = db.read(lambda c: memory_sql.get_memory(c, memory_id))
    if cached is not None:
        return cached
    reply: Any = (tw.result or {}).get("memory")
    if isinstance(reply, dict):
        return msgspec.convert(reply, Memory, strict=False)
    raise InvalidInput("memory_id", "the team memory is gone from the cache")
