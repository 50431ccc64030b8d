"""Episodes a member's machine gives the team's Memory Writer (issue 21,
`squirrel/ingest_episode`), when the user turned `team_share_episodes` on.

What is sent is the episode as this machine stored it: already cut, compressed and redacted
(`squirrel/ingest/episodes.py`), its events turned back into `EventIn` records that compress on
the server to the same signals (errors, tests, corrections, frustration, the agent's notes), so
the server's prefilter and offline writer see what the local ones saw. Only episodes the local
prefilter found worth a writer call are sent, and they go through the outbox: queuing is one
local write, the network is reached on the next sync, and the idempotency key (the sending
key's id and the local episode id, the server's own default) makes a replay apply once."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec

from reos_memory.models import Episode, EventIn
from reos_memory.squirrel import api
from reos_memory.squirrel import team_api as wire
from reos_memory.squirrel.sync.sync import TeamSync
from reos_memory.store import Database
from reos_memory.store import episodes as episode_sql

METHOD: wire.TeamMethod = "squirrel/ingest_episode"
MAX_EVENTS = 5000  # IngestEpisodeParams.events
# the server takes bodies up to 1 MiB (team_http MAX_BODY_BYTES); the envelope and the other
# params take a few hundred bytes, the rest is left for the events
MAX_EVENT_BYTES = (1 << 20) - 16_384
_enc = msgspec.json.Encoder()


def to_event(e: dict[str, Any]) -> EventIn:
    """A stored (compressed, redacted) event as an `EventIn` that compresses to the same event.

    Compression keeps signals and drops the text they were read from, so each is given back in
    a text it is read from again: the error line at the head of a result's snippet, the agent's
    notes as its message, a compaction's notes as its "Errors and fixes" section, a test's
    outcome as its command's exit code.
    The error flag is given explicitly (`is_error`), so a result is not judged again by its
    snippet alone."""
    kind, role = e["kind"], e["role"]
    text = e.get("text")
    snippet = e.get("raw_snippet")
    notes: list[str] = e.get("notes") or []
    if e.get("origin") == "compaction":
        text = "Errors and fixes:\n" + "\n".join(f"- {n}" for n in notes) if notes else None
    elif kind == "message" and role != "user":
        text = "\n\n".join(notes) if notes else snippet or e.get("summary")
        snippet = None
    elif kind == "tool_result" and e.get("error_line") and e["error_line"] not in (snippet or ""):
        snippet = f"{e['error_line']}\n{snippet or ''}".strip()
    error = bool(e.get("error"))
    exit_code = e.get("exit_code")
    if exit_code is None and kind == "tool_result" and e.get("test"):
        exit_code = 0 if e["test"] == "passed" else 1  # what a test command exits with
    return EventIn(
        role=role,
        kind=kind,
        ts=e.get("ts"),
        tool_name=e.get("tool_name"),
        file=e.get("file"),
        command=e.get("command"),
        call_id=e.get("call_id"),
        exit_code=exit_code,
        # a result or call without the flag was judged no error: say so, not "unknown"
        is_error=error if kind != "message" else None,
        rejected=bool(e.get("rejected")),
        origin=e.get("origin"),
        text=text,
        summary=e.get("summary"),
        raw_snippet=snippet,
    )


def _rank(e: dict[str, Any]) -> int:
    """How much an event tells the writer (0: most; kept longest when an episode is trimmed):
    what the user said, errors, rejections, test outcomes and the agent's notes; then tool
    calls (retries are counted on them); then the rest."""
    if (e["role"] == "user" and e["kind"] == "message") or e.get("error") or e.get("rejected"):
        return 0
    if e.get("notes") or e.get("test") or e.get("origin"):
        return 0
    return 1 if e["kind"] == "tool_call" else 2


def fit(events: list[dict[str, Any]], max_events: int, max_bytes: int) -> list[int]:
    """The indexes of the events to send, in order: all when they fit the server's limits,
    else the least informative dropped first (within a rank, the earliest: the end of an
    episode is where it resolved)."""
    sizes = [len(_enc.encode(to_event(e))) + 1 for e in events]
    total = sum(sizes)
    keep = set(range(len(events)))
    order = sorted(keep, key=lambda i: (-_rank(events[i]), i))
    for i in order:
        if len(keep) <= max_events and total <= max_bytes:
            break
        keep.discard(i)
        total -= sizes[i]
    return sorted(keep)


@dataclass(frozen=True)
class Limits:
    max_events: int = MAX_EVENTS
    max_bytes: int = MAX_EVENT_BYTES


def params_for(ep: Episode, limits: Limits) -> tuple[wire.IngestEpisodeParams, int]:
    """The request for one stored episode and how many of its events were left out to fit."""
    events = ep.events or []
    keep = fit(events, limits.max_events, limits.max_bytes)
    p = wire.IngestEpisodeParams(
        project_id=ep.project_id,
        episode_id=ep.id,
        events=[to_event(events[i]) for i in keep],
        session_id=ep.session_id,
        cut_reason=ep.cut_reason[:64],
    )
    return p, len(events) - len(keep)


def idempotency_key(key_id: str, episode_id: str) -> str:
    """The key a shared episode is sent under: the server's default for it (the sending key and
    the machine's episode id), so it is written once however often it is sent."""
    return f"episode:{key_id}:{episode_id}"[:128]


def share(
    team: TeamSync, db: Database, episode_id: str, limits: Limits | None = None
) -> api.TeamEpisode | None:
    """Queue one stored episode for the team's Memory Writer (None: it has no events, or was
    trimmed to nothing). Sent by the next sync; queuing it again is the same item."""
    ep = db.read(lambda c: episode_sql.get_episode(c, episode_id))
    if ep is None or not ep.events:
        return None
    params, dropped = params_for(ep, limits or Limits())
    if not params.events:
        return None
    item = team.enqueue(METHOD, params, key=idempotency_key(team.client.key_id, ep.id))
    if dropped and team.log:
        team.log.info("team_episode_trimmed", episode_id=ep.id, dropped=dropped)
    return api.TeamEpisode(
        state={"pending": "queued", "done": "sent"}.get(item.state, "refused"),  # type: ignore[arg-type]
        idempotency_key=item.idempotency_key,
        events=len(params.events),
        dropped_events=dropped,
    )
