"""The team/* methods of the team server: keys, audit, discovery. Handlers are one line: params
Struct in, one TeamService call, result Struct out."""

from __future__ import annotations

from typing import Any

import msgspec

from reos_memory.errors import Forbidden, NotFound
from reos_memory.interfaces.team_http.registry import NoParams, registry
from reos_memory.team.service import (
    AuditPage,
    AuditQuery,
    Caller,
    KeyList,
    RevokeResult,
    TeamService,
    WhoAmI,
)


class RevokeParams(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    key_id: str  # the key's id, or its `rmk_<id>` prefix


@registry.method("team/whoami", params=NoParams, result=WhoAmI)
def whoami(svc: TeamService, caller: Caller, p: NoParams) -> WhoAmI:
    """The org, team, role and id of the calling key (any role)."""
    return svc.whoami(caller)


@registry.method("team/keys/list", params=NoParams, result=KeyList, errors=[Forbidden])
def keys_list(svc: TeamService, caller: Caller, p: NoParams) -> KeyList:
    """The keys of the caller's org, never a secret or hash (admin)."""
    return svc.list_keys(caller, "team/keys/list")


@registry.method(
    "team/keys/revoke", params=RevokeParams, result=RevokeResult, kind="write",
    errors=[Forbidden, NotFound],
)  # fmt: skip
def keys_revoke(svc: TeamService, caller: Caller, p: RevokeParams) -> RevokeResult:
    """Revoke a key of the caller's org; another org's key is not found (admin)."""
    return svc.revoke_key(caller, "team/keys/revoke", p.key_id)


@registry.method("team/audit/list", params=AuditQuery, result=AuditPage, errors=[Forbidden])
def audit_list(svc: TeamService, caller: Caller, p: AuditQuery) -> AuditPage:
    """The caller's org's audit log, newest first, by method and time, paged (admin)."""
    return svc.list_audit(caller, "team/audit/list", p)


@registry.method("rpc.discover", params=NoParams, result=dict[str, Any])
def discover(svc: TeamService, caller: Caller, p: NoParams) -> dict[str, Any]:
    """The OpenRPC document of the team server's methods."""
    from reos_memory.interfaces.team_http.server import openrpc_document

    return openrpc_document()
