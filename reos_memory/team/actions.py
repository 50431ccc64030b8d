"""The names the team server's audit log and role errors give what a key did: a method of its
JSON-RPC interface, or what the server recorded on its own (a refused key, a UI sign-in). Each
service method names its own action, so no caller passes one as a string."""

from __future__ import annotations

from typing import Literal

Action = Literal[
    "squirrel/memories/add",
    "squirrel/memories/update",
    "squirrel/memories/deprecate",
    "squirrel/memories/forget",
    "squirrel/usage/report",
    "squirrel/ingest_episode",
    "squirrel/feedback",
    "squirrel/cr_memory/run",
    "team/shares/propose",
    "team/shares/approve",
    "team/shares/reject",
    "team/keys/list",
    "team/keys/create",
    "team/keys/revoke",
    "team/members/list",
    "team/members/add",
    "team/members/remove",
    "team/audit/list",
    "team/refused",
    "team/ui/signin",
    # the operator's `reos-memory team` commands
    "team/admin/create-org",
    "team/admin/create-team",
    "team/admin/create-key",
    "team/admin/add-member",
    "team/admin/remove-member",
    "team/admin/revoke-key",
    "team/admin/prune-audit",
]
