"""The memory methods of the team server: the local service's names and params (plus
`idempotency_key` on writes), answered for the org and teams of the caller's key."""

from __future__ import annotations

from reos_memory.errors import Conflict, Forbidden, InvalidInput, NotFound
from reos_memory.interfaces.team_http.registry import registry
from reos_memory.squirrel import api
from reos_memory.squirrel import team_api as tapi
from reos_memory.team.team_service import Caller, TeamService, who

_WRITE_ERRORS = [Forbidden, NotFound, Conflict, InvalidInput]


@registry.method(
    "squirrel/memories/add", params=tapi.TeamMemoryAddParams, result=tapi.TeamMemoryResult,
    kind="write", errors=_WRITE_ERRORS,
)  # fmt: skip
def memories_add(
    svc: TeamService, caller: Caller, p: tapi.TeamMemoryAddParams
) -> tapi.TeamMemoryResult:
    """Add a team memory (writer); duplicates are not added twice, a held key gets a new version."""
    return svc.memories.add(who(caller), p)


@registry.method(
    "squirrel/memories/update", params=tapi.TeamMemoryUpdateParams,
    result=tapi.TeamMemoryResult, kind="write", errors=_WRITE_ERRORS,
)  # fmt: skip
def memories_update(
    svc: TeamService, caller: Caller, p: tapi.TeamMemoryUpdateParams
) -> tapi.TeamMemoryResult:
    """A new version of a team memory (writer); the later write wins unless expected_version."""
    return svc.memories.update(who(caller), p)


@registry.method(
    "squirrel/memories/deprecate", params=tapi.TeamMemoryIdParams, result=tapi.TeamMemoryResult,
    kind="write", errors=_WRITE_ERRORS,
)  # fmt: skip
def memories_deprecate(
    svc: TeamService, caller: Caller, p: tapi.TeamMemoryIdParams
) -> tapi.TeamMemoryResult:
    """Deprecate a team memory (writer)."""
    return svc.memories.deprecate(who(caller), p)


@registry.method(
    "squirrel/memories/forget", params=tapi.TeamMemoryIdParams, result=tapi.TeamForgetResult,
    kind="write", errors=_WRITE_ERRORS,
)  # fmt: skip
def memories_forget(
    svc: TeamService, caller: Caller, p: tapi.TeamMemoryIdParams
) -> tapi.TeamForgetResult:
    """Delete a team memory with its history (writer); caches drop it on their next pull."""
    return svc.memories.forget(who(caller), p)


@registry.method(
    "squirrel/memories/get", params=api.MemoryIdParams, result=tapi.TeamMemoryGetResult,
    errors=[NotFound],
)  # fmt: skip
def memories_get(
    svc: TeamService, caller: Caller, p: api.MemoryIdParams
) -> tapi.TeamMemoryGetResult:
    """A team memory with its metrics and earlier versions."""
    return svc.memories.get(who(caller), p)


@registry.method(
    "squirrel/memories/list", params=api.MemoryListParams, result=tapi.TeamMemoryListResult,
    errors=[NotFound, InvalidInput],
)  # fmt: skip
def memories_list(
    svc: TeamService, caller: Caller, p: api.MemoryListParams
) -> tapi.TeamMemoryListResult:
    """The team and org memories the key reaches, newest change first, paged."""
    return svc.memories.list(who(caller), p)


@registry.method("squirrel/changes/pull", params=tapi.PullParams, result=tapi.PullResult)
def changes_pull(svc: TeamService, caller: Caller, p: tapi.PullParams) -> tapi.PullResult:
    """The changes after a machine's cursor, in the server's order (what its cache applies)."""
    return svc.memories.pull(who(caller), p)


@registry.method(
    "squirrel/usage/report", params=tapi.UsageParams, result=tapi.UsageResult, kind="write",
    errors=[Conflict],
)  # fmt: skip
def usage_report(svc: TeamService, caller: Caller, p: tapi.UsageParams) -> tapi.UsageResult:
    """Opportunities, uses and regret a member's machine counted for team memories."""
    return svc.memories.report_usage(who(caller), p)


@registry.method(
    "team/shares/propose", params=tapi.ShareProposeParams, result=tapi.ShareResult,
    kind="write", errors=[NotFound, InvalidInput, Conflict],
)  # fmt: skip
def shares_propose(
    svc: TeamService, caller: Caller, p: tapi.ShareProposeParams
) -> tapi.ShareResult:
    """Propose a personal memory to the team (any role; a writer decides)."""
    return svc.shares.propose(who(caller), p)


@registry.method("team/shares/list", params=tapi.ShareListParams, result=tapi.ShareListResult)
def shares_list(svc: TeamService, caller: Caller, p: tapi.ShareListParams) -> tapi.ShareListResult:
    """The shares awaiting a decision (or decided); a reader key sees its own proposals."""
    return svc.shares.list(who(caller), p)


@registry.method(
    "team/shares/approve", params=tapi.ShareDecideParams, result=tapi.ShareResult, kind="write",
    errors=_WRITE_ERRORS,
)  # fmt: skip
def shares_approve(svc: TeamService, caller: Caller, p: tapi.ShareDecideParams) -> tapi.ShareResult:
    """Approve a pending share: it becomes a team memory (writer)."""
    return svc.shares.approve(who(caller), p)


@registry.method(
    "team/shares/reject", params=tapi.ShareDecideParams, result=tapi.ShareResult, kind="write",
    errors=_WRITE_ERRORS,
)  # fmt: skip
def shares_reject(svc: TeamService, caller: Caller, p: tapi.ShareDecideParams) -> tapi.ShareResult:
    """Reject a pending share, with a reason (writer)."""
    return svc.shares.reject(who(caller), p)


@registry.method(
    "squirrel/ingest_episode", params=tapi.IngestEpisodeParams,
    result=tapi.IngestEpisodeResult, kind="write", errors=_WRITE_ERRORS,
)  # fmt: skip
def ingest_episode(
    svc: TeamService, caller: Caller, p: tapi.IngestEpisodeParams
) -> tapi.IngestEpisodeResult:
    """An episode cut and redacted on a member's machine -> the team's Memory Writer -> team
    memories (writer); sent again with the same episode_id, it is answered once."""
    return svc.episodes.ingest(who(caller), p)


@registry.method(
    "squirrel/episodes/list", params=api.EpisodeListParams, result=api.EpisodeListResult
)
def episodes_list(
    svc: TeamService, caller: Caller, p: api.EpisodeListParams
) -> api.EpisodeListResult:
    """The episodes members sent that the key reaches, newest first, without their events."""
    return svc.episodes.list_episodes(who(caller), p)


@registry.method(
    "squirrel/episodes/get", params=api.EpisodeIdParams, result=api.EpisodeGetResult,
    errors=[NotFound],
)  # fmt: skip
def episodes_get(svc: TeamService, caller: Caller, p: api.EpisodeIdParams) -> api.EpisodeGetResult:
    """One episode with its events and the writer's ops; another org's or team's is not found."""
    return svc.episodes.get_episode(who(caller), p.episode_id)


@registry.method("squirrel/activity", params=api.ActivityParams, result=api.ActivityResult)
def activity(svc: TeamService, caller: Caller, p: api.ActivityParams) -> api.ActivityResult:
    """Day by day over what the key reaches: memories learned by kind, contexts and the
    memories in them, episodes sent to the team's writer."""
    return svc.memories.activity(who(caller), p)


@registry.method("squirrel/status", params=api.StatusParams, result=tapi.TeamStatusResult)
def status(svc: TeamService, caller: Caller, p: api.StatusParams) -> tapi.TeamStatusResult:
    """What the key reaches: memories by status, kind and tier, episodes, pending shares."""
    return svc.memories.status(who(caller))


@registry.method(
    "squirrel/policy/get", params=api.PolicyParams, result=api.PolicyResult,
    errors=[InvalidInput],
)  # fmt: skip
def policy_get(svc: TeamService, caller: Caller, p: api.PolicyParams) -> api.PolicyResult:
    """The team server's memory policy and the files it came from."""
    return svc.memories.policy_get(p)


@registry.method(
    "squirrel/search", params=api.SquirrelSearchParams, result=api.SquirrelSearchResult,
    errors=[NotFound, InvalidInput],
)  # fmt: skip
def search(
    svc: TeamService, caller: Caller, p: api.SquirrelSearchParams
) -> api.SquirrelSearchResult:
    """Team and org memories matching a query by vector and full text, ranked as locally."""
    return svc.retrieval.search(who(caller), p)


@registry.method(
    "squirrel/get_task_context", params=api.ContextParams, result=api.ContextResult,
    errors=[NotFound, InvalidInput],
)  # fmt: skip
def get_task_context(svc: TeamService, caller: Caller, p: api.ContextParams) -> api.ContextResult:
    """The team and org memories for a task within its token budget, guards first, ranked by
    the local service's ranking; counted for team CR-Memory."""
    return svc.retrieval.get_task_context(who(caller), p)


@registry.method(
    "squirrel/feedback", params=api.FeedbackParams, result=api.FeedbackResult,
    kind="write", errors=[NotFound],
)  # fmt: skip
def feedback(svc: TeamService, caller: Caller, p: api.FeedbackParams) -> api.FeedbackResult:
    """The outcome of a task that got a team context: regret hits for its memories, once."""
    return svc.learning.feedback(who(caller), p)


@registry.method(
    "squirrel/cr_memory/run", params=api.CrMemoryParams, result=api.CrMemoryResult,
    kind="write", errors=[Forbidden, InvalidInput],
)  # fmt: skip
def cr_memory_run(svc: TeamService, caller: Caller, p: api.CrMemoryParams) -> api.CrMemoryResult:
    """Team CR-Memory over every member's counts: promote, deprecate, keep (writer; a dry run
    for any role)."""
    return svc.learning.cr_memory(who(caller), p)
