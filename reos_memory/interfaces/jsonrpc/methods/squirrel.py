"""squirrel/* - the memory of a coding assistant (seed 001)."""

from __future__ import annotations

from reos_memory.errors import (
    Cancelled,
    Conflict,
    NotFound,
    PayloadTooLarge,
    PolicyError,
)
from reos_memory.interfaces.jsonrpc.methods import REGISTRY
from reos_memory.interfaces.jsonrpc.server import RequestContext
from reos_memory.squirrel import api as t

method = REGISTRY.method


@method(
    "squirrel/ingest",
    params=t.IngestParams,
    result=t.IngestResult,
    kind="pipeline",
    errors=[Conflict, PayloadTooLarge, PolicyError],
)
def ingest(ctx: RequestContext, p: t.IngestParams) -> t.IngestResult:
    """Take events of a session; cut, store and process the episodes they complete.

    Events accumulate per session. An episode is cut on a task boundary (a new user request about
    a different task), on severe frustration followed by success, at `session_end`, and when it
    reaches `max_episode_events`. Text Squirrel injected (its `<squirrel-context>` blocks) is
    stripped first, then secrets are redacted and snippets capped. Each cut episode that passes
    the pre-filter gets one Memory Writer call: the offline writer's ops are committed before the
    reply; an LLM writer's call runs in the background (outcome `queued`).
    """
    return ctx.app.squirrel.ingest(p)


@method(
    "squirrel/ingest_transcript",
    params=t.IngestTranscriptParams,
    result=t.TranscriptResult,
    kind="pipeline",
    errors=[Conflict, PolicyError],
)
def ingest_transcript(ctx: RequestContext, p: t.IngestTranscriptParams) -> t.TranscriptResult:
    """Ingest a coding agent's session log from where it was last read.

    `agent` auto-detects the format from the file's name and first records. A per-file cursor
    (position, parse state and the log's identity) makes it idempotent: a record is never
    ingested twice or skipped, appended lines are read next time, a truncated or replaced file is read
    again from the start (`rewritten`). Malformed lines and unknown record types are counted and
    skipped. Episodes are cut as in `squirrel/ingest`. The session ends (its open episode is cut)
    when `session_end` is true, or, when it is omitted, once the file has been idle for
    `session_idle_minutes`.
    """
    return ctx.app.squirrel.ingest_transcript(p)


@method(
    "squirrel/flush",
    params=t.FlushParams,
    result=t.FlushResult,
    kind="pipeline",
    errors=[PolicyError],
)
def flush(ctx: RequestContext, p: t.FlushParams) -> t.FlushResult:
    """Cut the open episode of a session (or of every session of the project) and process it.

    The offline writer runs inside the request. An LLM writer runs in the background (outcome
    `queued`, memories appear when its call ends) unless `wait` is true.
    """
    return ctx.app.squirrel.flush(p)


@method(
    "squirrel/get_task_context",
    params=t.ContextParams,
    result=t.ContextResult,
    kind="write",
    errors=[NotFound, PolicyError],
)
def get_task_context(ctx: RequestContext, p: t.ContextParams) -> t.ContextResult:
    """The memories a task needs, ready to paste into an agent's context, within a token budget.

    Filters: the project and global memories, scope repo_path by `path`, the owner, status
    provisional or active, not expired. Key lookup first (`project.*`, `user.*`), then vector and
    keyword search; ranked by similarity, status, tier, kind and use (weights from the policy);
    emergency guards first. `tokens` never exceeds `context_budget_tokens` (count: README).
    The similarity floor is hybrid: a memory just under it passes when it holds a distinctive
    word of the task (policy `keyword_floor_relief`, `distinctive_share`).
    Counts an opportunity for every memory that passed the filters and similarity floor and a
    use for every memory returned; the request is recorded under `context_id` for feedback.
    `considered` counts every memory looked at; `dropped` says why each one not returned was
    left out (under_floor, filtered, not_relevant, already_injected, over_budget).
    """
    return ctx.app.squirrel.get_task_context(p)


@method(
    "squirrel/search",
    params=t.SquirrelSearchParams,
    result=t.SquirrelSearchResult,
    errors=[PolicyError],
)
def search(ctx: RequestContext, p: t.SquirrelSearchParams) -> t.SquirrelSearchResult:
    """Search memories by meaning and keywords (all projects when none is given); counts nothing."""
    return ctx.app.squirrel.search(p)


@method(
    "squirrel/memories/add",
    params=t.MemoryAddParams,
    result=t.MemoryAddResult,
    kind="write",
    errors=[PolicyError],
)
def memories_add(ctx: RequestContext, p: t.MemoryAddParams) -> t.MemoryAddResult:
    """Remember something explicitly, through the same commit layer as the writer.

    It starts `provisional` (evidence source explicit_statement). A near-duplicate of a live
    memory of the same project, scope, owner and kind is not stored twice: `deduplicated_into`
    names the memory that gained the evidence. A `key` already held replaces that memory.
    """
    return ctx.app.squirrel.add_memory(p)


@method("squirrel/memories/list", params=t.MemoryListParams, result=t.MemoryListResult)
def memories_list(ctx: RequestContext, p: t.MemoryListParams) -> t.MemoryListResult:
    """List memories in creation order with their metrics, filtered; paged by `cursor`."""
    return ctx.app.squirrel.list_memories(p)


@method(
    "squirrel/memories/get", params=t.MemoryIdParams, result=t.MemoryGetResult, errors=[NotFound]
)
def memories_get(ctx: RequestContext, p: t.MemoryIdParams) -> t.MemoryGetResult:
    """One memory with its evidence and metrics."""
    return ctx.app.squirrel.get_memory(p.memory_id)


@method(
    "squirrel/memories/update",
    params=t.MemoryUpdateParams,
    result=t.MemoryResult,
    kind="write",
    errors=[NotFound, Conflict],
)
def memories_update(ctx: RequestContext, p: t.MemoryUpdateParams) -> t.MemoryResult:
    """Edit a memory in place; a new `text` is embedded again. `clear_ttl` / `clear_key` unset.

    A key names one live memory: a key held by another live memory is a conflict.
    """
    return ctx.app.squirrel.update_memory(p)


@method(
    "squirrel/memories/deprecate",
    params=t.MemoryIdParams,
    result=t.MemoryResult,
    kind="write",
    errors=[NotFound],
)
def memories_deprecate(ctx: RequestContext, p: t.MemoryIdParams) -> t.MemoryResult:
    """Mark a memory deprecated: kept for history, never returned by get_task_context."""
    return ctx.app.squirrel.deprecate(p.memory_id)


@method(
    "squirrel/memories/forget",
    params=t.MemoryIdParams,
    result=t.ForgetResult,
    kind="write",
    errors=[NotFound],
)
def memories_forget(ctx: RequestContext, p: t.MemoryIdParams) -> t.ForgetResult:
    """Erase a memory for good: its row, vector, evidence, metrics and injection records."""
    return ctx.app.squirrel.forget(p.memory_id)


@method("squirrel/episodes/list", params=t.EpisodeListParams, result=t.EpisodeListResult)
def episodes_list(ctx: RequestContext, p: t.EpisodeListParams) -> t.EpisodeListResult:
    """List episodes (stats, pre-filter decision, outcome) without their events; paged."""
    return ctx.app.squirrel.list_episodes(p)


@method(
    "squirrel/episodes/get", params=t.EpisodeIdParams, result=t.EpisodeGetResult, errors=[NotFound]
)
def episodes_get(ctx: RequestContext, p: t.EpisodeIdParams) -> t.EpisodeGetResult:
    """One episode with its compressed events and the ops the writer committed."""
    return ctx.app.squirrel.get_episode(p.episode_id)


@method(
    "squirrel/episodes/retry",
    params=t.EpisodeRetryParams,
    result=t.EpisodeRetryResult,
    kind="pipeline",
    errors=[NotFound, PolicyError],
)
def episodes_retry(ctx: RequestContext, p: t.EpisodeRetryParams) -> t.EpisodeRetryResult:
    """Run the writer again on an unprocessed episode, or on all of them (of a project).

    Like flush: inside the request for the offline writer or with `wait`, else queued.
    """
    return ctx.app.squirrel.retry(p)


@method(
    "squirrel/feedback",
    params=t.FeedbackParams,
    result=t.FeedbackResult,
    kind="write",
    errors=[NotFound, PolicyError],
)
def feedback(ctx: RequestContext, p: t.FeedbackParams) -> t.FeedbackResult:
    """How a task that received a context went; counts once per context.

    Fewer errors or retries than the project's running averages give each injected memory a
    suspected regret hit and `estimated_regret_saved += alpha*d_err + beta*d_retry` (policy
    weights); then the averages take the outcome in.
    """
    return ctx.app.squirrel.feedback(p)


@method(
    "squirrel/cr_memory/run",
    params=t.CrMemoryParams,
    result=t.CrMemoryResult,
    kind="heavy",
    errors=[Cancelled, PolicyError],
)
def cr_memory_run(ctx: RequestContext, p: t.CrMemoryParams) -> t.CrMemoryResult:
    """Promote useful memories and deprecate useless ones by the policy (seed 001 section 4.4).

    Also TTL expiry and inactivity decay; protected kinds are never deprecated by time alone.
    Every decision comes with its reason and metrics; `dry_run` changes nothing.
    """
    return ctx.app.squirrel.cr_memory(p, cancelled=ctx.cancelled.is_set)


@method("squirrel/policy/get", params=t.PolicyParams, result=t.PolicyResult, errors=[PolicyError])
def policy_get(ctx: RequestContext, p: t.PolicyParams) -> t.PolicyResult:
    """The effective memory policy (default < user file < project file) and its sources."""
    return ctx.app.squirrel.policy_info(p)


@method("squirrel/activity", params=t.ActivityParams, result=t.ActivityResult)
def activity(ctx: RequestContext, p: t.ActivityParams) -> t.ActivityResult:
    """Day by day: memories learned by kind, contexts and injections, writer calls and tokens."""
    return ctx.app.squirrel.activity(p)


@method("squirrel/status", params=t.StatusParams, result=t.StatusResult)
def status(ctx: RequestContext, p: t.StatusParams) -> t.StatusResult:
    """Memories by status, kind and tier; episodes by outcome; writer calls and tokens per day."""
    return ctx.app.squirrel.status()


@method(
    "squirrel/share",
    params=t.ShareParams,
    result=t.ShareResult,
    kind="pipeline",
    errors=[NotFound],
)
def share(ctx: RequestContext, p: t.ShareParams) -> t.ShareResult:
    """Propose a memory of one's own to a team (`team_id`) or the org on the team server.

    The proposal (what the memory says, not its id) goes through the outbox as
    `team/shares/propose` with an idempotency key; a writer or admin approves it there and it
    becomes a team memory. `team.state` is `sent`, `queued` (the server is unreachable: sent at
    the next sync, exactly once) or `refused` (with the server's error). Sharing the same text to
    the same place again is the same proposal.
    """
    return ctx.app.squirrel.share(p)


@method("squirrel/team/status", params=t.TeamStatusParams, result=t.TeamStatusResult)
def team_status(ctx: RequestContext, p: t.TeamStatusParams) -> t.TeamStatusResult:
    """The team server this service uses: URL, key set or not, cursor, last pull, outbox.

    The key itself is never shown. `outbox` counts items by state; `refused` lists the newest
    items the server refused, with its error; `pending` the oldest still to send.
    """
    return ctx.app.squirrel.team_status()


@method("squirrel/team/sync", params=t.TeamSyncParams, result=t.TeamSyncResult, kind="heavy")
def team_sync(ctx: RequestContext, p: t.TeamSyncParams) -> t.TeamSyncResult:
    """Send the outbox, then pull the team server's change log into the local cache, now.

    Items go in order; one the server refuses is kept with its error and never resent; the
    server down stops the drain (`status` offline) and keeps the rest. Each pulled page is
    applied in one transaction with its cursor; a pull only touches cached team and org
    memories, never a user's own. Bounded by `timeout_s`.
    """
    return ctx.app.squirrel.team_sync(p)
