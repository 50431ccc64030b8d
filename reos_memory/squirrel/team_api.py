"""The team server's wire types (issue 21), shared by the server (`team/`) and the local service
that talks to it (`squirrel/sync/`): params and results of the methods the team server adds to
the local ones, and of the local ones whose results carry team fields.

Methods that exist locally keep their names and params there (`squirrel/memories/add`, ...); a
write may add `idempotency_key`, so an outbox replaying it after a lost reply gets the first
reply back and changes nothing. Tenancy is never a param: the org (and team) come from the API
key; `owner_type`/`owner_id` only choose between the org and a team the key reaches."""

from __future__ import annotations

from typing import Annotated, Any, Literal, cast, get_args

from msgspec import Meta, Struct, field

from reos_memory.models import EventIn, Memory, MemoryKey, MemoryMetrics, MemoryText, Params
from reos_memory.squirrel import api

IdempotencyKey = Annotated[str, Meta(min_length=8, max_length=128, pattern=r"^[A-Za-z0-9_.:-]+$")]
TeamId = Annotated[str, Meta(min_length=1, max_length=200)]
ShareId = Annotated[str, Meta(min_length=1, max_length=128)]


# The team server's methods a member's machine calls (its sync client and outbox); a test checks
# each against the team server's own method table, so a misspelled one fails mypy here and can
# never reach the wire.
TeamMethod = Literal[
    "team/whoami",
    "squirrel/changes/pull",
    "squirrel/memories/add",
    "squirrel/memories/update",
    "squirrel/memories/deprecate",
    "squirrel/memories/forget",
    "team/shares/propose",
    "squirrel/ingest_episode",
    "squirrel/usage/report",
]


def team_method(name: str) -> TeamMethod:
    """`name` (as an outbox row keeps it) as a team method; ValueError for any other."""
    if name not in get_args(TeamMethod):
        raise ValueError(f"not a team server method this machine sends: {name!r}")
    return cast(TeamMethod, name)


class TeamMemory(Memory, kw_only=True):
    """A team or org memory: `owner_type` team (owner_id the team's id) or org (the org's id).
    `version` grows by one per change (the earlier ones are in its history); `seq` is the
    change-log position of its last change."""

    version: int = 1
    seq: int = 0
    created_by: str | None = None  # key id (None: the admin command line)
    updated_by: str | None = None
    origin: Literal["rpc", "share", "episode"] = "rpc"


class MemoryVersion(Struct, kw_only=True):
    """An earlier version of a team memory, replaced by a later write (kept as deprecated)."""

    version: int
    text: str
    kind: str
    tier: str
    status: str
    key: str | None
    polarity: int
    confidence: float | None
    expires_at: str | None
    written_by: str | None
    replaced_by: str | None
    replaced_at: str


# -- memories (the local methods' params, plus idempotency) -------------------------------------


class TeamMemoryAddParams(api.MemoryAddParams, kw_only=True):
    idempotency_key: IdempotencyKey | None = None


class TeamMemoryUpdateParams(api.MemoryUpdateParams, kw_only=True):
    idempotency_key: IdempotencyKey | None = None
    # refuse (conflict) unless the memory is at this version; without it the later write wins
    expected_version: Annotated[int, Meta(ge=1)] | None = None


class TeamMemoryIdParams(api.MemoryIdParams, kw_only=True):
    idempotency_key: IdempotencyKey | None = None


class TeamMemoryResult(Struct, kw_only=True, omit_defaults=True):
    memory: TeamMemory
    deduplicated_into: str | None = None
    replaced: list[str] | None = None


class TeamEpisodeRef(Struct, kw_only=True):
    """An episode the team's writer wrote (or changed) a memory from."""

    episode_id: str
    at: str
    project_id: str
    outcome: str


class TeamInjection(Struct, kw_only=True):
    """A context a team memory was given in (on the server, or reported by a member's call)."""

    context_id: str
    created_at: str
    session_id: str | None
    task: str
    rank: int  # its place among the memories given, from 1
    feedback: dict[str, Any] | None  # the outcome, once squirrel/feedback reported it


class TeamMemoryGetResult(Struct, kw_only=True):
    memory: TeamMemory
    metrics: MemoryMetrics | None
    history: list[MemoryVersion]
    episodes: list[TeamEpisodeRef] = field(default_factory=list)  # newest first
    injections: list[TeamInjection] = field(default_factory=list)  # newest first, 50


class TeamMemoryListResult(Struct, kw_only=True):
    memories: list[TeamMemory]
    metrics: list[MemoryMetrics | None]
    next_cursor: str | None


class TeamForgetResult(Struct, kw_only=True):
    forgotten: bool
    memory_id: str


# -- the change log a machine pulls (its cache) ---------------------------------------------


class PullParams(Params):
    after_seq: Annotated[int, Meta(ge=0)] = 0  # the cursor: the last seq this machine applied
    # the `next_mark` that came with the cursor: the server checks its log still holds that
    # change (a database restored from an earlier backup does not)
    after_mark: Annotated[str, Meta(min_length=1, max_length=64)] | None = None
    limit: Annotated[int, Meta(ge=1, le=1000)] = 500


class Change(Struct, kw_only=True):
    seq: int
    op: Literal["upsert", "forget"]
    memory_id: str
    memory: TeamMemory | None  # the memory as it is now (None for forget, or gone since)
    # an upsert's proof that this key received the memory (its delivery): usage of it names this
    receipt: str | None = None


class PullResult(Struct, kw_only=True):
    changes: list[Change]
    next_seq: int  # pass as after_seq next time
    more: bool  # True: call again at once
    next_mark: str | None = None  # pass as after_mark next time (None with next_seq 0)
    # the cursor is not in this log (the database was restored from an earlier backup, or
    # replaced): drop what was pulled and pull again from after_seq 0
    reset: bool = False


# -- usage reported by members' machines (team CR-Memory sees the whole team's counts) ---------


class UsageItem(Struct, kw_only=True, forbid_unknown_fields=True):
    memory_id: Annotated[str, Meta(min_length=1, max_length=128)]
    # the receipt of the delivery that brought the memory to this same key (Change.receipt)
    context_id: Annotated[str, Meta(min_length=1, max_length=128)]
    opportunities: Annotated[int, Meta(ge=0, le=1_000_000)] = 0
    uses: Annotated[int, Meta(ge=0, le=1_000_000)] = 0
    regret_hits: Annotated[int, Meta(ge=0, le=1_000_000)] = 0
    regret_saved: Annotated[float, Meta(ge=0.0, le=1e9)] = 0.0
    last_used_at: Annotated[str, Meta(max_length=64)] | None = None


class UsageParams(Params):
    idempotency_key: IdempotencyKey
    items: Annotated[list[UsageItem], Meta(max_length=10_000)]


class UsageResult(Struct, kw_only=True):
    applied: int
    unknown: list[str]  # ids the key cannot see (forgotten, or never its org's): not counted
    clipped: list[str] = []  # ids whose counts went over the key's daily bound: counted up to it
    # ids whose receipt is not of a delivery of them to this key: not counted
    not_received: list[str] = []


# -- episodes members send ------------------------------------------------------------------


class IngestEpisodeParams(Params):
    """An episode already cut and redacted on a member's machine, for the team's Memory Writer.
    The server redacts it again before anything is stored."""

    project_id: Annotated[str, Meta(min_length=1, max_length=200)]
    episode_id: Annotated[str, Meta(min_length=1, max_length=128)]  # the machine's id
    events: Annotated[list[EventIn], Meta(min_length=1, max_length=5000)]
    session_id: api.SessionId | None = None
    cut_reason: Annotated[str, Meta(max_length=64)] = "session_end"
    owner_type: Literal["team", "org"] | None = None
    owner_id: TeamId | None = None
    idempotency_key: IdempotencyKey | None = None


class IngestEpisodeResult(Struct, kw_only=True):
    episode_id: str  # the server's id
    outcome: Literal["pending", "written", "skipped", "failed"]
    reason: str | None
    ops: list[dict[str, Any]]
    memory_ids: list[str]


# -- shares -------------------------------------------------------------------------------


class ShareProposeParams(Params):
    """A member's personal memory proposed to a team (or the org): what it says, not its id."""

    text: MemoryText
    kind: api.MemoryKind
    tier: api.MemoryTier = "long_term"
    scope: api.MemoryScope = "project"
    project_id: Annotated[str, Meta(min_length=1, max_length=200)] | None = None
    key: MemoryKey | None = None
    polarity: Literal[-1, 1] = 1
    path_prefix: api.PathText | None = None
    local_memory_id: Annotated[str, Meta(max_length=128)] | None = None
    owner_type: Literal["team", "org"] | None = None
    owner_id: TeamId | None = None
    idempotency_key: IdempotencyKey | None = None


class Share(Struct, kw_only=True):
    id: str
    team_id: str | None
    proposed_by: str
    local_memory_id: str | None
    memory: dict[str, Any]
    status: Literal["pending", "approved", "rejected"]
    decided_by: str | None
    decided_at: str | None
    reason: str | None
    memory_id: str | None
    created_at: str


class ShareResult(Struct, kw_only=True, omit_defaults=True):
    share: Share
    memory: TeamMemory | None = None


class ShareListParams(Params):
    status: Literal["pending", "approved", "rejected"] | None = "pending"
    limit: Annotated[int, Meta(ge=1, le=500)] = 100


class ShareListResult(Struct, kw_only=True):
    shares: list[Share]


class ShareDecideParams(Params):
    share_id: ShareId
    reason: Annotated[str, Meta(max_length=2000)] | None = None
    idempotency_key: IdempotencyKey | None = None


# -- status --------------------------------------------------------------------------------


class TeamStatusResult(Struct, kw_only=True):
    org_id: str
    team_id: str | None
    role: str
    memories: dict[str, dict[str, int]]  # status -> kind -> count, of what the key reaches
    episodes: dict[str, int]
    pending_shares: int
    last_seq: int
    writer: str
    semantic_available: bool
    extra: dict[str, Any] = field(default_factory=dict)
