"""Domain errors. Each class carries its JSON-RPC code, its reason (`error.data.reason`) and a
one-line meaning; the published error table (README, `rpc_schema/openrpc.json`) is generated from
them. Only `interfaces/` turns them into a wire reply."""

from __future__ import annotations

from typing import Any, ClassVar


class ReosError(Exception):
    """Base of every error the service reports to a client on purpose."""

    # -32000 is the generic application error; every class a client may meet has its own code
    code: ClassVar[int] = -32000
    reason: ClassVar[str] = "error"
    meaning: ClassVar[str] = ""

    def __init__(self, message: str, **data: Any) -> None:
        super().__init__(message)
        self.message = message
        self.data = data

    def __reduce__(self) -> tuple[Any, ...]:
        # the same error on the other side of a process boundary, whatever the subclass's
        # own constructor takes
        return (_rebuilt, (type(self), self.message, self.data))


def _rebuilt(cls: type[ReosError], message: str, data: dict[str, Any]) -> ReosError:
    err = cls.__new__(cls)
    ReosError.__init__(err, message, **data)
    return err


class InvalidInput(ReosError):
    """A parameter broke a rule that the type system could not express."""

    code = -32602  # JSON-RPC's own "Invalid params"
    reason = "invalid_params"
    meaning = (
        "wrong type, unknown field, unknown enum value, out of range, invalid Unicode (invalid"
        " UTF-8 or a lone surrogate), or a rule such as no self-loops; `data.field` names it"
    )

    def __init__(self, field: str, rule: str, **data: Any) -> None:
        super().__init__(f"{rule} - at `$.{field}`", field=f"$.{field}", rule=rule, **data)


class PayloadTooLarge(ReosError):
    """A message or field exceeds a documented size limit."""

    code = -32001
    reason = "payload_too_large"
    meaning = (
        "a field, document or read result over a documented limit (`data.limit` names the"
        " setting; see Limits)"
    )


class StorageBusy(ReosError):
    """The database stayed locked by another process beyond the retry budget."""

    code = -32002
    reason = "storage_busy"
    meaning = "another process held the database lock longer than `lock_wait_s`"


class Forbidden(ReosError):
    """The caller's key lacks the role a method needs."""

    code = -32003
    reason = "forbidden"
    meaning = "the team server's API key lacks the role the method needs (`data.role` names it)"

    def __init__(self, method: str, role: str, why: str | None = None) -> None:
        """`why`: the rule when it is more than a role (a team key and an org memory)."""
        message = f"{method} needs an API key with role {role!r}"
        super().__init__(f"{message}: {why}" if why else message, method=method, role=role)


class NotFound(ReosError):
    """A referenced object does not exist."""

    code = -32004
    reason = "not_found"
    meaning = (
        "a referenced block, relationship, memory, episode, context or file does not exist"
        " (`data.field` names the parameter)"
    )

    def __init__(self, kind: str, ident: str, field: str | None = None) -> None:
        msg = f"{kind} {ident!r} not found"
        extra = {"field": f"$.{field}"} if field else {}
        super().__init__(msg, kind=kind, id=ident, **extra)


class Cancelled(ReosError):
    """The client cancelled the request; nothing was written."""

    code = -32008
    reason = "request_cancelled"
    meaning = "cancelled by `$/cancelRequest`; nothing was written"


class Conflict(ReosError):
    """The request contradicts stored state (duplicate, stale version, children present)."""

    code = -32009
    reason = "conflict"
    meaning = (
        "duplicate relationship (`data.existing_id`), existing id, stale `expected_version`,"
        " children present, or a memory key another live memory holds (`data.existing_id`)"
    )


class EmbedderUnavailable(ReosError):
    """The operation needs the embedding model and there is none."""

    code = -32010
    reason = "embedder_unavailable"
    meaning = "the operation needs the embedding model and none is loaded"


class LLMError(ReosError):
    """The LLM provider (or agent CLI) could not give a usable answer after retries."""

    code = -32011
    reason = "llm_failed"
    meaning = "the LLM provider gave no usable answer after retries (the message says why)"


class DocumentUnreadable(ReosError):
    """A document could not be turned into text; `data.kind` says why, nothing was stored."""

    code = -32012
    reason = "document_unreadable"
    meaning = (
        "an unsupported, corrupt, encrypted or text-less document (`data.kind`); nothing stored"
    )

    def __init__(self, kind: str, message: str, **data: Any) -> None:
        super().__init__(message, kind=kind, **data)


class ShuttingDown(ReosError):
    """The process is stopping and accepts no new work."""

    code = -32013
    reason = "shutting_down"
    meaning = "the process is stopping"


class SchemaError(ReosError):
    """The database was written by a newer or different version of the service, or a migration
    of it failed (and was rolled back)."""

    code = -32014
    reason = "schema_mismatch"
    meaning = "the database was written by a newer version"


class PolicyError(ReosError):
    """A policy file cannot be read or breaks a rule; the message names the file and key."""

    code = -32015
    reason = "invalid_policy"
    meaning = (
        "a `memory_policy.toml` cannot be read or breaks a rule; the message names the file"
        " and key (`data.file`)"
    )


class DatabaseUnavailable(ReosError):
    """The team server's database did not answer in time (a statement or lock timeout), rolled
    the request back for a concurrent one, or could not be reached; the request can be sent
    again."""

    code = -32016
    reason = "database_unavailable"
    meaning = (
        "the team server's database timed out, hit a deadlock or could not be reached: retry"
        " later (`data.retryable` is true, `data.incident` is in the log)"
    )

    def __init__(self, message: str, incident: str) -> None:
        super().__init__(message, retryable=True, incident=incident)
        self.incident = incident


def published() -> list[type[ReosError]]:
    """The error classes a client may meet, each with its own code, in the order of their codes
    (closest to zero first)."""
    found = [
        v
        for v in globals().values()
        if isinstance(v, type) and issubclass(v, ReosError) and v is not ReosError
    ]
    return sorted(found, key=lambda cls: -cls.code)
