"""Params and results of the squirrel/* methods (msgspec Structs; the OpenRPC document is made
from them)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta, Struct

from reos_memory.models import (
    Episode,
    EventIn,
    Evidence,
    Frustration,
    Ident,
    Injection,
    Memory,
    MemoryKey,
    MemoryKind,
    MemoryLink,
    MemoryMetrics,
    MemoryScope,
    MemoryStatus,
    MemoryText,
    MemoryTier,
    OwnerId,
    OwnerType,
    Params,
    ProgressToken,
    TestsStatus,
)

PathText = Annotated[str, Meta(min_length=1, max_length=4096)]
SessionId = Annotated[str, Meta(min_length=1, max_length=200, pattern=r"^[^\x00-\x1f]+$")]
MemoryId = Annotated[str, Meta(min_length=1, max_length=128)]
Limit = Annotated[int, Meta(ge=1, le=1000)]


class ProjectParams(Params):
    """A project by id, or by its root directory (the id is derived from it)."""

    project_id: Ident | None = None
    project_root: PathText | None = None


# -- ingest ------------------------------------------------------------------------------------


class IngestParams(ProjectParams, kw_only=True):
    session_id: SessionId
    events: Annotated[list[EventIn], Meta(max_length=1_000_000)]
    owner_type: OwnerType | None = None
    owner_id: OwnerId | None = None
    session_end: bool = False


class TeamEpisode(Struct, kw_only=True):
    """An episode queued for the team server's Memory Writer (`team_share_episodes`): its
    outbox item, and how many events were sent and how many left out to fit the server's
    limits (the least informative first)."""

    state: Literal["sent", "queued", "refused"]
    idempotency_key: str
    events: int
    dropped_events: int


class EpisodeRun(Struct, kw_only=True):
    """An episode cut by this request, and what the Memory Writer made of it."""

    episode_id: str
    cut_reason: str
    events: int
    call_writer: bool
    stats: dict[str, Any]
    contexts_judged: int
    outcome: str
    reason: str | None = None
    writer: str | None = None
    ops: list[dict[str, Any]] | None = None
    writer_call: dict[str, Any] | None = None
    team: TeamEpisode | None = None  # queued for the team's Memory Writer


class WriterRun(Struct, kw_only=True, omit_defaults=True):
    """What the Memory Writer made of one stored episode: written (with its ops and call), or
    why not (pending, failed, running elsewhere, already processed)."""

    episode_id: str
    outcome: str
    reason: str | None = None
    writer: str | None = None
    ops: list[dict[str, Any]] | None = None
    writer_call: dict[str, Any] | None = None


class IngestResult(Struct, kw_only=True):
    project_id: str
    session_id: str
    accepted: int
    pending_events: int
    episodes: list[EpisodeRun]


class IngestTranscriptParams(ProjectParams, kw_only=True):
    """A session log; the project (`project_id` or `project_root`), when given, takes the
    sessions whose log names no directory (else their events are counted as `no_project`)."""

    path: PathText
    agent: Literal[
        "auto",
        "claude-code",
        "codex",
        "gemini",
        "cursor",
        "copilot",
        "windsurf",
        "opencode",
        "aider",
        "cline",
    ] = "auto"
    session_end: bool | None = None


class TranscriptResult(Struct, kw_only=True):
    """What one session log gave, from its cursor on."""

    path: str
    agent: str | None
    session_id: str | None
    project_id: str | None
    lines: int
    events: int
    malformed: int
    rewritten: bool
    session_ended: bool
    skipped_reason: str | None
    episodes: list[EpisodeRun]
    counts: dict[str, int]


class FlushParams(ProjectParams, kw_only=True):
    session_id: SessionId | None = None
    wait: bool = False


class FlushResult(Struct, kw_only=True):
    project_id: str
    episodes: list[EpisodeRun]


# -- context and search ------------------------------------------------------------------------


class ContextParams(ProjectParams, kw_only=True):
    task: Annotated[str, Meta(min_length=1, max_length=20_000)]
    owner_type: OwnerType | None = None
    owner_id: OwnerId | None = None
    path: PathText | None = None
    session_id: SessionId | None = None
    context_budget_tokens: Annotated[int, Meta(ge=16, le=100_000)] = 400
    exclude_injected: bool = False
    # what the agent would get, with nothing counted or recorded (no opportunity, no use, no
    # context to give feedback on: the UI's preview)
    dry_run: bool = False


class ContextMemory(Struct, kw_only=True):
    id: str
    kind: str
    tier: str
    status: str
    scope: str
    key: str | None
    text: str
    polarity: int
    score: float
    why: str


class ContextDropped(Struct, kw_only=True):
    """A memory looked at for the task and not returned, with the first reason found."""

    id: str
    reason: Literal["under_floor", "filtered", "not_relevant", "already_injected", "over_budget"]
    detail: str
    similarity: float | None
    keyword: float
    shared_words: list[str]


class ContextTeam(Struct, kw_only=True):
    """Where the team and org memories of a context came from: `ok` (the team server's cache,
    fresh or just pulled), `offline` (the server could not be reached: the cache answered, as
    old as `last_pull_at`), `off` (no team server configured)."""

    status: Literal["ok", "offline", "off"]
    server: str | None = None
    org_id: str | None = None
    last_pull_at: str | None = None
    error: str | None = None  # why the last attempt failed (offline)
    cached: int = 0  # team and org memories in the cache
    memory_ids: list[str] = msgspec.field(default_factory=list)  # those given in this context


class ContextResult(Struct, kw_only=True):
    context_id: str
    context_prompt: str
    memory_ids: list[str]
    memories: list[ContextMemory]
    tokens: int
    budget: int
    considered: int
    opportunities: int
    semantic_available: bool
    dropped: list[ContextDropped] = msgspec.field(default_factory=list)
    team: ContextTeam | None = None


class SquirrelSearchParams(ProjectParams, kw_only=True):
    query: Annotated[str, Meta(min_length=1, max_length=10_000)]
    include_global: bool = True
    owner_type: OwnerType | None = None
    owner_id: OwnerId | None = None
    kinds: list[MemoryKind] | None = None
    statuses: list[MemoryStatus] = msgspec.field(default_factory=lambda: ["provisional", "active"])
    path: PathText | None = None
    limit: Limit = 20


class SearchMatch(ContextMemory, kw_only=True):
    similarity: float | None
    keyword: float
    project_id: str | None


class SquirrelSearchResult(Struct, kw_only=True):
    query: str
    matches: list[SearchMatch]
    semantic_available: bool


# -- memories ----------------------------------------------------------------------------------


class MemoryAddParams(ProjectParams, kw_only=True):
    scope: MemoryScope = "project"
    kind: MemoryKind
    text: MemoryText
    owner_type: OwnerType | None = None
    owner_id: OwnerId | None = None
    tier: MemoryTier = "short_term"
    key: MemoryKey | None = None
    ttl_days: Annotated[int, Meta(ge=1, le=3650)] | None = None
    confidence: Annotated[float, Meta(ge=0.0, le=1.0)] | None = None
    polarity: Literal[-1, 1] = 1
    path_prefix: PathText | None = None


class TeamWrite(Struct, kw_only=True, omit_defaults=True):
    """A write bound for the team server, as it stands: `sent` (the server applied it),
    `queued` (in the outbox: sent when the server answers again, exactly once), `refused` (the
    server refused it: kept with `error`, never sent again)."""

    state: Literal["sent", "queued", "refused"]
    method: str
    idempotency_key: str
    error: str | None = None
    result: dict[str, Any] | None = None  # the server's reply, once sent


class MemoryAddResult(Struct, kw_only=True, omit_defaults=True):
    memory: Memory | None = None  # None only for a team write not yet applied (`team`)
    deduplicated_into: str | None = None
    reason: str | None = None
    replaced: list[str] | None = None
    team: TeamWrite | None = None


class MemoryIdParams(Params):
    memory_id: MemoryId


class MemoryGetResult(Struct, kw_only=True):
    memory: Memory
    evidence: list[Evidence]
    metrics: MemoryMetrics | None
    history: list[MemoryLink] = msgspec.field(default_factory=list)  # oldest first
    injections: list[Injection] = msgspec.field(default_factory=list)  # newest first, at most 50


class MemoryResult(Struct, kw_only=True, omit_defaults=True):
    memory: Memory  # a cached team memory: as cached until the server's change is pulled
    team: TeamWrite | None = None


class MemoryUpdateParams(Params):
    memory_id: MemoryId
    text: MemoryText | None = None
    kind: MemoryKind | None = None
    tier: MemoryTier | None = None
    key: MemoryKey | None = None
    status: MemoryStatus | None = None
    confidence: Annotated[float, Meta(ge=0.0, le=1.0)] | None = None
    polarity: Literal[-1, 1] | None = None
    ttl_days: Annotated[int, Meta(ge=1, le=3650)] | None = None
    clear_ttl: bool = False
    clear_key: bool = False


class MemoryListParams(ProjectParams, kw_only=True):
    include_global: bool = True
    statuses: list[MemoryStatus] = msgspec.field(default_factory=lambda: ["provisional", "active"])
    kinds: list[MemoryKind] | None = None
    tiers: list[MemoryTier] | None = None
    scope: MemoryScope | None = None
    owner_type: OwnerType | None = None
    owner_id: OwnerId | None = None
    key_prefix: Annotated[str, Meta(min_length=1, max_length=128)] | None = None
    # memories whose text holds this (case-insensitive for ASCII letters)
    text: Annotated[str, Meta(min_length=1, max_length=200)] | None = None
    # created: oldest first; newest; updated: last changed first; uses, opportunities,
    # regret_saved: most first. None: the store's own order (locally created, on the team server
    # updated). A cursor continues the query and sort that returned it.
    sort: (
        Literal["created", "newest", "updated", "uses", "opportunities", "regret_saved"] | None
    ) = None
    limit: Limit = 100
    cursor: Annotated[str, Meta(max_length=64)] | None = None


class MemoryListResult(Struct, kw_only=True):
    memories: list[Memory]
    metrics: list[MemoryMetrics | None]
    next_cursor: str | None


class ForgetResult(Struct, kw_only=True, omit_defaults=True):
    forgotten: bool
    memory_id: str
    removed: dict[str, int]
    team: TeamWrite | None = None  # a cached team memory: forgotten on the server


# -- episodes ----------------------------------------------------------------------------------


class EpisodeListParams(ProjectParams, kw_only=True):
    session_id: SessionId | None = None
    outcome: Literal["pending", "running", "written", "skipped", "failed"] | None = None
    limit: Limit = 100
    cursor: Annotated[str, Meta(max_length=64)] | None = None


class EpisodeListResult(Struct, kw_only=True):
    episodes: list[Episode]
    next_cursor: str | None


class EpisodeIdParams(Params):
    episode_id: Annotated[str, Meta(min_length=1, max_length=128)]


class EpisodeGetResult(Struct, kw_only=True):
    episode: Episode


class EpisodeRetryParams(ProjectParams, kw_only=True):
    episode_id: Annotated[str, Meta(min_length=1, max_length=128)] | None = None
    wait: bool = False


class EpisodeRetryResult(Struct, kw_only=True):
    episodes: list[dict[str, Any]]


# -- feedback, CR-Memory, policy, status -------------------------------------------------------


class FeedbackParams(Params):
    context_id: Annotated[str, Meta(min_length=1, max_length=128)]
    errors: Annotated[int, Meta(ge=0, le=1_000_000)]
    retries: Annotated[int, Meta(ge=0, le=1_000_000)]
    tests_final_status: TestsStatus | None = None
    user_frustration: Frustration | None = None


class FeedbackResult(Struct, kw_only=True, omit_defaults=True):
    context_id: str
    counted: bool
    regret_hit: bool
    regret_saved: float
    memory_ids: list[str]
    baseline: dict[str, float]
    reason: str | None = None


class CrMemoryParams(ProjectParams, kw_only=True):
    dry_run: bool = False
    progress_token: ProgressToken = None


class CrMemoryResult(Struct, kw_only=True):
    dry_run: bool
    project_id: str | None
    evaluated: int
    promoted: int
    deprecated: int
    kept: int
    decisions: list[dict[str, Any]]
    decisions_truncated: bool
    seconds: float
    policy_sources: list[str]


class PolicyParams(Params):
    project_root: PathText | None = None


class PolicyResult(Struct, kw_only=True):
    policy: dict[str, Any]
    sources: list[str]


class ActivityParams(ProjectParams, kw_only=True):
    days: Annotated[int, Meta(ge=1, le=366)] = 30


class ActivityDay(Struct, kw_only=True):
    """One day (UTC) of a database's life: what was learned, given, and spent."""

    day: str  # YYYY-MM-DD
    memories: dict[str, int]  # memories created that day, by kind
    contexts: int  # get_task_context calls recorded
    injections: int  # memories given in them
    writer_calls: int
    input_tokens: int
    output_tokens: int


class ActivityResult(Struct, kw_only=True):
    project_id: str | None
    days: list[ActivityDay]  # oldest first, every day of the range (zeros included)
    live_by_kind: dict[str, int]  # the live memories now


class StatusParams(Params):
    pass


class StatusResult(Struct, kw_only=True):
    memories: dict[str, dict[str, int]]
    episodes: dict[str, int]
    pending_events: int
    open_sessions: int
    projects: int
    writer_calls_by_day: list[dict[str, Any]]
    tokens_today: int
    writer: str
    writer_daily_token_budget: int
    owner_id: str
    transcripts: dict[str, dict[str, Any]]  # per agent: files, lines, events, malformed, ...
    # provider, model, base_url, api_key_env, api_key_set; for an agent's CLI (claude-code,
    # codex): provider, model, executable, executable_found, timeout_s
    writer_config: dict[str, Any]


# -- the team server (issue 21): share, status, sync -------------------------------------------

TeamIdText = Annotated[str, Meta(min_length=1, max_length=200)]


class ShareParams(Params):
    memory_id: MemoryId
    team_id: TeamIdText | None = None  # default: the key's team, else the whole org


class ShareResult(Struct, kw_only=True):
    memory_id: str
    team: TeamWrite


class TeamStatusParams(Params):
    pass


class OutboxEntry(Struct, kw_only=True):
    idempotency_key: str
    method: str
    local_memory_id: str | None
    created_at: str
    attempts: int
    last_error: str | None


class TeamStatusResult(Struct, kw_only=True):
    configured: bool  # team_server_url is set
    server: str | None  # without credentials or query
    api_key: Literal["set", "not set"]
    org_id: str | None
    team_id: str | None
    role: str | None
    last_seq: int
    last_pull_at: str | None
    last_attempt_at: str | None
    last_error: str | None
    cached: dict[str, int]  # cached memories by owner type
    outbox: dict[str, int]  # items by state: pending, done, refused
    refused: list[OutboxEntry]  # the newest refused items, with why
    pending: list[OutboxEntry]  # the oldest items still to send


class TeamSyncParams(Params):
    timeout_s: Annotated[float, Meta(gt=0, le=600)] = 30.0


class TeamSyncResult(Struct, kw_only=True):
    status: Literal["ok", "offline", "off"]
    error: str | None
    sent: int
    refused: int
    pending: int
    upserts: int
    forgets: int
    skipped: int  # changes not applied: their id is a memory that is not this cache's
    last_seq: int
    complete: bool  # the pull reached the end of the change log
    # the server's log no longer held this cache's cursor (its database was restored from an
    # earlier backup, or replaced): the cache was pulled again from the start, and what the
    # server no longer has was dropped (counted in `forgets`)
    restarted: bool = False
