"""Domain errors. Only `rpc/` turns these into JSON-RPC error codes."""

from __future__ import annotations

from typing import Any


class ReosError(Exception):
    """Base of every error the service reports to a client on purpose."""

    reason = "error"

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

    reason = "invalid_params"

    def __init__(self, field: str, rule: str, **data: Any) -> None:
        super().__init__(f"{rule} - at `$.{field}`", field=f"$.{field}", rule=rule, **data)


class NotFound(ReosError):
    """A referenced object does not exist."""

    reason = "not_found"

    def __init__(self, kind: str, ident: str, field: str | None = None) -> None:
        msg = f"{kind} {ident!r} not found"
        extra = {"field": f"$.{field}"} if field else {}
        super().__init__(msg, kind=kind, id=ident, **extra)


class Conflict(ReosError):
    """The request contradicts stored state (duplicate, stale version, children present)."""

    reason = "conflict"


class PayloadTooLarge(ReosError):
    """A message or field exceeds a documented size limit."""

    reason = "payload_too_large"


class StorageBusy(ReosError):
    """The database stayed locked by another process beyond the retry budget."""

    reason = "storage_busy"


class Cancelled(ReosError):
    """The client cancelled the request; nothing was written."""

    reason = "request_cancelled"


class ShuttingDown(ReosError):
    """The process is stopping and accepts no new work."""

    reason = "shutting_down"


class EmbedderUnavailable(ReosError):
    """The operation needs the embedding model and there is none."""

    reason = "embedder_unavailable"


class DocumentUnreadable(ReosError):
    """A document could not be turned into text; `data.kind` says why, nothing was stored."""

    reason = "document_unreadable"

    def __init__(self, kind: str, message: str, **data: Any) -> None:
        super().__init__(message, kind=kind, **data)


class SchemaError(ReosError):
    """The database was written by a newer or different version of the service, or a migration
    of it failed (and was rolled back)."""

    reason = "schema_mismatch"
