"""The web UI on the team server (issue 22): the same pages and templates, behind its API keys.

A person signs in with an API key and gets a server-side session (`web/sessions.py`): the
cookie (HttpOnly, SameSite=Strict, Secure when the request came over TLS) holds a random session
id, never the key. The session ends at sign-out, at its expiry (12 hours) and when the process
ends, and its key is checked again on every request, so a revoked or expired key ends it at
once. Sessions live in the process that made them: behind a load balancer the UI needs sticky
sessions (the API needs nothing of the kind). Every
page calls the team server's registered methods (the same handlers as `/rpc`), so a page shows
only what the key's org, team and role allow: another org's ids are not found, a reader cannot
write, and the admin pages (members, API keys, audit log) need an admin key. A change needs the
page's own origin and the CSRF token of its form; making a key asks for the signed-in key again
(a key outlives the session, so a stolen cookie must not be enough to make one)."""

from __future__ import annotations

import functools
import hashlib
import hmac
import secrets
import uuid
from collections.abc import Awaitable, Callable
from typing import Literal, Protocol, TypeVar
from urllib.parse import urlencode

import msgspec
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from reos_memory.errors import InvalidInput, NotFound
from reos_memory.interfaces.web.app import (
    HERE,
    KINDS,
    PAGE_SIZE,
    SORTS,
    STATUSES,
    TIERS,
    Endpoint,
    Form,
    Renderer,
    _back,
    charts,
    context_query,
    cr_values,
    edits,
    episode_values,
    episodes_values,
    form_params,
    list_query,
    memories_values,
    same_secret,
    toml_text,
    whole,
)
from reos_memory.interfaces.web.guard import ASGIApp, Receive, Refused, Scope, SecurityHeaders, Send
from reos_memory.interfaces.web.sessions import Sessions, SessionsFull
from reos_memory.json_types import JSONMapping, JSONObject
from reos_memory.squirrel import api
from reos_memory.squirrel import team_api as tapi
from reos_memory.team.actions import Action
from reos_memory.team.keys import VerifiedKey
from reos_memory.team.memories import Who
from reos_memory.team.team_service import (
    AddMemberParams,
    AuditQuery,
    Caller,
    CreateKeyParams,
    TeamService,
    who,
)

P = TypeVar("P", bound=msgspec.Struct)
R = TypeVar("R")

COOKIE = "reos_team_ui"
NAV = [
    ("/memories", "Memories"),
    ("/context", "What would the agent get?"),
    ("/shares", "Shares"),
    ("/episodes", "Episodes"),
    ("/cr-memory", "CR-Memory"),
    ("/policy", "Policy"),
    ("/activity", "Activity"),
]
ADMIN_NAV = [("/members", "Members"), ("/keys", "API keys"), ("/audit", "Audit log")]
SIGNED_OUT = {"/signin"}
TEAM_SORTS = {"updated": "last changed", **{k: v for k, v in SORTS.items() if k != "updated"}}


Verify = Callable[[Request, str], Awaitable["VerifiedKey | Response"]]
Limit = Callable[[VerifiedKey, int], "Response | None"]


class Audit(Protocol):
    """Writes an attempt into its org's audit log (`TeamHttp._audit`)."""

    def __call__(
        self,
        org_id: str,
        key_id: str,
        team_id: str | None,
        method: Action,
        request_id: str | None = None,
        **detail: str,
    ) -> Awaitable[None]: ...


class TeamUI(Renderer):
    """The UI routes of one team server process. `verify` checks a presented key as /rpc does
    (the same limit on failed attempts per address: a flood of bad keys never reaches the
    database); `limit` spends one request of the key's rate per page; `audit_attempt` writes
    a sign-in to the org's audit log as /rpc writes its refused attempts."""

    def __init__(
        self,
        svc: TeamService,
        verify: Verify,
        limit: Limit,
        audit_attempt: Audit,
        *,
        title: str = "reos-memory team",
    ) -> None:
        super().__init__(title)
        self.svc = svc
        self.verify = verify
        self.limit = limit
        self.audit_attempt = audit_attempt
        self.sessions: Sessions[str] = Sessions()  # session id -> the key it signed in with
        self._csrf_key = secrets.token_bytes(32)  # (this process's: the forms' tokens with it)

    # -- who is signed in ---------------------------------------------------------------------

    def csrf(self, request: Request) -> str:
        """The forms' token: the session's id signed with this process's secret (neither the
        id nor the secret is shown by any page)."""
        sid = request.cookies.get(cookie_name(request), "")
        return hmac.new(self._csrf_key, sid.encode(), hashlib.sha256).hexdigest() if sid else ""

    def nav(self, request: Request) -> list[tuple[str, str]]:
        key: VerifiedKey | None = getattr(request.state, "key", None)
        if key is None:
            return []
        return NAV + (ADMIN_NAV if key.role == "admin" else [])

    def render(self, request: Request, name: str, status: int = 200, **values: object) -> Response:
        signed = getattr(request.state, "key", None) is not None
        return super().render(request, name, status, signout=signed, **values)

    def check_origin(self, request: Request) -> None:
        """A change, or a sign-in, comes from a page of this server (checked before the body is
        read)."""
        origin = request.headers.get("origin")
        if origin != f"{request.url.scheme}://{request.url.netloc}":
            if origin == f"https://{request.url.netloc}" and request.url.scheme == "http":
                raise Refused(403, "the page came over TLS through a proxy this server does not"
                              " trust: start it with --trusted-proxy <the proxy's address>")  # fmt: skip
            raise Refused(403, "a change must come from a page of this server (Origin)")

    def check_form(self, request: Request, form: Form) -> None:
        if not self.csrf(request) or not same_secret(str(form.get("csrf", "")), self.csrf(request)):
            raise Refused(403, "the form's CSRF token is missing or wrong: reload the page")

    async def signed_in(self, request: Request) -> Caller:
        """The caller of a page, from the key in its cookie (checked once per request, and one
        request of the key's rate); Refused 401 without a valid one, 429 over a limit."""
        key: VerifiedKey | None = getattr(request.state, "key", None)
        if key is None:
            sid = request.cookies.get(cookie_name(request))
            presented = self.sessions.get(sid)
            if not presented:
                raise Refused(401, "sign in with an API key")
            got = await self.verify(request, presented)
            if isinstance(got, Response):
                if got.status_code == 401:
                    self.sessions.end(sid)  # its key was revoked or expired
                    raise Refused(401, "the API key was refused: sign in again")
                raise Refused(got.status_code, "too many requests or the database is busy: retry")
            if (over := self.limit(got, 1)) is not None:
                raise Refused(over.status_code, "this API key is over its rate limit: retry")
            request.state.key = key = got
        return Caller(key=key, request_id=f"ui-{uuid.uuid4().hex[:16]}")

    async def memory_of(self, caller: Caller, memory_id: str) -> tapi.TeamMemoryGetResult:
        return await self.call(
            self.svc.memories.get, who(caller), api.MemoryIdParams(memory_id=memory_id)
        )

    async def change(
        self, caller: Caller, action: Literal["deprecate", "forget"], memory_id: str
    ) -> None:
        """Deprecate or forget one memory (writer; a team key: its team's only)."""
        p = tapi.TeamMemoryIdParams(memory_id=memory_id)
        if action == "forget":
            gone = await self.call(self.svc.memories.forget, who(caller), p)
            if not gone.forgotten:  # (another team's, or no such memory: nothing was done)
                raise NotFound("memory", memory_id, field="memory_id")
        else:
            await self.call(self.svc.memories.deprecate, who(caller), p)

    async def run(
        self, fn: Callable[[Who, P], R], caller: Caller, params: type[P], raw: JSONMapping
    ) -> R:
        """A team service method for this key (its role and reach checked there, as for /rpc),
        with `raw` (a form or a query, blank fields left out) as its params."""
        p = form_params(params, raw)
        return await run_in_threadpool(fn, who(caller), p)

    def wrap(self, handler: Endpoint) -> Endpoint:
        inner = super().wrap(handler)

        async def run(request: Request) -> Response:
            try:
                if request.url.path not in SIGNED_OUT:
                    await self.signed_in(request)
            except Refused as exc:
                if exc.status == 401:
                    return RedirectResponse(
                        "/signin?" + urlencode({"notice": exc.reason}), status_code=303
                    )
                return self.error(request, exc.status, exc.reason)
            return await inner(request)

        return run

    # -- signing in ---------------------------------------------------------------------------

    async def signin(self, request: Request) -> Response:
        if request.method == "GET":
            return self.render(request, "signin.html")
        self.check_origin(request)
        form = await self.read_form(request)
        got = await self.verify(request, str(form.get("key", "")).strip())
        if isinstance(got, Response):
            if got.status_code == 401:
                return self.render(request, "signin.html", status=401, failed=True)
            raise Refused(got.status_code, "too many failed sign-ins from this address: wait")
        if (over := self.limit(got, 1)) is not None:  # (a sign-in is a request of the key's)
            raise Refused(over.status_code, "this API key is over its rate limit: retry")
        self.sessions.end(request.cookies.get(cookie_name(request)))  # (one signed in before)
        try:
            sid = self.sessions.begin(str(form.get("key", "")).strip(), owner=got.org_id)
        except SessionsFull as exc:
            raise Refused(503, "too many people are signed in: retry later") from exc
        address = request.client.host if request.client else "unknown"
        await self.audit_attempt(
            got.org_id, got.key_id, got.team_id, "team/ui/signin", f"ui-{uuid.uuid4().hex[:16]}",
            address=address,
        )  # fmt: skip
        out = RedirectResponse("/memories", status_code=303)
        out.set_cookie(
            cookie_name(request), sid, httponly=True, samesite="strict", path="/",
            secure=_over_tls(request),
        )  # fmt: skip
        return out

    async def signout(self, request: Request) -> Response:
        await self.form(request)
        self.sessions.end(request.cookies.get(cookie_name(request)))
        out = _back("/signin", "signed out")
        out.delete_cookie(cookie_name(request), path="/", secure=_over_tls(request))
        return out

    # -- memories -----------------------------------------------------------------------------

    async def memories(self, request: Request) -> Response:
        caller = await self.signed_in(request)
        status, raw = list_query(request.query_params, "updated")
        out = await self.run(self.svc.memories.list, caller, api.MemoryListParams, raw)
        return self.render(
            request, "memories.html",
            **memories_values(request, out, status, "updated", TEAM_SORTS),
            # an org key names a team to filter by it: "team" alone is for a team key
            owners=["team", "org"] if caller.key.team_id else ["org"],
        )  # fmt: skip

    async def memory(self, request: Request) -> Response:
        caller = await self.signed_in(request)
        got = await self.memory_of(caller, request.path_params["memory_id"])
        return self.render(
            request, "team_memory.html", m=got.memory, got=got, kinds=KINDS, tiers=TIERS,
            statuses=STATUSES, can_write=caller.key.role in ("writer", "admin"),
        )  # fmt: skip

    async def memory_edit(self, request: Request) -> Response:
        caller = await self.signed_in(request)
        mid = request.path_params["memory_id"]
        f = await self.form(request)
        cur = (await self.memory_of(caller, mid)).memory
        raw = edits(mid, f, cur)
        if len(raw) > 1:
            # the version the form showed: a change made meanwhile is a conflict, not undone
            raw["expected_version"] = whole(f.get("version"), "version")
            await self.run(self.svc.memories.update, caller, tapi.TeamMemoryUpdateParams, raw)
        return _back(f"/memories/{mid}", "saved" if len(raw) > 1 else "nothing changed")

    async def memory_deprecate(self, request: Request) -> Response:
        caller = await self.signed_in(request)
        mid = request.path_params["memory_id"]
        await self.form(request)
        await self.change(caller, "deprecate", mid)
        return _back(f"/memories/{mid}", "deprecated")

    async def memory_forget(self, request: Request) -> Response:
        caller = await self.signed_in(request)
        mid = request.path_params["memory_id"]
        f = await self.form(request)
        if f.get("confirmed") != "1":
            got = await self.memory_of(caller, mid)
            return self.render(
                request, "confirm.html", action="forget", memories=[got.memory],
                target=f"/memories/{mid}/forget", back=f"/memories/{mid}",
            )  # fmt: skip
        await self.change(caller, "forget", mid)
        return _back("/memories", "forgotten")

    async def memories_bulk(self, request: Request) -> Response:
        caller = await self.signed_in(request)

        async def fetch(mid: str) -> tapi.TeamMemory:
            return (await self.memory_of(caller, mid)).memory

        async def apply(action: str, mid: str) -> None:
            await self.change(caller, "forget" if action == "forget" else "deprecate", mid)

        return await self.bulk(request, fetch, apply)

    async def context(self, request: Request) -> Response:
        caller = await self.signed_in(request)
        form, raw = context_query(request.query_params)
        result = None
        if raw is not None:
            result = await self.run(
                self.svc.retrieval.get_task_context, caller, api.ContextParams, raw
            )
        return self.render(request, "context.html", form=form, result=result)

    # -- shares -------------------------------------------------------------------------------

    async def shares(self, request: Request) -> Response:
        caller = await self.signed_in(request)
        status = request.query_params.get("status") or "pending"
        out = await self.run(self.svc.shares.list, caller, tapi.ShareListParams, {"status": status})
        return self.render(
            request, "shares.html", shares=out.shares, listing=status,
            can_decide=caller.key.role in ("writer", "admin"),
        )  # fmt: skip

    async def share_decide(self, request: Request) -> Response:
        caller = await self.signed_in(request)
        f = await self.form(request)
        decision = request.path_params["decision"]
        if decision not in ("approve", "reject"):
            raise InvalidInput("decision", "approve or reject")
        decide = self.svc.shares.approve if decision == "approve" else self.svc.shares.reject
        await self.run(decide, caller, tapi.ShareDecideParams, {
            "share_id": request.path_params["share_id"], "reason": f.get("reason") or None,
        })  # fmt: skip
        return _back("/shares", "approved" if decision == "approve" else "rejected")

    # -- episodes and activity ----------------------------------------------------------------

    async def episodes(self, request: Request) -> Response:
        caller = await self.signed_in(request)
        q = request.query_params
        out = await self.run(self.svc.episodes.list_episodes, caller, api.EpisodeListParams, {
            "project_id": q.get("project"), "session_id": q.get("session"),
            "outcome": q.get("outcome"), "cursor": q.get("cursor"), "limit": PAGE_SIZE,
        })  # fmt: skip
        return self.render(request, "episodes.html", **episodes_values(q, out))

    async def episode(self, request: Request) -> Response:
        caller = await self.signed_in(request)
        got = await self.call(
            self.svc.episodes.get_episode, who(caller), request.path_params["episode_id"]
        )
        return self.render(request, "episode.html", **episode_values(got.episode))

    async def activity(self, request: Request) -> Response:
        caller = await self.signed_in(request)
        q = request.query_params
        out = await self.run(self.svc.memories.activity, caller, api.ActivityParams, {
            "project_id": q.get("project"), "days": whole(q.get("days"), "days", 30),
        })  # fmt: skip
        return self.render(
            request, "activity.html", out=out, project=q.get("project", ""), charts=charts(out)
        )

    # -- CR-Memory and the policy -------------------------------------------------------------

    async def cr_memory(self, request: Request) -> Response:
        caller = await self.signed_in(request)
        project = request.query_params.get("project") or None
        out = await self.run(
            self.svc.learning.cr_memory, caller, api.CrMemoryParams,
            {"project_id": project, "dry_run": True},
        )  # fmt: skip
        return self.render(request, "cr_memory.html", **cr_values(out, project))

    async def cr_memory_apply(self, request: Request) -> Response:
        caller = await self.signed_in(request)
        f = await self.form(request)
        project = f.get("project") or None
        out = await self.run(
            self.svc.learning.cr_memory, caller, api.CrMemoryParams, {"project_id": project}
        )
        back = "/cr-memory" + (f"?{urlencode({'project': project})}" if project else "")
        return _back(back, f"applied: {out.promoted} promoted, {out.deprecated} deprecated")

    async def policy(self, request: Request) -> Response:
        await self.signed_in(request)
        out = await self.call(self.svc.memories.policy_get, api.PolicyParams())
        return self.render(request, "policy.html", out=out, toml=toml_text(out.policy))

    # -- admin --------------------------------------------------------------------------------

    async def keys(self, request: Request) -> Response:
        caller = await self.signed_in(request)
        out = await self.call(self.svc.list_keys, caller)
        return self.render(request, "keys.html", keys=out.keys, me=caller.key.key_id)

    async def key_create(self, request: Request) -> Response:
        caller = await self.signed_in(request)
        f = await self.form(request)
        # a key outlives the session: making one asks for the session's own key again, which a
        # stolen cookie does not hold
        signed_with = self.sessions.get(request.cookies.get(cookie_name(request))) or ""
        if not signed_with or not same_secret(str(f.get("confirm_key", "")).strip(), signed_with):
            raise Refused(403, "to make a key, confirm with the API key you signed in with")
        raw: JSONObject = {k: f.get(k) for k in ("role", "team", "name", "member")}
        if f.get("expires_days"):
            try:
                raw["expires_days"] = float(f["expires_days"])
            except ValueError as exc:
                raise InvalidInput("expires_days", "a number of days") from exc
        p = form_params(CreateKeyParams, raw)
        made = await self.call(
            functools.partial(
                self.svc.create_key, caller, role=p.role, team=p.team, name=p.name,
                expires_days=p.expires_days, member=p.member,
            )
        )  # fmt: skip
        # shown once, in this response only (never in a URL or a log)
        return self.render(request, "key_created.html", made=made)

    async def key_revoke(self, request: Request) -> Response:
        caller = await self.signed_in(request)
        await self.form(request)
        kid = request.path_params["key_id"]
        await self.call(self.svc.revoke_key, caller, kid)
        return _back("/keys", f"revoked {kid}")

    async def members(self, request: Request) -> Response:
        caller = await self.signed_in(request)
        out = await self.call(self.svc.list_members, caller)
        return self.render(request, "members.html", members=out.members)

    async def member_add(self, request: Request) -> Response:
        caller = await self.signed_in(request)
        f = await self.form(request)
        p = form_params(AddMemberParams, {k: f.get(k) for k in ("name", "team", "email")})
        made = await self.call(self.svc.add_member, caller, p.name, p.team, p.email)
        return _back("/members", f"added {made.name}")

    async def member_remove(self, request: Request) -> Response:
        caller = await self.signed_in(request)
        await self.form(request)
        await self.call(self.svc.remove_member, caller, request.path_params["member_id"])
        return _back("/members", "removed, and their keys revoked")

    async def audit(self, request: Request) -> Response:
        caller = await self.signed_in(request)
        q = request.query_params
        filters = {k: q.get(k, "") for k in ("team_id", "method", "since", "until")}
        raw: JSONObject = {**filters, "limit": PAGE_SIZE}
        if q.get("before_id"):
            raw["before_id"] = whole(q["before_id"], "before_id")
        q_ = form_params(AuditQuery, raw)
        out = await self.call(self.svc.list_audit, caller, q_)
        nxt = None
        if out.next_before_id is not None:
            nxt = "/audit?" + urlencode({**{k: v for k, v in filters.items() if v},
                                         "before_id": out.next_before_id})  # fmt: skip
        return self.render(
            request, "audit.html", entries=out.entries, filters=filters, next_link=nxt
        )

    # -- routes -------------------------------------------------------------------------------

    def routes(self) -> list[BaseRoute]:
        w = self.wrap

        async def home(request: Request) -> Response:
            return RedirectResponse("/memories", status_code=303)

        pages: list[tuple[str, Endpoint, list[str]]] = [
            ("/", home, ["GET"]),
            ("/signin", self.signin, ["GET", "POST"]),
            ("/signout", self.signout, ["POST"]),
            ("/memories", self.memories, ["GET"]),
            ("/memories/bulk", self.memories_bulk, ["POST"]),
            ("/memories/{memory_id}", self.memory, ["GET"]),
            ("/memories/{memory_id}/edit", self.memory_edit, ["POST"]),
            ("/memories/{memory_id}/deprecate", self.memory_deprecate, ["POST"]),
            ("/memories/{memory_id}/forget", self.memory_forget, ["POST"]),
            ("/context", self.context, ["GET"]),
            ("/shares", self.shares, ["GET"]),
            ("/episodes", self.episodes, ["GET"]),
            ("/episodes/{episode_id}", self.episode, ["GET"]),
            ("/activity", self.activity, ["GET"]),
            ("/cr-memory", self.cr_memory, ["GET"]),
            ("/cr-memory/apply", self.cr_memory_apply, ["POST"]),
            ("/policy", self.policy, ["GET"]),
            ("/shares/{share_id}/{decision}", self.share_decide, ["POST"]),
            ("/keys", self.keys, ["GET"]),
            ("/keys/create", self.key_create, ["POST"]),
            ("/keys/{key_id}/revoke", self.key_revoke, ["POST"]),
            ("/members", self.members, ["GET"]),
            ("/members/add", self.member_add, ["POST"]),
            ("/members/{member_id}/remove", self.member_remove, ["POST"]),
            ("/audit", self.audit, ["GET"]),
        ]
        out: list[BaseRoute] = [
            Route(path, SecurityHeaders(_asgi(w(fn))), methods=methods)
            for path, fn, methods in pages
        ]
        out.append(Mount("/static", SecurityHeaders(StaticFiles(directory=HERE / "static"))))
        return out


def _asgi(handler: Endpoint) -> ASGIApp:
    """A request handler as an ASGI app (a Route takes either; SecurityHeaders wraps apps)."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        response = await handler(Request(scope, receive))
        await response(scope, receive, send)

    return app


def cookie_name(request: Request) -> str:
    """Over TLS, the `__Host-` cookie (Secure, this host only, no Domain a sibling could set);
    over plain HTTP (a loopback or development server) the plain name."""
    return f"__Host-{COOKIE}" if _over_tls(request) else COOKIE


def _over_tls(request: Request) -> bool:
    """The request came over TLS: directly, or to a proxy given as `--trusted-proxy`, whose
    X-Forwarded-Proto uvicorn has already applied (no other client's claim counts)."""
    return request.url.scheme == "https"
