"""The team/* methods of the team server: keys, members, audit, discovery. Handlers are one line: params
Struct in, one TeamService call, result Struct out."""

from __future__ import annotations

from reos_memory.errors import Conflict, DatabaseUnavailable, Forbidden, InvalidInput, NotFound
from reos_memory.interfaces.openrpc import DocumentResult
from reos_memory.interfaces.team_http.registry import NoParams, registry
from reos_memory.team.members import Member, MemberList, MemberRemoved
from reos_memory.team.team_service import (
    AddMemberParams,
    AuditPage,
    AuditQuery,
    Caller,
    CreatedKey,
    CreateKeyParams,
    KeyList,
    RemoveMemberParams,
    RevokeParams,
    RevokeResult,
    TeamService,
    WhoAmI,
)

# a JSON object: at run time the bare class, whose JSON Schema is {"type": "object"} (msgspec
# has no schema for `object` values)


@registry.method("team/whoami", params=NoParams, result=WhoAmI, errors=[DatabaseUnavailable])
def whoami(svc: TeamService, caller: Caller, p: NoParams) -> WhoAmI:
    """The org, team, role and id of the calling key (any role)."""
    return svc.whoami(caller)


@registry.method(
    "team/keys/list", params=NoParams, result=KeyList, errors=[Forbidden, DatabaseUnavailable]
)
def keys_list(svc: TeamService, caller: Caller, p: NoParams) -> KeyList:
    """The keys of the caller's org, never a secret or hash (admin)."""
    return svc.list_keys(caller)


@registry.method(
    "team/keys/create", params=CreateKeyParams, result=CreatedKey, kind="write",
    errors=[Forbidden, NotFound, InvalidInput, DatabaseUnavailable],
)  # fmt: skip
def keys_create(svc: TeamService, caller: Caller, p: CreateKeyParams) -> CreatedKey:
    """A new key of the caller's org, returned once: store it now (admin; a team admin's key
    makes keys of its own team only)."""
    return svc.create_key(
        caller, role=p.role, team=p.team, name=p.name,
        expires_days=p.expires_days, member=p.member,
    )  # fmt: skip


@registry.method(
    "team/keys/revoke", params=RevokeParams, result=RevokeResult, kind="write",
    errors=[Forbidden, NotFound, DatabaseUnavailable],
)  # fmt: skip
def keys_revoke(svc: TeamService, caller: Caller, p: RevokeParams) -> RevokeResult:
    """Revoke a key of the caller's org; another org's key is not found (admin). With
    `with_minted`, every live key it made (and those made) is revoked too."""
    return svc.revoke_key(caller, p.key_id, with_minted=p.with_minted)


@registry.method(
    "team/members/list", params=NoParams, result=MemberList, errors=[Forbidden, DatabaseUnavailable]
)
def members_list(svc: TeamService, caller: Caller, p: NoParams) -> MemberList:
    """The org's members (a team key: its team's), removed ones with their status (admin)."""
    return svc.list_members(caller)


@registry.method(
    "team/members/add", params=AddMemberParams, result=Member, kind="write",
    errors=[Forbidden, NotFound, Conflict, DatabaseUnavailable],
)  # fmt: skip
def members_add(svc: TeamService, caller: Caller, p: AddMemberParams) -> Member:
    """Add a member to the caller's org, in a team it reaches; audited (admin)."""
    return svc.add_member(caller, p.name, p.team, p.email)


@registry.method(
    "team/members/remove", params=RemoveMemberParams, result=MemberRemoved, kind="write",
    errors=[Forbidden, NotFound, DatabaseUnavailable],
)  # fmt: skip
def members_remove(svc: TeamService, caller: Caller, p: RemoveMemberParams) -> MemberRemoved:
    """Remove a member the caller reaches and revoke its keys; audited (admin)."""
    return svc.remove_member(caller, p.member_id)


@registry.method(
    "team/audit/list", params=AuditQuery, result=AuditPage, errors=[Forbidden, DatabaseUnavailable]
)
def audit_list(svc: TeamService, caller: Caller, p: AuditQuery) -> AuditPage:
    """The caller's org's audit log (a team key: its team's), newest first, by team, method and
    time, paged (admin)."""
    return svc.list_audit(caller, p)


@registry.method("rpc.discover", params=NoParams, result=DocumentResult)
def discover(svc: TeamService, caller: Caller, p: NoParams) -> DocumentResult:
    """The OpenRPC document of the team server's methods."""
    from reos_memory.interfaces.team_http.server import discovered

    return discovered()
