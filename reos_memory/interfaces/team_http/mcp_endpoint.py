"""Team memory as Model Context Protocol tools at `/mcp` (issue 21), so Claude Code, Cursor or
any MCP client can use it without the local service.

The official SDK's Streamable HTTP transport, stateless: every POST is answered on its own (a
fresh transport, no session id, nothing kept in the process between requests), so any of N
server processes behind a load balancer can take any request, as with /rpc. A stateful session
would live in one process's memory and a request routed to another would get 404. Replies are
plain JSON (no SSE stream): a tool call is one short request and one answer.

The bearer key is checked before the SDK sees the request, by the same code as /rpc (no key or
a refused key: 401, nothing runs); the key then rides in the ASGI scope to the tool call. Every
tool calls the registered handler of its JSON-RPC twin (`memory_methods`, `team_methods`), so
roles, tenancy, redaction and the audit log are the methods' own. Tools the local MCP server
also has keep its names and argument names (`project_id` replaces `project_root`: the server
has no files), so an agent's prompt works against either."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Annotated, Literal

import anyio
import mcp.types as mt
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from msgspec import Meta
from starlette.requests import Request
from starlette.responses import Response

from reos_memory.errors import InvalidInput
from reos_memory.interfaces import mcp_tools, rpc
from reos_memory.interfaces.mcp_tools import (
    Args,
    AvoidArg,
    Context,
    Fit,
    KindArg,
    LimitArg,
    MemoryTextArg,
    QueryArg,
    TaskArg,
    fit_result,
    run_tool,
    tool_error,
)
from reos_memory.interfaces.registry import MethodSpec, convert_params
from reos_memory.interfaces.team_http.registry import NoParams, TeamRegistry
from reos_memory.interfaces.web.guard import Receive, Scope, Send
from reos_memory.json_types import JSONMapping
from reos_memory.models import Ident, MemoryKey, MemoryScope, OwnerId
from reos_memory.squirrel import api
from reos_memory.squirrel import team_api as tapi
from reos_memory.team.keys import VerifiedKey
from reos_memory.team.team_service import Caller, TeamService, WhoAmI, who

if TYPE_CHECKING:
    from structlog.typing import FilteringBoundLogger

INSTRUCTIONS = (
    "reos-memory team memory: the memories this team and organisation share for coding work."
    " At the start of a task call get_task_context with the task and the project's id, and"
    " follow the guards, invariants and preferences it returns. When the team should keep a"
    " lasting rule or a trap worth avoiding, call remember (a writer key) or propose_share (any"
    " key; a writer approves). search_memory, list_memories and get_memory read; update_memory,"
    " deprecate_memory and forget change. whoami says which org, team and role your key has."
)

TOOLS = TeamRegistry()  # tool name -> arguments Struct and function(svc, caller, args)
tool = TOOLS.method
DESTRUCTIVE = {"forget"}
# the service refuses it ("the team server has no files"); the schema does not offer it
_HIDDEN = ("project_root",)
KEY_STATE = "reos_memory_key"  # where the endpoint leaves the verified key in the ASGI scope

# as the local tool: the result holds the prompt and each memory again, with its details
MAX_BUDGET_TOKENS = 5_000
# the most tokens a result takes (the local server's default `mcp_max_result_tokens`): agents
# refuse or cut bigger ones
MAX_RESULT_TOKENS = 20_000
_FIT = {
    "search_memory": Fit(
        "matches", "a smaller limit or a narrower query", "get_memory with its memory_id"
    ),
}


def _fit(name: str, data: object) -> object:
    return fit_result(data, MAX_RESULT_TOKENS, _FIT[name]) if name in _FIT else data


Authenticate = Callable[[Request], Awaitable[VerifiedKey | Response]]

ProjectId = Annotated[
    Ident,
    Meta(
        description="The project's id, as the team's memories carry it (each memory's"
        " project_id in list_memories or search_memory); a global memory has none."
    ),
]
OwnerTypeArg = Annotated[
    Literal["team", "org"],
    Meta(description="team (default for a team key) or org (every team of the organisation)."),
]
OwnerIdArg = Annotated[
    OwnerId,
    Meta(
        description="The team's name or id (owner_type team), or the org's id; default: the"
        " key's own.",
    ),
]


class GetTaskContextArgs(Args):
    task: TaskArg
    project_id: ProjectId
    path: (
        Annotated[
            api.PathText,
            Meta(
                description="File or directory the task is about, relative to the project root;"
                " adds the memories scoped to that sub-tree."
            ),
        ]
        | None
    ) = None
    session_id: (
        Annotated[
            api.SessionId,
            Meta(description="Your session's id, if you have one (ties contexts to a session)."),
        ]
        | None
    ) = None
    budget_tokens: Annotated[
        int, Meta(ge=16, le=MAX_BUDGET_TOKENS, description="Most tokens context_prompt may take.")
    ] = 400
    owner_type: OwnerTypeArg | None = None
    owner_id: OwnerIdArg | None = None


@tool("get_task_context", params=GetTaskContextArgs, result=api.ContextResult, kind="write")
def get_task_context(svc: TeamService, caller: Caller, a: GetTaskContextArgs) -> api.ContextResult:
    """Get the memories the team holds for a task in a project: call it at the start of every task, and again when you move to another part of the code.

    Returns `context_prompt`, ready to read as instructions (guards first, then invariants and
    preferences, patterns, notes; within `budget_tokens`), and `memories` with each memory's id,
    kind, scope, score and why it was chosen. Follow guards and invariants. Counted for the
    team's memory review (opportunities and uses), as on a member's machine.
    """
    p = api.ContextParams(
        project_id=a.project_id,
        task=a.task,
        path=a.path,
        session_id=a.session_id,
        context_budget_tokens=a.budget_tokens,
        owner_type=a.owner_type,
        owner_id=a.owner_id,
    )
    out = svc.retrieval.get_task_context(who(caller), p)
    # why the others were left out is for people (squirrel/get_task_context over /rpc): up to a
    # hundred entries the budget does not bound would only cost the agent tokens
    out.dropped = []
    return out


class SearchMemoryArgs(Args):
    query: QueryArg
    project_id: (
        Annotated[
            Ident,
            Meta(
                description="Only this project's memories (and the global ones); default: every"
                " project.",
            ),
        ]
        | None
    ) = None
    limit: LimitArg = 20
    owner_type: OwnerTypeArg | None = None
    owner_id: OwnerIdArg | None = None


@tool("search_memory", params=SearchMemoryArgs, result=api.SquirrelSearchResult)
def search_memory(
    svc: TeamService, caller: Caller, a: SearchMemoryArgs
) -> api.SquirrelSearchResult:
    """Search the team and organisation memories by meaning and keywords: use it to check what the team knows about a topic, or to find a memory's id.

    Returns `matches` (id, kind, status, scope, text, score, similarity, keyword score). Changes
    nothing; for the context of a task use get_task_context instead.
    """
    p = api.SquirrelSearchParams(
        query=a.query,
        project_id=a.project_id,
        limit=a.limit,
        owner_type=a.owner_type,
        owner_id=a.owner_id,
    )
    return svc.retrieval.search(who(caller), p)


class RememberArgs(Args):
    text: MemoryTextArg
    kind: KindArg = "note"
    scope: Annotated[
        MemoryScope,
        Meta(
            description="project (one project: give project_id), global (every project),"
            " repo_path (only a sub-tree of the project: give path_prefix)."
        ),
    ] = "project"
    key: (
        Annotated[
            MemoryKey,
            Meta(
                description="Slot name such as project.package_manager: a new memory with a key"
                " already held replaces the old one (which is kept as history)."
            ),
        ]
        | None
    ) = None
    avoid: AvoidArg = False
    path_prefix: (
        Annotated[
            api.PathText,
            Meta(
                description="Sub-tree the memory applies to, relative to the project root"
                " (scope repo_path only), e.g. services/payment-api."
            ),
        ]
        | None
    ) = None
    project_id: ProjectId | None = None
    owner_type: OwnerTypeArg | None = None
    owner_id: OwnerIdArg | None = None


@tool("remember", params=RememberArgs, result=tapi.TeamMemoryResult, kind="write")
def remember(svc: TeamService, caller: Caller, a: RememberArgs) -> tapi.TeamMemoryResult:
    """Store a team memory (a writer key): call it when the user states a rule, preference or correction the whole team should follow, or you learned a trap the team's next session must know.

    The memory starts provisional (promoted by use). A near-duplicate of a live memory is not
    stored twice: `deduplicated_into` names the memory that gained the evidence. Returns the
    stored `memory` (its `id` is what get_memory, update_memory and forget take). A reader key
    can propose it instead with propose_share.
    """
    p = tapi.TeamMemoryAddParams(
        project_id=a.project_id,
        scope=a.scope,
        kind=a.kind,
        text=a.text,
        key=a.key,
        polarity=-1 if a.avoid else 1,
        path_prefix=a.path_prefix,
        owner_type=a.owner_type,
        owner_id=a.owner_id,
    )
    return svc.memories.add(who(caller), p)


@tool("forget", params=tapi.TeamMemoryIdParams, result=tapi.TeamForgetResult, kind="write")
def forget(svc: TeamService, caller: Caller, a: tapi.TeamMemoryIdParams) -> tapi.TeamForgetResult:
    """Erase a team memory for good, with its history (a writer key): call it when a memory is wrong or the team asks to forget it.

    Cannot be undone; every member's cache drops it on its next pull. To retire a memory but
    keep it readable, use deprecate_memory; to correct it, update_memory.
    """
    return svc.memories.forget(who(caller), a)


@tool("get_memory", params=api.MemoryIdParams, result=tapi.TeamMemoryGetResult)
def get_memory(svc: TeamService, caller: Caller, a: api.MemoryIdParams) -> tapi.TeamMemoryGetResult:
    """Read one team memory by id, with its usage metrics and its earlier versions (newest first).

    A memory the key cannot reach (another team's or organisation's) is answered not found.
    """
    return svc.memories.get(who(caller), a)


@tool("list_memories", params=api.MemoryListParams, result=tapi.TeamMemoryListResult)
def list_memories(
    svc: TeamService, caller: Caller, a: api.MemoryListParams
) -> tapi.TeamMemoryListResult:
    """List the team and organisation memories the key reaches, newest change first, filtered by project_id, kinds, statuses, scope, owner and key_prefix.

    Paged: pass `next_cursor` back as `cursor` for the next page (`limit` per page).
    """
    return svc.memories.list(who(caller), a)


@tool("update_memory", params=tapi.TeamMemoryUpdateParams, result=tapi.TeamMemoryResult,
      kind="write")  # fmt: skip
def update_memory(
    svc: TeamService, caller: Caller, a: tapi.TeamMemoryUpdateParams
) -> tapi.TeamMemoryResult:
    """Change a team memory (a writer key): its text, kind, tier, key, status, confidence, polarity or time to live.

    The memory keeps its id and gains a version; the earlier one stays in its history. The later
    write wins, unless `expected_version` is given and the memory has moved on (a conflict).
    """
    return svc.memories.update(who(caller), a)


@tool("deprecate_memory", params=tapi.TeamMemoryIdParams, result=tapi.TeamMemoryResult,
      kind="write")  # fmt: skip
def deprecate_memory(
    svc: TeamService, caller: Caller, a: tapi.TeamMemoryIdParams
) -> tapi.TeamMemoryResult:
    """Retire a team memory (a writer key): it no longer reaches anyone's context but stays readable, with its history."""
    return svc.memories.deprecate(who(caller), a)


@tool("propose_share", params=tapi.ShareProposeParams, result=tapi.ShareResult, kind="write")
def propose_share(svc: TeamService, caller: Caller, a: tapi.ShareProposeParams) -> tapi.ShareResult:
    """Propose a memory to the team (any key, a reader's too): a writer of the team approves or rejects it, and an approved share becomes a team memory.

    Give what the memory says (text, kind, project_id, ...) and, if it is one of the user's own
    local memories, its id as local_memory_id.
    """
    return svc.shares.propose(who(caller), a)


@tool("whoami", params=NoParams, result=WhoAmI)
def whoami(svc: TeamService, caller: Caller, a: NoParams) -> WhoAmI:
    """The organisation, team, role and key id of the API key this client uses: what it may read and write."""
    return svc.whoami(caller)


# -- the tool list and calls -----------------------------------------------------------------


def tool_definitions() -> list[mt.Tool]:
    """Every tool with its description and input JSON Schema (from its arguments Struct)."""
    return mcp_tools.tool_definitions(
        TOOLS, read_only=lambda s: s.kind == "read", destructive=DESTRUCTIVE, hidden=_HIDDEN
    )


class TeamMcp:
    """The MCP server of one team server process and its `/mcp` ASGI endpoint."""

    def __init__(
        self,
        svc: TeamService,
        log: FilteringBoundLogger,
        authenticate: Authenticate,
        max_body_bytes: int,
    ) -> None:
        self.svc = svc
        self.log = log
        self._authenticate = authenticate
        server = mcp_tools.build_server(
            "reos-memory-team", INSTRUCTIONS, TOOLS, tool_definitions(), self._call_tool
        )
        self.manager = StreamableHTTPSessionManager(
            server, json_response=True, stateless=True, max_request_body_size=max_body_bytes
        )

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """The transport's task group, for the app's lifespan."""
        async with self.manager.run():
            yield

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """`/mcp`: the key is checked first, as for /rpc; only then does the SDK read the body."""
        key = await self._authenticate(Request(scope, receive))
        if isinstance(key, Response):
            await key(scope, receive, send)
            return
        state = scope.setdefault("state", {})
        if not isinstance(state, MutableMapping):
            raise TypeError(f"the ASGI scope's state is a {type(state).__name__}")
        state[KEY_STATE] = key
        await self.manager.handle_request(scope, receive, send)

    async def _call_tool(
        self, spec: MethodSpec, arguments: JSONMapping, ctx: Context
    ) -> mt.CallToolResult:
        # the request context's `request` is the HTTP request: a Starlette Request here
        request = ctx.request if isinstance(ctx.request, Request) else None
        key = request.scope.get("state", {}).get(KEY_STATE) if request is not None else None
        if not isinstance(key, VerifiedKey):  # only reachable if the endpoint were bypassed
            return tool_error("unauthorized: an API key is required", {"reason": "unauthorized"})
        caller = Caller(key=key, request_id=uuid.uuid4().hex)
        # database work and the embedder block: a worker thread keeps the loop answering
        return await anyio.to_thread.run_sync(self._run, spec, caller, arguments)

    def _run(self, spec: MethodSpec, caller: Caller, arguments: JSONMapping) -> mt.CallToolResult:
        """Validate the arguments and run one tool (`mcp_tools.run_tool`), logged with the key."""

        def checked() -> object:
            where = rpc.find_bad_text(arguments)  # (PostgreSQL's text keeps no NUL)
            if where is not None:
                raise InvalidInput(where.removeprefix("$."), rpc.NUL_RULE)
            return spec.handler((self.svc, caller), convert_params(spec, arguments))

        return run_tool(
            spec,
            checked,
            self.log,
            fit=_fit,
            key_id=caller.key.key_id,
        )
