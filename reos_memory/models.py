"""Domain types shared by the graph, the store and the protocol layer."""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
import uuid
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Literal, TypeVar, get_args

import msgspec
from msgspec import Meta, Struct

RelType = Literal[
    "references",
    "follows_from",
    "contradicts",
    "supports",
    "similar_to",
    "related_to",
    "elaborates",
    "caused_by",
    "causes",
    "corrects",
    "supersedes",
    "derived_from",
    "preceded_by",
    "responds_to",
]
REL_TYPES: tuple[str, ...] = get_args(RelType)

RelSource = Literal["user", "cairn", "inferred", "feedback", "embedding"]
REL_SOURCES: tuple[str, ...] = get_args(RelSource)

Direction = Literal["outgoing", "incoming", "both"]

# Identifiers chosen by clients (CAIRN uses UUIDs and prefixed ids); generated ones look alike.
Ident = Annotated[
    str, Meta(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:\-]*$")
]
BlockType = Annotated[str, Meta(min_length=1, max_length=64, pattern=r"^[a-z][a-z0-9_]*$")]
Confidence = Annotated[float, Meta(ge=0.0, le=1.0)]
Weight = Annotated[float, Meta(ge=0.0, le=1_000_000.0)]

MAX_CONTENT_CHARS = 1_000_000
MAX_PROPERTIES_BYTES = 256 * 1024


def iso(dt: datetime) -> str:
    """An aware time as UTC ISO 8601 with milliseconds and a Z suffix (these sort as times)."""
    return dt.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


_STORED = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z")


def parse_iso(value: str, field: str) -> str:
    """A client's date-time as stored (UTC ISO 8601, Z); naive times are taken as UTC. An
    unreadable one is a clear error naming the field."""
    from reos_memory.errors import InvalidInput

    try:
        if _STORED.fullmatch(value):  # already as stored (the agents' logs): only validated
            datetime.fromisoformat(value[:-1])
            return value
        dt = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=UTC)
        return iso(dt)
    except (ValueError, OverflowError):
        raise InvalidInput(
            field, "must be an ISO 8601 date-time such as 2023-05-08T13:56:00Z"
        ) from None


def now_iso(days: float = 0.0) -> str:
    """Current UTC time (moved by `days`) as ISO 8601 with milliseconds and a Z suffix."""
    return iso(datetime.now(UTC) + timedelta(days=days))


def new_id(prefix: str) -> str:
    """A fresh random identifier such as `block-3f2a...` (80 random bits)."""
    return f"{prefix}-{uuid.uuid4().hex[:20]}"


class Params(Struct, kw_only=True, forbid_unknown_fields=True):
    """Base of every request's params, whatever interface it came through: unknown fields are
    errors."""


ProgressToken = str | int | None


class RichTextSpan(Struct, kw_only=True, omit_defaults=True, forbid_unknown_fields=True):
    """A run of formatted text (CAIRN's RichTextSpan); `content` is the text."""

    content: Annotated[str, Meta(max_length=MAX_CONTENT_CHARS)]
    bold: bool = False
    italic: bool = False
    strikethrough: bool = False
    code: bool = False
    underline: bool = False
    color: str | None = None
    background_color: str | None = None
    link_url: str | None = None
    id: str | None = None
    block_id: str | None = None
    position: int | None = None


class Block(Struct, kw_only=True, omit_defaults=True):
    """A stored block. `content` is the plain text of `rich_text`; `version` counts updates."""

    id: str
    type: str
    act_id: str
    parent_id: str | None
    page_id: str | None
    position: int
    content: str
    rich_text: list[RichTextSpan]
    properties: dict[str, Any]
    version: int
    created_at: str
    updated_at: str
    children: list[Block] | None = None


class Relationship(Struct, kw_only=True):
    """A typed, directed edge between two blocks."""

    id: str
    source_block_id: str
    target_block_id: str
    relationship_type: str
    confidence: float
    weight: float
    source: str
    created_at: str


def content_hash(text: str) -> str:
    """Fingerprint of a block's text; an embedding whose hash differs is stale."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def spans_text(spans: list[RichTextSpan]) -> str:
    """Plain text of a rich-text span list."""
    return "".join(s.content for s in spans)


_json_encoder = msgspec.json.Encoder()


def encode_json(value: Any) -> bytes:
    return _json_encoder.encode(value)


# -- paging -----------------------------------------------------------------------------------

_Cursor = dict[str, Annotated[int, Meta(ge=0, le=2**63 - 1)]]


def encode_cursor(rowid: int) -> str:
    """An opaque cursor for the rows after `rowid`."""
    return base64.urlsafe_b64encode(encode_json({"after": rowid})).decode().rstrip("=")


def decode_cursor(cursor: str | None, method: str) -> int:
    """The rowid a cursor of `method` continues after (0 without one); a bad one is -32602."""
    if cursor is None:
        return 0
    from reos_memory.errors import InvalidInput

    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        return msgspec.json.decode(raw, type=_Cursor)["after"]
    except (binascii.Error, ValueError, KeyError, msgspec.DecodeError) as exc:
        raise InvalidInput("cursor", f"must be a next_cursor returned by {method}") from exc


T = TypeVar("T")


def page(rows: list[tuple[int, T]], limit: int) -> tuple[list[T], str | None]:
    """Items of a query run with `limit + 1` rows, and the next page's cursor (None at the end)."""
    more = len(rows) > limit
    rows = rows[:limit]
    return [item for _, item in rows], (encode_cursor(rows[-1][0]) if more and rows else None)


class EdgeRef(Struct, kw_only=True):
    """An edge as a walk reports it."""

    id: str
    source_block_id: str
    target_block_id: str
    relationship_type: str
    confidence: float


# -- Squirrel (seed 001) ----------------------------------------------------------------------

MemoryKind = Literal["preference", "invariant", "pattern", "guard", "note"]
MEMORY_KINDS: tuple[str, ...] = get_args(MemoryKind)
MemoryTier = Literal["short_term", "long_term", "emergency"]
MemoryStatus = Literal["provisional", "active", "deprecated"]
MemoryScope = Literal["global", "project", "repo_path"]
OwnerType = Literal["user", "team", "org"]
Frustration = Literal["none", "mild", "moderate", "severe"]
TestsStatus = Literal["passed", "failed", "not_run"]
# the seed's three, and what the offline writer also reads: the agent's own diagnosis, the
# summaries the agent wrote of its session, and the project's commands that worked
EvidenceSource = Literal[
    "failure_then_success",
    "user_correction",
    "explicit_statement",
    "agent_diagnosis",
    "session_summary",
    "project_command",
]

MAX_MEMORY_TEXT = 2000
# a memory's slot name (project.package_manager, user.language), text and owner id, as every
# interface and both stores take them
MemoryKey = Annotated[
    str, Meta(min_length=3, max_length=128, pattern=r"^[a-z][a-z0-9_]*(\.[a-z0-9_\-]+)+$")
]
MemoryText = Annotated[str, Meta(min_length=1, max_length=MAX_MEMORY_TEXT)]
OwnerId = Annotated[str, Meta(min_length=1, max_length=128)]


class Memory(Struct, kw_only=True):
    """A Squirrel memory (seed 001 section 1.1, plus polarity and path_prefix)."""

    id: str
    project_id: str | None
    scope: str
    owner_type: str
    owner_id: str
    kind: str
    tier: str
    key: str | None
    text: str
    status: str
    confidence: float | None
    expires_at: str | None
    created_at: str
    updated_at: str
    polarity: int = 1
    path_prefix: str | None = None


class Evidence(Struct, kw_only=True):
    """Where a memory came from: an episode and the signal that produced it."""

    id: str
    memory_id: str
    episode_id: str
    source: str | None
    frustration: str | None
    created_at: str


class Injection(Struct, kw_only=True):
    """A context a memory was given in: the task, its place and score, how the task went."""

    context_id: str
    created_at: str
    session_id: str | None
    task: str
    rank: int
    score: float
    feedback_at: str | None  # None: no outcome reported (yet)
    errors: int | None
    retries: int | None
    tests_final_status: str | None
    user_frustration: str | None


class MemoryLink(Struct, kw_only=True):
    """A step of a memory's history: a memory it replaced, or one that replaced it (the writer's
    UPDATE, or a write to a held key, deprecates the old and adds the new), with the episode or
    explicit write that did it."""

    relation: Literal["replaced", "replaced_by"]
    memory_id: str
    episode_id: str
    at: str
    text: str | None  # None: that memory was forgotten since
    status: str | None


class MemoryMetrics(Struct, kw_only=True):
    """What CR-Memory decides on (seed 001 section 1.3)."""

    memory_id: str
    use_count: int = 0
    opportunities: int = 0
    suspected_regret_hits: int = 0
    estimated_regret_saved: float = 0.0
    last_used_at: str | None = None
    last_evaluated_at: str | None = None


class EpisodeStats(Struct, kw_only=True):
    """Features of an episode, computed from its events (seed 001 section 1.4)."""

    error_count: int = 0
    retry_loops: int = 0
    tests_final_status: str = "not_run"
    user_frustration: str = "none"


class Episode(Struct, kw_only=True):
    """A cut of a session: compressed events, their stats, and what the writer made of them."""

    id: str
    project_id: str
    session_id: str | None
    owner_type: str
    owner_id: str
    start_ts: str
    end_ts: str
    processed: int
    cut_reason: str
    outcome: str
    outcome_reason: str | None
    attempts: int
    prefilter: dict[str, Any] | None
    stats: EpisodeStats
    event_count: int
    created_at: str
    events: list[dict[str, Any]] | None = None
    ops: list[dict[str, Any]] | None = None


class EventIn(Struct, kw_only=True, forbid_unknown_fields=True):
    """One event of an agent session, in seed 001's events_json shape plus optional detail."""

    role: Literal["user", "assistant", "tool", "system"]
    kind: Literal["message", "tool_call", "tool_result"]
    ts: Annotated[str, Meta(max_length=64)] | None = None
    tool_name: Annotated[str, Meta(max_length=200)] | None = None
    file: Annotated[str, Meta(max_length=4096)] | None = None
    summary: Annotated[str, Meta(max_length=100_000)] | None = None
    raw_snippet: Annotated[str, Meta(max_length=1_000_000)] | None = None
    text: Annotated[str, Meta(max_length=MAX_CONTENT_CHARS)] | None = None
    is_error: bool | None = None
    exit_code: int | None = None
    command: Annotated[str, Meta(max_length=100_000)] | None = None
    call_id: Annotated[str, Meta(max_length=200)] | None = None
    rejected: bool = False
    # where a message came from, when not typed as a turn: `queued` (typed while the agent
    # worked), `rejection` (the user's reason for rejecting a tool call), `compaction` (the
    # agent's own summary of the session so far); read as evidence by the offline writer
    origin: Literal["queued", "rejection", "compaction"] | None = None
