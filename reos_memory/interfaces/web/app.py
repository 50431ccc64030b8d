"""The web UI's pages (issue 22): Starlette routes rendering Jinja2 templates (autoescaped: a
memory's text is always text), each reading and writing through Squirrel's service, the same
methods JSON-RPC, MCP and `sqrl` call. Forms work without JavaScript; `static/ui.js` only adds
conveniences (select all, focus). Every change is a POST with the CSRF token (guard.py)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import ParamSpec, TypedDict, TypeVar
from urllib.parse import urlencode

import jinja2
import msgspec
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from reos_memory.errors import InvalidInput, ReosError
from reos_memory.graph.api import ExportParams, ExportResult
from reos_memory.interfaces.registry import parse
from reos_memory.interfaces.web.guard import Guard, GuardMiddleware, Refused
from reos_memory.json_types import JSONMapping, JSONObject
from reos_memory.models import Episode, Memory, MemoryMetrics
from reos_memory.squirrel import api
from reos_memory.squirrel import team_api as tapi
from reos_memory.squirrel.facade import Squirrel

HERE = Path(__file__).resolve().parent
# the pages in the navigation bar (the README's UI section names each: tests/test_docs.py)
NAV = [
    ("/memories", "Memories"),
    ("/episodes", "Episodes"),
    ("/context", "What would the agent get?"),
    ("/cr-memory", "CR-Memory"),
    ("/policy", "Policy"),
    ("/activity", "Activity"),
    ("/graph", "Block graph"),
]
PAGE_SIZE = 50
FORM_BYTES = 64 * 1024  # the largest form a page posts (a memory's text is at most 4,000)
FORM_FIELDS = 200  # a page of ticked memories and a few more
# the HTTP status of a service error shown as a page
ERROR_STATUS = {
    "not_found": 404, "forbidden": 403, "conflict": 409, "database_unavailable": 503,
}  # fmt: skip
# the notices pages show after a change are signed, so a link cannot put words on a real page
NOTICE_KEY = secrets.token_bytes(32)
CR_SHOWN = 500  # decisions listed on the CR-Memory page (of each kind; "apply" applies all)
KINDS = ["guard", "invariant", "preference", "pattern", "note"]
TIERS = ["emergency", "long_term", "short_term"]
STATUSES = ["provisional", "active", "deprecated"]
SCOPES = ["project", "repo_path", "global"]
SORTS = {
    "created": "oldest first",
    "newest": "newest first",
    "updated": "last changed",
    "uses": "most used",
    "opportunities": "most opportunities",
    "regret_saved": "most regret saved",
}
# the status filter's choices: the live ones by default, as every other list
STATUS_CHOICES = {
    "live": ["provisional", "active"],
    "provisional": ["provisional"],
    "active": ["active"],
    "deprecated": ["deprecated"],
    "all": STATUSES,
}
T = TypeVar("T")
S = TypeVar("S", bound=msgspec.Struct)
A = ParamSpec("A")


def _templates() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE / "templates"),
        autoescape=True,  # every value is text unless a template says otherwise (none does)
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["short"] = lambda s, n=160: s if len(s) <= n else s[: n - 1] + "…"
    return env


def form_params(kind: type[S], raw: JSONMapping) -> S:
    """Params from a query or form (blank fields left out, strings converted), checked as
    JSON-RPC checks them: the same Struct, an error naming the field and the rule."""
    return parse(kind, {k: v for k, v in raw.items() if v not in (None, "")}, strict=False)


Graph = Callable[[ExportParams], ExportResult]
Endpoint = Callable[[Request], Awaitable[Response]]  # a page: a request handler


class Form(dict[str, str]):
    """A POSTed form: each field's last text value ("" when it sent none) by its name; every
    value of the repeated field `ids` (the ticked memories) in `ids`, not among the others."""

    def __init__(self, fields: dict[str, str], ids: list[str]) -> None:
        super().__init__(fields)
        self.ids = ids


class Renderer:
    """What every UI server's pages share: templates, the page frame, forms, errors."""

    def __init__(self, title: str) -> None:
        self.title = title
        self.env = _templates()

    def csrf(self, request: Request) -> str:
        """The CSRF token the forms of this request's pages carry."""
        raise NotImplementedError

    def nav(self, request: Request) -> list[tuple[str, str]]:
        return NAV

    def check_origin(self, request: Request) -> None:
        """Where a change may come from, checked before its body is read (the local guard
        checks it for every request already)."""

    def check_form(self, request: Request, form: Form) -> None:
        if not same_secret(str(form.get("csrf", "")), self.csrf(request)):
            raise Refused(403, "the form's CSRF token is missing or wrong: reload the page")

    def render(self, request: Request, name: str, status: int = 200, **values: object) -> Response:
        html = self.env.get_template(name).render(
            title=self.title,
            nav=self.nav(request),
            csrf=self.csrf(request),
            path=request.url.path,
            notice=notice_of(request),
            **values,
        )
        return HTMLResponse(html, status_code=status)

    def error(self, request: Request, status: int, message: str) -> Response:
        return self.render(request, "error.html", status=status, message=message)

    async def call(self, fn: Callable[A, T], *args: A.args, **kwargs: A.kwargs) -> T:
        """A service method on a worker thread (it reads and writes the database)."""
        return await run_in_threadpool(fn, *args, **kwargs)

    async def read_form(self, request: Request) -> Form:
        """A POSTed form of at most FORM_BYTES (a page's forms are small: a bigger body is
        refused before it is read); the repeated field `ids` as a list (`Form.ids`)."""
        length = request.headers.get("content-length")
        if length is None or not length.isdigit() or int(length) > FORM_BYTES:
            raise Refused(413, f"a form of at most {FORM_BYTES} bytes, with its length")
        data = await request.form(max_fields=FORM_FIELDS, max_part_size=FORM_BYTES)
        fields: dict[str, str] = {}
        ids: list[str] = []
        for key in data:
            values = [v for v in data.getlist(key) if isinstance(v, str)]
            if any("\x00" in v for v in [key, *values]):
                raise InvalidInput(key, "must not contain a NUL character (U+0000)")
            if key == "ids":
                ids = values
            else:
                fields[key] = values[-1] if values else ""
        return Form(fields, ids)

    async def form(self, request: Request) -> Form:
        """A POSTed form of a change: its origin, size and CSRF token checked."""
        self.check_origin(request)
        out = await self.read_form(request)
        self.check_form(request, out)
        return out

    def wrap(self, handler: Endpoint) -> Endpoint:
        """A handler whose refusals and service errors become pages, never tracebacks."""

        async def run(request: Request) -> Response:
            asked = [
                request.url.path,
                *(x for kv in request.query_params.multi_items() for x in kv),
            ]
            if any("\x00" in x for x in asked):  # (no store keeps it in text: PostgreSQL's fails)
                return self.error(request, 400, "a NUL character (%00) is not allowed here")
            try:
                return await handler(request)
            except Refused as exc:
                return self.error(request, exc.status, exc.reason)
            except ReosError as exc:
                return self.error(request, ERROR_STATUS.get(exc.reason, 400), exc.message)

        return run

    async def bulk(
        self,
        request: Request,
        fetch: Callable[[str], Awaitable[Memory]],
        apply: Callable[[str, str], Awaitable[None]],
    ) -> Response:
        """Deprecate or forget the ticked memories: a confirmation page first (listing them,
        changing nothing), then each one."""
        f = await self.form(request)
        action = f.get("action")
        if action not in ("deprecate", "forget"):
            raise InvalidInput("action", "deprecate or forget")
        ids = [i for i in f.ids if i]
        if not ids:
            raise InvalidInput("ids", "tick at least one memory")
        back = f.get("back") or "/memories"
        if not back.startswith("/memories"):
            back = "/memories"
        if f.get("confirmed") != "1":
            mems = [await fetch(i) for i in ids]
            return self.render(
                request, "confirm.html", action=action, memories=mems, target="/memories/bulk",
                back=back,
            )  # fmt: skip
        for i in ids:
            await apply(action, i)
        past = "deprecated" if action == "deprecate" else "forgotten"
        return _back(back, f"{len(ids)} {past}")


class Pages(Renderer):
    """The routes of one UI server over one Squirrel service (and the block graph's export)."""

    def __init__(
        self, squirrel: Squirrel, guard: Guard, *, title: str, graph: Graph | None = None
    ) -> None:
        super().__init__(title)
        self.sq = squirrel
        self.guard = guard
        self.graph = graph

    def csrf(self, request: Request) -> str:
        return self.guard.csrf

    # -- memories -----------------------------------------------------------------------------

    async def memories(self, request: Request) -> Response:
        status, raw = list_query(request.query_params, "newest")
        out = await self.call(self.sq.list_memories, form_params(api.MemoryListParams, raw))
        return self.render(
            request, "memories.html", **memories_values(request, out, status, "newest", SORTS)
        )

    async def memory(self, request: Request) -> Response:
        got = await self.call(self.sq.get_memory, request.path_params["memory_id"])
        # the episodes it came from, as stored (compressed and redacted when they were cut)
        excerpts: dict[str, list[Line]] = {}
        for ev in got.evidence[:5]:
            try:
                ep = (await self.call(self.sq.get_episode, ev.episode_id)).episode
            except ReosError:  # the episode was pruned since
                continue
            excerpts[ev.episode_id] = [_line(e) for e in (ep.events or [])][:EXCERPT_EVENTS]
        return self.render(
            request, "memory.html", m=got.memory, got=got, excerpts=excerpts, kinds=KINDS,
            tiers=TIERS, statuses=STATUSES,
        )  # fmt: skip

    async def memory_edit(self, request: Request) -> Response:
        mid = request.path_params["memory_id"]
        f = await self.form(request)
        current = (await self.call(self.sq.get_memory, mid)).memory
        if f.get("seen") != current.updated_at:  # changed since the page showed it
            raise Refused(409, "the memory changed since this page was loaded: reload it")
        raw = edits(mid, f, current)
        p = form_params(api.MemoryUpdateParams, raw)
        if len(raw) > 1:
            await self.call(self.sq.update_memory, p)
        return _back(f"/memories/{mid}", "saved" if len(raw) > 1 else "nothing changed")

    async def memory_deprecate(self, request: Request) -> Response:
        mid = request.path_params["memory_id"]
        await self.form(request)
        await self.call(self.sq.deprecate, mid)
        return _back(f"/memories/{mid}", "deprecated")

    async def memory_forget(self, request: Request) -> Response:
        mid = request.path_params["memory_id"]
        f = await self.form(request)
        if f.get("confirmed") != "1":
            got = await self.call(self.sq.get_memory, mid)
            return self.render(
                request, "confirm.html", action="forget", memories=[got.memory],
                target=f"/memories/{mid}/forget", back=f"/memories/{mid}",
            )  # fmt: skip
        await self.call(self.sq.forget, mid)
        return _back("/memories", "forgotten")

    async def memories_bulk(self, request: Request) -> Response:
        async def fetch(mid: str) -> Memory:
            return (await self.call(self.sq.get_memory, mid)).memory

        async def apply(action: str, mid: str) -> None:
            await self.call(self.sq.deprecate if action == "deprecate" else self.sq.forget, mid)

        return await self.bulk(request, fetch, apply)

    # -- episodes -----------------------------------------------------------------------------

    async def episodes(self, request: Request) -> Response:
        q = request.query_params
        raw = {
            "project_id": q.get("project"),
            "session_id": q.get("session"),
            "outcome": q.get("outcome"),
            "cursor": q.get("cursor"),
            "limit": PAGE_SIZE,
        }
        out = await self.call(self.sq.list_episodes, form_params(api.EpisodeListParams, raw))
        return self.render(request, "episodes.html", **episodes_values(q, out))

    async def episode(self, request: Request) -> Response:
        ep = (await self.call(self.sq.get_episode, request.path_params["episode_id"])).episode
        return self.render(request, "episode.html", **episode_values(ep))

    async def episode_retry(self, request: Request) -> Response:
        eid = request.path_params["episode_id"]
        await self.form(request)
        p = api.EpisodeRetryParams(episode_id=eid, wait=True)
        done = (await self.call(self.sq.retry, p)).episodes
        outcome = done[0].get("outcome", "done") if done else "done"
        return _back(f"/episodes/{eid}", f"retried: {outcome}")

    # -- CR-Memory, policy, activity ----------------------------------------------------------

    async def cr_memory(self, request: Request) -> Response:
        project = request.query_params.get("project") or None
        p = form_params(api.CrMemoryParams, {"project_id": project, "dry_run": True})
        out = await self.call(self.sq.cr_memory, p)
        return self.render(request, "cr_memory.html", **cr_values(out, project))

    async def cr_memory_apply(self, request: Request) -> Response:
        f = await self.form(request)
        project = f.get("project") or None
        out = await self.call(
            self.sq.cr_memory, form_params(api.CrMemoryParams, {"project_id": project})
        )
        back = "/cr-memory" + (f"?{urlencode({'project': project})}" if project else "")
        return _back(back, f"applied: {out.promoted} promoted, {out.deprecated} deprecated")

    async def policy(self, request: Request) -> Response:
        out = await self.call(self.sq.policy_info, api.PolicyParams())
        return self.render(request, "policy.html", out=out, toml=toml_text(out.policy))

    async def activity(self, request: Request) -> Response:
        q = request.query_params
        raw = {"project_id": q.get("project"), "days": whole(q.get("days"), "days", 30)}
        out = await self.call(self.sq.activity, form_params(api.ActivityParams, raw))
        return self.render(
            request, "activity.html", out=out, project=q.get("project", ""),
            charts=charts(out),
        )  # fmt: skip

    # -- the block graph --------------------------------------------------------------------

    def _export(self, q: Mapping[str, str]) -> ExportParams:
        if self.graph is None:
            raise InvalidInput("block", "this server has no block graph")
        raw = {"block_id": q.get("block"), "depth": whole(q.get("depth"), "depth", 2),
               "max_nodes": whole(q.get("max_nodes"), "max_nodes", 200),
               "formats": ["html"]}  # fmt: skip
        return form_params(ExportParams, raw)

    async def graph_page(self, request: Request) -> Response:
        q = request.query_params
        form = {k: q.get(k, "") for k in ("block", "depth", "max_nodes")}
        found = None
        if q.get("block"):
            found = await self.call(self._graph_or_raise, self._export(q))
        view = "/graph/view?" + urlencode({k: v for k, v in form.items() if v})
        return self.render(
            request, "graph.html", form=form, found=found, view=view if found else None,
            available=self.graph is not None,
        )  # fmt: skip

    async def graph_view(self, request: Request) -> Response:
        out = await self.call(self._graph_or_raise, self._export(request.query_params))
        page = out.html or ""
        # the export is one self-contained file with an inline script and style: allowed by
        # their hashes, nothing else
        scripts = [_sha(x) for x in re.findall(r"<script>(.*?)</script>", page, re.S)]
        styles = [_sha(x) for x in re.findall(r"<style>(.*?)</style>", page, re.S)]
        csp = (
            "default-src 'none'; script-src " + " ".join(scripts) + "; style-src "
            + " ".join(styles) + "; img-src data:; frame-ancestors 'none'; base-uri 'none';"
            " form-action 'none'"
        )  # fmt: skip
        return HTMLResponse(page, headers={"content-security-policy": csp})

    def _graph_or_raise(self, p: ExportParams) -> ExportResult:
        if self.graph is None:
            raise InvalidInput("block", "this server has no block graph")
        return self.graph(p)

    # -- what would the agent get --------------------------------------------------------------

    async def context(self, request: Request) -> Response:
        form, raw = context_query(request.query_params)
        result = None
        if raw is not None:
            result = await self.call(self.sq.get_task_context, form_params(api.ContextParams, raw))
        return self.render(request, "context.html", form=form, result=result)


EXCERPT_EVENTS = 40  # events of an episode shown under a memory's evidence
OUTCOMES = ["pending", "running", "written", "skipped", "failed"]
KIND_COLOURS = {  # the charts' series, the same colour for a kind everywhere
    "guard": "#b42318", "invariant": "#0b5cad", "preference": "#7a5af8", "pattern": "#067647",
    "note": "#b54708",
}  # fmt: skip


def toml_text(value: JSONMapping, prefix: str = "") -> str:
    """The effective policy as TOML text (sections for tables, values as TOML writes them)."""
    flat = [(k, v) for k, v in value.items() if not isinstance(v, dict)]
    lines = [f"{k} = {_toml_value(v)}" for k, v in flat]
    for k, v in value.items():
        if isinstance(v, dict):
            name = f"{prefix}.{k}" if prefix else k
            body = toml_text(v, name)
            lines += ["", f"[{name}]", body] if body.strip() else []
    return "\n".join(lines).strip("\n")


def _toml_value(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return msgspec.json.encode(v).decode()
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    return str(v)


class Charts(TypedDict):
    """Bar charts as numbers `activity.html` draws."""

    width: int
    kinds: list[tuple[str, str]]  # (kind, colour)
    memories: list[tuple[api.ActivityDay, list[tuple[str, int]]]]  # a day, its (kind, count)
    memories_max: int
    injections_max: int
    tokens_max: int
    calls: int
    tokens: int


def charts(out: api.ActivityResult) -> Charts:
    """Bar charts as numbers an SVG template draws (no script: the page's policy allows none)."""
    days = out.days
    kinds = [k for k in KIND_COLOURS if any(d.memories.get(k) for d in days)]
    stacked = [[(k, d.memories.get(k, 0)) for k in kinds] for d in days]
    return {
        "width": max(1, len(days)),
        "kinds": [(k, KIND_COLOURS[k]) for k in kinds],
        "memories": list(zip(days, stacked, strict=True)),
        "memories_max": max([sum(n for _, n in s) for s in stacked] + [1]),
        "injections_max": max([d.injections for d in days] + [1]),
        "tokens_max": max([d.input_tokens + d.output_tokens for d in days] + [1]),
        "calls": sum(d.writer_calls for d in days),
        "tokens": sum(d.input_tokens + d.output_tokens for d in days),
    }


class Line(TypedDict):
    """One event of an episode as a line of an excerpt."""

    role: str
    kind: str
    text: str
    error: bool


def _line(event: JSONMapping) -> Line:
    """One compressed event as a line of an excerpt: who, what, and its text or command."""
    text = (
        event.get("summary") or event.get("text") or event.get("command")
        or event.get("error_line") or ""
    )  # fmt: skip
    return {
        "role": str(event.get("role", "")),
        "kind": str(event.get("kind", "")),
        "text": str(text)[:400],
        "error": bool(event.get("is_error")) or event.get("exit_code") not in (None, 0),
    }


def _sha(text: str) -> str:
    """A CSP source allowing exactly this inline script or style."""
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


class EpisodesValues(TypedDict):
    """What `episodes.html` shows."""

    episodes: list[Episode]
    filters: dict[str, str]
    next_link: str | None
    outcomes: list[str]


def episodes_values(q: Mapping[str, str], out: api.EpisodeListResult) -> EpisodesValues:
    """What the episodes page shows of a page of episodes and its filters."""
    filters = {k: q.get(k, "") for k in ("project", "session", "outcome")}
    nxt = None
    if out.next_cursor:
        kept = {k: v for k, v in filters.items() if v}
        nxt = "/episodes?" + urlencode({**kept, "cursor": out.next_cursor})
    return {"episodes": out.episodes, "filters": filters, "next_link": nxt, "outcomes": OUTCOMES}


class EpisodeValues(TypedDict):
    """What `episode.html` shows."""

    ep: Episode
    lines: list[Line]
    kept: Sequence[JSONMapping]  # the writer's ops
    rejected: Sequence[JSONMapping]


def episode_values(ep: Episode) -> EpisodeValues:
    """What an episode's page shows: its events as lines, the writer's ops kept and rejected."""
    ops = ep.ops or []
    return {
        "ep": ep,
        "lines": [_line(e) for e in (ep.events or [])],
        "kept": [o for o in ops if o.get("action") != "rejected"],
        "rejected": [o for o in ops if o.get("action") == "rejected"],
    }


class CrValues(TypedDict):
    """What `cr_memory.html` shows."""

    out: api.CrMemoryResult
    project: str
    shown: int
    changes: Sequence[JSONMapping]  # decisions
    changes_total: int
    kept: Sequence[JSONMapping]
    kept_total: int


def cr_values(out: api.CrMemoryResult, project: str | None) -> CrValues:
    """What the CR-Memory page shows of a dry run: the changes and the memories kept, the first
    CR_SHOWN of each ("apply" applies them all)."""
    changes = [d for d in out.decisions if d.get("action") != "keep"]
    kept = [d for d in out.decisions if d.get("action") == "keep"]
    return {
        "out": out, "project": project or "", "shown": CR_SHOWN,
        "changes": changes[:CR_SHOWN], "changes_total": len(changes),
        "kept": kept[:CR_SHOWN], "kept_total": len(kept),
    }  # fmt: skip


def whole(value: str | None, field: str, default: int | None = None) -> int:
    """A whole number from a query or form field (empty: `default`); else InvalidInput."""
    if not value and default is not None:
        return default
    try:
        return int(value or "")  # (empty, without a default: not a whole number)
    except ValueError as exc:
        raise InvalidInput(field, "a whole number") from exc


def list_query(q: Mapping[str, str], default_sort: str) -> tuple[str, JSONObject]:
    """The memories page's query as squirrel/memories/list params (both UIs), with its status
    choice."""
    status = q.get("status") or "live"
    if status not in STATUS_CHOICES:
        raise InvalidInput("status", f"one of {', '.join(STATUS_CHOICES)}")
    return status, {
        "project_id": q.get("project"),
        "kinds": [q["kind"]] if q.get("kind") else None,
        "tiers": [q["tier"]] if q.get("tier") else None,
        "statuses": STATUS_CHOICES[status],
        "scope": q.get("scope"),
        "owner_type": q.get("owner"),
        "text": q.get("q"),
        "sort": q.get("sort") or default_sort,
        "cursor": q.get("cursor"),
        "limit": PAGE_SIZE,
    }


class MemoriesValues(TypedDict):
    """What `memories.html` shows."""

    rows: Sequence[tuple[Memory, MemoryMetrics | None]]
    filters: dict[str, str]
    kinds: list[str]
    tiers: list[str]
    scopes: list[str]
    sorts: dict[str, str]
    statuses: list[str]
    next_link: str | None
    first_link: str | None
    sort_link: Callable[[str], str]  # the link that sorts by a key, keeping the filters
    back: str


def memories_values(
    request: Request,
    out: api.MemoryListResult | tapi.TeamMemoryListResult,
    status: str,
    default_sort: str,
    sorts: dict[str, str],
) -> MemoriesValues:
    """What the memories page shows of a page of memories: rows, filters, links that keep
    them (next page, first page, each sort)."""
    q = request.query_params
    filters = {k: q.get(k, "") for k in ("project", "kind", "tier", "scope", "owner", "q")}
    filters.update(status=status, sort=q.get("sort") or default_sort)

    def link(**change: str) -> str:
        merged = {**filters, **change}
        return "/memories?" + urlencode({k: v for k, v in merged.items() if v})

    return {
        "rows": list(zip(out.memories, out.metrics, strict=True)),
        "filters": filters, "kinds": KINDS, "tiers": TIERS, "scopes": SCOPES, "sorts": sorts,
        "statuses": list(STATUS_CHOICES),
        "next_link": link(cursor=out.next_cursor) if out.next_cursor else None,
        "first_link": link() if q.get("cursor") else None,
        "sort_link": lambda s: link(sort=s),
        "back": str(request.url.path) + ("?" + request.url.query if request.url.query else ""),
    }  # fmt: skip


def context_query(q: Mapping[str, str]) -> tuple[dict[str, str], JSONObject | None]:
    """The preview page's form, and its get_task_context params (a dry run) once a task is
    given (both UIs)."""
    form = {k: q.get(k, "") for k in ("project", "task", "path", "budget")}
    if not q.get("task"):
        return form, None
    return form, {
        "project_id": q.get("project"),
        "task": q.get("task"),
        "path": q.get("path"),
        "context_budget_tokens": whole(q.get("budget"), "budget", 400),
        "dry_run": True,
    }


def edits(memory_id: str, form: Form, current: Memory) -> JSONObject:
    """The update params of an edit form (`_edit.html`): only the fields it changes, a key
    emptied as `clear_key`, a TTL in days from now or none (`clear_ttl`)."""
    raw: JSONObject = {"memory_id": memory_id}
    for name in ("text", "kind", "tier", "status"):
        if form.get(name) and form[name] != getattr(current, name):
            raw[name] = form[name]
    key = (form.get("key") or "").strip()
    if key and key != current.key:
        raw["key"] = key
    elif not key and current.key is not None:
        raw["clear_key"] = True
    ttl = (form.get("ttl_days") or "").strip()
    if ttl:
        raw["ttl_days"] = whole(ttl, "ttl_days")
    elif form.get("clear_ttl") == "1" and current.expires_at is not None:
        raw["clear_ttl"] = True
    return raw


def _notice_tag(notice: str) -> str:
    return hmac.new(NOTICE_KEY, notice.encode(), hashlib.sha256).hexdigest()[:16]


def notice_of(request: Request) -> str | None:
    """The notice of a page: only one this process wrote (see `_back`)."""
    notice = request.query_params.get("notice")
    tag = request.query_params.get("n", "")
    return notice if notice and same_secret(tag, _notice_tag(notice)) else None


def same_secret(a: str, b: str) -> bool:
    """Constant-time equality of two secrets as text (any characters)."""
    return hmac.compare_digest(a.encode(), b.encode())


def _back(path: str, notice: str) -> Response:
    """After a change: the page to show, with what happened (POST, then redirect, then GET)."""
    sep = "&" if "?" in path else "?"
    query = urlencode({"notice": notice, "n": _notice_tag(notice)})
    return RedirectResponse(f"{path}{sep}{query}", status_code=303)


def build(
    squirrel: Squirrel, guard: Guard, *, title: str = "reos-memory", graph: Graph | None = None
) -> GuardMiddleware:
    """The UI as an ASGI app, every request through the guard; `graph` draws a block's
    neighbourhood (graph/export), when the server has the block graph."""
    pages = Pages(squirrel, guard, title=title, graph=graph)
    w = pages.wrap

    async def home(request: Request) -> Response:
        return RedirectResponse("/memories", status_code=303)

    routes = [
        Route("/", home),
        Route("/memories", w(pages.memories)),
        Route("/memories/bulk", w(pages.memories_bulk), methods=["POST"]),
        Route("/memories/{memory_id}", w(pages.memory)),
        Route("/memories/{memory_id}/edit", w(pages.memory_edit), methods=["POST"]),
        Route("/memories/{memory_id}/deprecate", w(pages.memory_deprecate), methods=["POST"]),
        Route("/memories/{memory_id}/forget", w(pages.memory_forget), methods=["POST"]),
        Route("/context", w(pages.context)),
        Route("/episodes", w(pages.episodes)),
        Route("/episodes/{episode_id}", w(pages.episode)),
        Route("/episodes/{episode_id}/retry", w(pages.episode_retry), methods=["POST"]),
        Route("/cr-memory", w(pages.cr_memory)),
        Route("/cr-memory/apply", w(pages.cr_memory_apply), methods=["POST"]),
        Route("/policy", w(pages.policy)),
        Route("/activity", w(pages.activity)),
        Route("/graph", w(pages.graph_page)),
        Route("/graph/view", w(pages.graph_view)),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
    return GuardMiddleware(Starlette(routes=routes), guard)
