"""The Memory Writer's output, exactly as seed 001 section 2.2 shows it, validated by msgspec."""

from __future__ import annotations

from typing import Annotated, Literal

from msgspec import Meta, Struct

from reos_memory.models import (
    EvidenceSource,
    Frustration,
    MemoryKey,
    MemoryKind,
    MemoryScope,
    MemoryText,
    MemoryTier,
    OwnerId,
    OwnerType,
)


class WriterOp(Struct, kw_only=True, forbid_unknown_fields=True):
    """One decision: ADD a memory, UPDATE one (by key or memory_id), or DEPRECATE one."""

    op: Literal["ADD", "UPDATE", "DEPRECATE"]
    scope: MemoryScope = "project"
    owner_type: OwnerType | None = None
    owner_id: OwnerId | None = None
    kind: MemoryKind | None = None
    tier: MemoryTier = "short_term"
    polarity: Literal[-1, 1] = 1
    key: MemoryKey | None = None
    text: MemoryText | None = None
    ttl_days: Annotated[int, Meta(ge=1, le=3650)] | None = None
    confidence: Annotated[float, Meta(ge=0.0, le=1.0)] | None = None
    memory_id: Annotated[str, Meta(min_length=1, max_length=128)] | None = None
    path_prefix: Annotated[str, Meta(min_length=1, max_length=1024)] | None = None
    reason: Annotated[str, Meta(max_length=1000)] | None = None


class EpisodeEvidence(Struct, kw_only=True, forbid_unknown_fields=True):
    episode_id: str | None = None
    source: EvidenceSource | None = None
    frustration: Frustration | None = None


class WriterOutput(Struct, kw_only=True, forbid_unknown_fields=True):
    """What one Memory Writer call returns: at most 20 ops for one episode."""

    ops: Annotated[list[WriterOp], Meta(max_length=20)]
    episode_evidence: EpisodeEvidence | None = None
