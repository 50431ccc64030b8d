"""`reos-memory mcp`: Squirrel and the block graph as Model Context Protocol tools over stdio.

The same App as `serve` (database, embedder, catch-up indexing) behind the official MCP SDK's
low-level server. Each tool's arguments are a msgspec Struct: its JSON Schema is the tool's
`inputSchema`, and converting the arguments with the JSON-RPC registry's `convert_params` gives
the project's error messages (the field and the rule). Squirrel tools call `Squirrel` the way
`sqrl` does; the block tools call the very handlers of `memory/search` and `memory/related`.

The process lives as `serve` does (`stdio_process`): stdout carries protocol messages only, logs
are JSON lines on stderr; end of stdin, SIGTERM, SIGINT or SIGHUP (or the parent's death) stops
serving, lets running tool calls finish, closes the App and exits 0.
"""

from __future__ import annotations

import asyncio
import io
import os
import signal
import threading
from collections.abc import Callable
from typing import Annotated, Literal, cast

import anyio
import mcp.types as mt
import msgspec
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from msgspec import Meta

from reos_memory.config import Config
from reos_memory.errors import InvalidInput
from reos_memory.graph import api as gapi
from reos_memory.graph import retrieval, traversal
from reos_memory.graph.retrieval import render_markdown
from reos_memory.interfaces import mcp_tools, stdio_process
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
    run_tool,
)
from reos_memory.interfaces.registry import MethodSpec, Registry, convert_params
from reos_memory.interfaces.services import Services
from reos_memory.json_types import JSONMapping, JSONObject
from reos_memory.logs import Log
from reos_memory.models import Direction, Ident, MemoryKey, MemoryScope, RelType
from reos_memory.squirrel import api as ts

INSTRUCTIONS = (
    "reos-memory is this user's local, persistent memory for coding work. At the start of a task"
    " call get_task_context with the task (and the file or directory it is about) and follow"
    " the guards, invariants and preferences it returns. When the user states a lasting rule,"
    " preference or correction, or you learn a trap worth avoiding next time, call remember."
    " Use search_memory to look something up, forget to erase a wrong memory, flush when a"
    " session or task ends. search_blocks and related_blocks read the block graph (notes and"
    " documents stored by other agents)."
)

TOOLS: Registry[Env] = (
    Registry()
)  # the MCP tools: name -> arguments Struct and function, as for JSON-RPC
tool = TOOLS.method
READ_ONLY = {"search_memory", "search_blocks", "related_blocks"}
DESTRUCTIVE = {"forget"}


ProjectRoot = Annotated[
    ts.PathText,
    Meta(
        description="Absolute path of the project (a directory inside a git repository means the"
        " whole repository). Default: the directory the MCP server runs in."
    ),
]
SessionArg = Annotated[
    ts.SessionId,
    Meta(description="Your session's id, if you have one (ties contexts to a session)."),
]


class Env:
    """What a tool function may use: the services and the default project root."""

    def __init__(self, app: Services, cwd: str, log: Log) -> None:
        self.app = app
        self.cwd = cwd
        self.log = log
        self.calls = 0  # both counted on the event loop's thread
        self.running = 0

    @property
    def max_tokens(self) -> int:
        return int(self.app.config.mcp_max_result_tokens)

    def root(self, project_root: str | None) -> str:
        return self.cwd if project_root is None else project_root

    def call(self, spec: MethodSpec, arguments: JSONObject) -> mt.CallToolResult:
        """Validate the arguments and run one tool (`mcp_tools.run_tool`)."""
        return run_tool(
            spec,
            lambda: spec.handler(self, convert_params(spec, arguments)),
            self.log,
            fit=lambda name, data: fit_result(name, data, self.max_tokens),
        )


# -- results an agent can take in ------------------------------------------------------------


def _walk_kept(out: JSONObject, data: JSONMapping, kept_items: list[object]) -> None:
    """related_blocks cut to its nearest blocks: the depths and edges among them only."""
    result = msgspec.convert(data, gapi.RelatedResult)  # the shape `related_blocks` returned
    kept = {b for b in kept_items if isinstance(b, str)}
    out["blocks_by_depth"] = {
        d: [b for b in ids if b in kept]
        for d, ids in result.blocks_by_depth.items()
        if any(b in kept for b in ids)
    }
    out["edges"] = [
        msgspec.to_builtins(e)
        for e in result.edges
        if e.source_block_id in kept and e.target_block_id in kept
    ]
    out["truncated"] = result.truncated or len(kept_items) < len(result.visited_blocks)


def _markdown_kept(out: JSONObject, data: JSONMapping, kept_items: list[object]) -> None:
    if "markdown" in data:
        out["markdown"] = render_markdown([m for m in kept_items if isinstance(m, dict)])


# the tools whose results may outgrow an agent's limit (get_task_context fits its budget to the
# limit instead)
_FIT = {
    "search_blocks": Fit(
        "matches",
        "a smaller max_results or a narrower query",
        "blocks/get with its block_id",
        _markdown_kept,
    ),
    "search_memory": Fit("matches", "a smaller limit or a narrower query", "sqrl memories <id>"),
    "related_blocks": Fit(
        "visited_blocks", "a smaller max_nodes or depth, or fewer rel_types", "", _walk_kept
    ),
}


def fit_result(name: str, data: object, limit: int) -> object:
    """A local tool's result within `limit` tokens (`mcp_tools.fit_result`)."""
    return mcp_tools.fit_result(data, limit, _FIT[name]) if name in _FIT else data


# -- Squirrel ----------------------------------------------------------------------------------


class GetTaskContextArgs(Args):
    task: TaskArg
    project_root: ProjectRoot | None = None
    path: (
        Annotated[
            ts.PathText,
            Meta(
                description="File or directory the task is about, relative to the project root"
                " or absolute inside it; adds the memories scoped to that sub-tree."
            ),
        ]
        | None
    ) = None
    session_id: SessionArg | None = None
    budget_tokens: Annotated[
        int, Meta(ge=16, le=100_000, description="Most tokens context_prompt may take.")
    ] = 400


@tool("get_task_context", params=GetTaskContextArgs, result=ts.ContextResult, kind="write")
def get_task_context(env: Env, a: GetTaskContextArgs) -> ts.ContextResult:
    """Get the memories this project holds for a task: call it at the start of every task, and again when you move to another part of the code.

    Returns `context_prompt`, ready to read as instructions (guards first, then invariants and
    preferences, patterns, notes; within `budget_tokens`), and `memories` with each memory's id,
    kind, scope, score and why it was chosen. Follow guards and invariants; a memory that is
    wrong can be erased with `forget`. Records the request (memories gain a use). The budget is
    at most a quarter of the server's result limit (`mcp_max_result_tokens`, 20,000 tokens).
    """
    p = ts.ContextParams(
        project_root=env.root(a.project_root),
        task=a.task,
        path=a.path,
        session_id=a.session_id,
        # the result holds the prompt and each memory again, with its details
        context_budget_tokens=min(a.budget_tokens, env.max_tokens // 4),
    )
    out = env.app.squirrel.get_task_context(p)
    # why the others were left out is for people (squirrel/get_task_context, sqrl context
    # --json): up to a hundred entries the budget does not bound would only cost the agent tokens
    out.dropped = []
    return out


class SearchMemoryArgs(Args):
    query: QueryArg
    project_root: ProjectRoot | None = None
    limit: LimitArg = 20


@tool("search_memory", params=SearchMemoryArgs, result=ts.SquirrelSearchResult)
def search_memory(env: Env, a: SearchMemoryArgs) -> ts.SquirrelSearchResult:
    """Search the project's memories (and the global ones) by meaning and keywords: use it to check what is known about a topic, or to find a memory's id.

    Returns `matches` (id, kind, status, scope, text, score, similarity, keyword score). Changes
    nothing; for the context of a task use get_task_context instead.
    """
    p = ts.SquirrelSearchParams(query=a.query, project_root=env.root(a.project_root), limit=a.limit)
    return env.app.squirrel.search(p)


class RememberArgs(Args):
    text: MemoryTextArg
    kind: KindArg = "note"
    scope: Annotated[
        MemoryScope,
        Meta(
            description="project (this project), global (every project of the user;"
            " project_root is ignored), repo_path (only a sub-tree of the project: give"
            " path_prefix)."
        ),
    ] = "project"
    key: (
        Annotated[
            MemoryKey,
            Meta(
                description="Slot name such as project.package_manager or user.language: a new"
                " memory with a key already held replaces the old one."
            ),
        ]
        | None
    ) = None
    avoid: AvoidArg = False
    path_prefix: (
        Annotated[
            str,
            Meta(
                min_length=1,
                max_length=1024,
                description="Sub-tree the memory applies to, relative to the project root"
                " (scope repo_path only), e.g. services/payment-api.",
            ),
        ]
        | None
    ) = None
    project_root: ProjectRoot | None = None


@tool("remember", params=RememberArgs, result=ts.MemoryAddResult, kind="write")
def remember(env: Env, a: RememberArgs) -> ts.MemoryAddResult:
    """Store a memory explicitly: call it when the user states a lasting rule, preference or correction ("always ...", "never ...", "we use X here"), or when you learned something the next session must know.

    The memory starts provisional (promoted by use). A near-duplicate of a live memory is not
    stored twice: `deduplicated_into` then names the memory that gained the evidence. Returns the
    stored `memory` (its `id` is what forget takes).
    """
    from reos_memory.squirrel.writer.schema import WriterOp

    fields = {
        "op": "ADD",
        "scope": a.scope,
        "kind": a.kind,
        "tier": "short_term",
        "polarity": -1 if a.avoid else 1,
        "key": a.key,
        "text": a.text,
        "path_prefix": a.path_prefix,
    }
    try:
        msgspec.convert(fields, WriterOp)  # its rules, with the argument they concern
    except msgspec.ValidationError as exc:
        msg, _, at = str(exc).rpartition(" - at `$.")
        name = at.rstrip("`")
        raise InvalidInput("avoid" if name == "polarity" else name, msg or str(exc)) from None
    # as `sqrl add`: a global memory belongs to no project
    root = None if a.scope == "global" else env.root(a.project_root)
    return env.app.squirrel.add_memory(
        ts.MemoryAddParams(
            project_root=root,
            scope=a.scope,
            kind=a.kind,
            tier="short_term",
            polarity=-1 if a.avoid else 1,
            key=a.key,
            text=a.text,
            path_prefix=a.path_prefix,
        )
    )


class ForgetArgs(Args):
    memory_id: Annotated[
        ts.MemoryId,
        Meta(description="The memory's id, from get_task_context, search_memory or remember."),
    ]


@tool("forget", params=ForgetArgs, result=ts.ForgetResult, kind="write")
def forget(env: Env, a: ForgetArgs) -> ts.ForgetResult:
    """Erase a memory for good (its text, vector, evidence and metrics): call it when a memory is wrong or the user asks to forget it.

    Cannot be undone; to correct a memory, forget it and remember the right one.
    """
    return env.app.squirrel.forget(a.memory_id)


class FlushArgs(Args):
    project_root: ProjectRoot | None = None
    session_id: (
        Annotated[
            ts.SessionId,
            Meta(description="Only this session's open episode (default: every open session)."),
        ]
        | None
    ) = None


@tool("flush", params=FlushArgs, result=ts.FlushResult, kind="pipeline")
def flush(env: Env, a: FlushArgs) -> ts.FlushResult:
    """Cut the open episodes of the project's sessions now and let the Memory Writer learn from them: call it when a task or session ends.

    Returns each episode cut and its outcome (the offline writer's memories are written before
    the reply; an LLM writer's run in the background, outcome `queued`).
    """
    p = ts.FlushParams(project_root=env.root(a.project_root), session_id=a.session_id)
    return env.app.squirrel.flush(p)


# -- the block graph ---------------------------------------------------------------------------


class SearchBlocksArgs(Args):
    query: QueryArg
    act_id: Annotated[Ident, Meta(description="Only blocks of this act (workspace).")] | None = None
    max_results: Annotated[int, Meta(ge=1, le=200, description="Most matches to return.")] = 20
    mode: Annotated[
        Literal["hybrid", "vector", "keyword"],
        Meta(description="hybrid (meaning and keywords), vector (meaning only), keyword only."),
    ] = "hybrid"


@tool("search_blocks", params=SearchBlocksArgs, result=gapi.SearchResult)
def search_blocks(env: Env, a: SearchBlocksArgs) -> gapi.SearchResult:
    """Search the block graph (notes, documents and their relationships stored by agents): use it to find stored knowledge about a topic; it is not the coding memory (see search_memory).

    Semantic and keyword search fused by rank, expanded over related blocks. Returns `matches`
    (block_id, content, score, source, relationship_chain) and `markdown`, a ready "Relevant
    Memory" section.
    """
    app = env.app
    p = gapi.SearchParams(query=a.query, act_id=a.act_id, max_results=a.max_results, mode=a.mode)
    return retrieval.search(
        app.db, app.indexer, p, keyword_budget=app.config.keyword_postings_budget
    )


class RelatedBlocksArgs(Args):
    block_id: Annotated[Ident, Meta(description="The block to start from.")]
    depth: Annotated[int, Meta(ge=0, le=10, description="Most hops from the block.")] = 2
    direction: Annotated[
        Direction, Meta(description="Follow outgoing, incoming or both kinds of edges.")
    ] = "both"
    rel_types: (
        Annotated[
            list[RelType],
            Meta(max_length=14, description="Only these relationship types (default: all)."),
        ]
        | None
    ) = None
    max_nodes: Annotated[int, Meta(ge=1, le=10_000, description="Most blocks to visit.")] = 50


@tool("related_blocks", params=RelatedBlocksArgs, result=gapi.RelatedResult)
def related_blocks(env: Env, a: RelatedBlocksArgs) -> gapi.RelatedResult:
    """Walk the block graph around a block (breadth first, stronger edges first): use it after search_blocks to see what a block is connected to.

    Returns `visited_blocks`, `blocks_by_depth`, the `edges` walked (type, confidence) and
    whether `max_nodes` cut the walk.
    """
    p = gapi.RelatedParams(
        block_id=a.block_id,
        depth=a.depth,
        direction=a.direction,
        rel_types=a.rel_types,
        max_nodes=a.max_nodes,
    )
    return traversal.neighbourhood(env.app.db, p)


# -- tool list -----------------------------------------------------------------------------------


def tool_definitions() -> list[mt.Tool]:
    """Every tool with its description and input JSON Schema."""
    return mcp_tools.tool_definitions(
        TOOLS, read_only=lambda s: s.name in READ_ONLY, destructive=DESTRUCTIVE
    )


# -- serving -----------------------------------------------------------------------------------


def build_server(env: Env) -> Server[object]:
    """The MCP server: tools/list and tools/call over `env`."""

    async def run(spec: MethodSpec, arguments: JSONObject, ctx: Context) -> mt.CallToolResult:
        env.calls += 1
        env.running += 1
        try:
            # database work and the embedder block: a worker thread keeps the protocol answering
            return await anyio.to_thread.run_sync(env.call, spec, arguments)
        finally:
            env.running -= 1

    return mcp_tools.build_server("reos-memory", INSTRUCTIONS, TOOLS, tool_definitions(), run)


class _InputLines:
    """The protocol's input lines, read by a daemon thread: a signal can then stop serving while
    a read blocks (an SDK worker thread stuck in that read would keep the process alive).

    At the end of input the lines already handed over are answered before the SDK is told (it
    would answer the calls still running "Connection closed"): `printf ... | reos-memory mcp`
    gets every reply, as with `serve`."""

    def __init__(self, fd: int, limit: int, log: Log, env: Env) -> None:
        self._fd = fd
        self._limit = limit
        self._log = log
        self._env = env
        self._loop = asyncio.get_running_loop()
        self._queue: asyncio.Queue[str | None] = asyncio.Queue(maxsize=8)
        threading.Thread(target=self._read, name="mcp-stdin", daemon=True).start()

    def __aiter__(self) -> _InputLines:
        return self

    async def __anext__(self) -> str:
        line = await self._queue.get()
        if line is None:
            for _ in range(20):  # let the SDK start a task for each request it was given
                await anyio.sleep(0)
            while self._env.running:
                await anyio.sleep(0.01)
            raise StopAsyncIteration
        return line

    def _read(self) -> None:
        with os.fdopen(self._fd, "rb", buffering=1 << 16) as f:
            while line := f.readline(self._limit + 1):
                if len(line) > self._limit and not line.endswith(b"\n"):
                    while line and not line.endswith(b"\n"):  # drop the rest of the message
                        line = f.readline(1 << 20)
                    self._log.warning("message_too_large", limit=self._limit)
                    continue
                text = line.decode("utf-8", "replace").strip()
                if text and not self._put(text):
                    return
        self._put(None)

    def _put(self, item: str | None) -> bool:
        try:
            asyncio.run_coroutine_threadsafe(self._queue.put(item), self._loop).result()
        except (RuntimeError, asyncio.CancelledError):  # the loop has stopped
            return False
        return True


async def _watch_signals(scope: anyio.CancelScope, stop: dict[str, str], log: Log) -> None:
    """Stop serving on a stop signal (SIGTERM, SIGINT, SIGHUP; the parent watch sends SIGTERM)."""
    try:
        receiver = anyio.open_signal_receiver(*stdio_process.STOP_SIGNALS)
        with receiver as received:
            async for signum in received:
                stop["reason"] = signal.Signals(signum).name
                log.info("signal", signal=stop["reason"])
                scope.cancel()  # running tool calls finish first (their threads are waited for)
                return
    except NotImplementedError:  # Windows: the default handlers stay
        return


async def _serve(env: Env, proto_in: int, proto_out: int) -> str:
    server = build_server(env)
    stop = {"reason": "end_of_input"}
    lines = _InputLines(proto_in, env.app.config.max_message_bytes, env.log, env)
    out = anyio.wrap_file(
        io.TextIOWrapper(os.fdopen(proto_out, "wb"), encoding="utf-8", newline="\n")
    )
    async with anyio.create_task_group() as tg:
        tg.start_soon(_watch_signals, tg.cancel_scope, stop, env.log)
        # the SDK only iterates its stdin (`async for line in stdin`), which _InputLines does
        stdin = cast("anyio.AsyncFile[str]", lines)
        async with stdio_server(stdin=stdin, stdout=out) as (read, write):
            await server.run(read, write, server.create_initialization_options())
        tg.cancel_scope.cancel()
    return stop["reason"]


def _load() -> None:
    """What the tools run on, imported before the model starts loading (both would wait on the
    GIL)."""
    import reos_memory.squirrel.facade  # noqa: F401


def run_mcp(config: Config, open_app: Callable[[Log], Services]) -> int:
    """Serve MCP on stdin/stdout until end of input, a signal or the parent's death; `open_app(log)`
    opens the App the tools work on."""

    def serve(
        app: Services, _: None, stdio: stdio_process.Stdio, log: Log, stopped: JSONObject
    ) -> None:
        env = Env(app, os.getcwd(), log)
        stopped["reason"] = "error"
        try:
            stopped["reason"] = anyio.run(
                _serve, env, stdio.proto_in, stdio.proto_out, backend="asyncio"
            )
        finally:
            stopped["tool_calls"] = env.calls

    return stdio_process.run(
        config,
        open_app,
        _load,
        serve,
        command="mcp",
        greeting=(
            f"Model Context Protocol on stdin/stdout, database {config.db}. Register it with an"
            " MCP client (README: MCP server); Ctrl-D quits."
        ),
        protocol="mcp",
    )
