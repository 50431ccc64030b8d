"""What the local MCP server (stdio) and the team server's `/mcp` endpoint share: the base of the
tools' arguments, the tool list built from a method table, one way to run a tool, and the MCP
server over them. The two differ only in how a project is named (a root path on the user's
machine, an id on the team server), in who calls (the OS user, a key) and in their tools.

Running a tool: its arguments are checked against its Struct; a refusal becomes a tool error
naming the field and the rule (or the role), with the JSON-RPC error as structured content; a
bug becomes a tool error with an incident id, its details in the log only; a result is fit to
what an agent takes in (`fit`)."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Collection
from typing import Annotated, NamedTuple

import mcp.types as mt
import msgspec
from mcp.server import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from msgspec import Meta

from reos_memory import __version__
from reos_memory.errors import ReosError
from reos_memory.interfaces.registry import MethodSpec, MethodTable, input_schemas
from reos_memory.json_types import JSONMapping, JSONObject, as_object
from reos_memory.logs import Log
from reos_memory.models import MemoryKind, MemoryText
from reos_memory.squirrel.token_count import count_tokens


class Args(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Base of every tool's arguments: unknown fields are errors."""


# the arguments both sets of tools take, described once
TaskArg = Annotated[
    str,
    Meta(
        min_length=1,
        max_length=20_000,
        description="What you are about to do, in a sentence or two (the user's request will do).",
    ),
]
QueryArg = Annotated[
    str, Meta(min_length=1, max_length=10_000, description="Words or a question to look for.")
]
LimitArg = Annotated[int, Meta(ge=1, le=1000, description="Most memories to return.")]
MemoryTextArg = Annotated[
    MemoryText,
    Meta(
        description="The memory, one self-contained sentence an agent can act on, e.g."
        " 'Use pnpm, never npm.'"
    ),
]
KindArg = Annotated[
    MemoryKind,
    Meta(
        description="preference (how things are to be done here), invariant (a fact or rule of"
        " the project that must hold), pattern (a trap and what worked), guard (something never"
        " to do), note (anything else)."
    ),
]
AvoidArg = Annotated[
    bool, Meta(description="True when the memory describes what NOT to do (an anti-pattern).")
]


def tool_definitions(
    table: MethodTable,
    *,
    read_only: Callable[[MethodSpec], bool],
    destructive: Collection[str],
    hidden: Collection[str] = (),
) -> list[mt.Tool]:
    """Every tool of `table` with its description and input JSON Schema (from its arguments
    Struct), without the `hidden` fields (accepted, but not offered)."""
    specs = list(table.methods.values())
    schemas = input_schemas(specs)
    out = []
    for s in specs:
        schema = schemas[s.name]
        properties = as_object(schema.get("properties", {}), s.name)
        for name in hidden:
            properties.pop(name, None)
        out.append(
            mt.Tool(
                name=s.name,
                description=s.summary + ("\n\n" + s.description if s.description else ""),
                input_schema=schema,
                annotations=mt.ToolAnnotations(
                    read_only_hint=read_only(s),
                    destructive_hint=s.name in destructive,
                    open_world_hint=False,
                ),
            )
        )
    return out


def run_tool(
    spec: MethodSpec,
    call: Callable[[], object],
    log: Log,
    *,
    fit: Callable[[str, object], object] = lambda _name, data: data,
    **context: str,
) -> mt.CallToolResult:
    """`call()` (the tool's handler on its checked arguments) as a tool result; `context`
    goes with every log line (the key, on the team server)."""
    try:
        result = call()
    except ReosError as exc:
        log.info("tool_error", tool=spec.name, reason=exc.reason, error=exc.message, **context)
        error: JSONObject = {
            "code": exc.code,
            "reason": exc.reason,
            "message": exc.message,
            **exc.data,
        }
        return tool_error(f"{exc.reason}: {exc.message}", {"error": error})
    except Exception as exc:  # a bug: the details go to the log, never to the client
        incident = uuid.uuid4().hex[:12]
        log.exception(
            "internal_error", incident=incident, tool=spec.name, error=repr(exc), **context
        )
        return tool_error(
            f"internal_error: unexpected failure (incident {incident} in the log)",
            {"error": {"reason": "internal_error", "incident": incident}},
        )
    data = fit(spec.name, msgspec.to_builtins(result))
    return mt.CallToolResult(
        content=[mt.TextContent(text=msgspec.json.encode(data).decode())],
        # a tool result that is not an object (none is, today) goes as text only
        structured_content=data if isinstance(data, dict) else None,
    )


class Fit(NamedTuple):
    """How a tool's result gives way to an agent's limit: the list that loses its last items,
    how to ask for less, where the whole of a cut text is, and what else to keep consistent
    with the items kept (`reshape(out, data, kept)`)."""

    key: str
    less: str
    whole: str
    reshape: Callable[[JSONObject, JSONMapping, list[object]], None] | None = None


_CUT = " … [{n} more characters; the whole text: {where}]"
_TEXTS = ("content", "text")


def _tokens(data: object) -> int:
    return count_tokens(msgspec.json.encode(data).decode())


def fit_result(data: object, limit: int, fit: Fit) -> object:
    """A tool's result within `limit` tokens (Squirrel's count of its JSON): agents refuse or
    truncate bigger results (Claude Code: 25,000 tokens by default). Over the limit, single
    texts longer than the limit are cut first, then the list of results loses its last
    (least relevant, or farthest) items, and `mcp_truncated` says what was left out and how
    to ask for less."""
    if not isinstance(data, dict) or _tokens(data) <= limit:
        return data
    items = data.get(fit.key)
    if not isinstance(items, list):
        return data
    cut = 0
    items = [dict(x) if isinstance(x, dict) else x for x in items]  # ids stay as they are
    for x in items:
        if not isinstance(x, dict):
            continue
        for f in _TEXTS:
            text = x.get(f)
            if isinstance(text, str) and len(text) > limit:
                x[f] = text[:limit] + _CUT.format(n=len(text) - limit, where=fit.whole)
                cut += 1

    def keep(n: int) -> JSONObject:
        out: JSONObject = {**data, fit.key: items[:n]}
        if fit.reshape is not None:
            fit.reshape(out, data, items[:n])
        out["mcp_truncated"] = {
            "limit_tokens": limit,
            "left_out": len(items) - n,
            "texts_cut": cut,
            "ask_for_less": fit.less,
        }
        return out

    lo, hi = 0, len(items)  # the most items that fit
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if _tokens(keep(mid)) <= limit:
            lo = mid
        else:
            hi = mid - 1
    return keep(lo)


def tool_error(text: str, data: JSONObject) -> mt.CallToolResult:
    return mt.CallToolResult(
        content=[mt.TextContent(text=text)], structured_content=data, is_error=True
    )


Context = ServerRequestContext[
    object, object
]  # an MCP request's context (lifespan, transport data)


def build_server(
    name: str,
    instructions: str,
    table: MethodTable,
    tools: list[mt.Tool],
    run: Callable[[MethodSpec, JSONObject, Context], Awaitable[mt.CallToolResult]],
) -> Server[object]:
    """The MCP server: tools/list answers `tools`; tools/call of a tool of `table` awaits
    `run(spec, arguments, ctx)`, any other name is an invalid-params error naming the known
    tools."""

    async def list_tools(
        ctx: Context, params: mt.PaginatedRequestParams | None
    ) -> mt.ListToolsResult:
        return mt.ListToolsResult(tools=tools)

    async def call_tool(ctx: Context, params: mt.CallToolRequestParams) -> mt.CallToolResult:
        spec = table.methods.get(params.name)
        if spec is None:
            raise MCPError(
                mt.INVALID_PARAMS,
                f"unknown tool {params.name!r} (known: {', '.join(table.methods)})",
            )
        return await run(spec, params.arguments or {}, ctx)

    return Server(
        name,
        version=__version__,
        instructions=instructions,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
