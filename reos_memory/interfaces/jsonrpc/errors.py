"""The one table from error kinds to JSON-RPC codes."""

from __future__ import annotations

from typing import Any

from reos_memory import errors

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

# Application errors, -32000..-32099. Codes are stable: clients may switch on them.
APP_CODES: dict[type[errors.ReosError], int] = {
    errors.PayloadTooLarge: -32001,
    errors.StorageBusy: -32002,
    errors.NotFound: -32004,
    errors.Cancelled: -32008,
    errors.Conflict: -32009,
    errors.EmbedderUnavailable: -32010,
    errors.ShuttingDown: -32013,
    errors.SchemaError: -32014,
    errors.DocumentUnreadable: -32012,
    errors.InvalidInput: INVALID_PARAMS,
}
# Errors of modules kept off the start-up path (httpx, the policy), matched by their reason.
REASON_CODES = {"llm_failed": -32011, "invalid_policy": -32015}

MESSAGES = {
    PARSE_ERROR: "Parse error",
    INVALID_REQUEST: "Invalid Request",
    METHOD_NOT_FOUND: "Method not found",
    INVALID_PARAMS: "Invalid params",
    INTERNAL_ERROR: "Internal error",
}

# Documented in the README and in the OpenRPC document.
ERROR_TABLE: list[dict[str, Any]] = [
    {"code": PARSE_ERROR, "reason": "parse_error", "meaning": "the message is not valid JSON"},
    {
        "code": INVALID_REQUEST,
        "reason": "invalid_request",
        "meaning": "not a JSON-RPC 2.0 request object (or an empty batch, a message over max_message_bytes or a batch over max_batch_items)",
    },
    {"code": METHOD_NOT_FOUND, "reason": "method_not_found", "meaning": "no such method"},
    {
        "code": INVALID_PARAMS,
        "reason": "invalid_params",
        "meaning": "a parameter has the wrong type, an unknown name or value, or breaks a rule; data.field names it",
    },
    {
        "code": INTERNAL_ERROR,
        "reason": "internal_error",
        "meaning": "a bug; details go to the server log, never to the client",
    },
    {
        "code": -32001,
        "reason": "payload_too_large",
        "meaning": "a field, document or read result exceeds a documented limit (data.limit names the setting)",
    },
    {
        "code": -32002,
        "reason": "storage_busy",
        "meaning": "another process held the database lock longer than lock_wait_s",
    },
    {
        "code": -32004,
        "reason": "not_found",
        "meaning": "a referenced block or relationship does not exist; data.field names the parameter",
    },
    {
        "code": -32008,
        "reason": "request_cancelled",
        "meaning": "cancelled by $/cancelRequest; nothing was written",
    },
    {
        "code": -32009,
        "reason": "conflict",
        "meaning": "duplicate relationship (data.existing_id), existing id, stale expected_version, or children present",
    },
    {
        "code": -32010,
        "reason": "embedder_unavailable",
        "meaning": "the operation needs the embedding model and none is loaded",
    },
    {
        "code": -32012,
        "reason": "document_unreadable",
        "meaning": "a document is unsupported, corrupt, encrypted or has no text (data.kind); nothing was stored",
    },
    {
        "code": -32011,
        "reason": "llm_failed",
        "meaning": "the LLM provider gave no usable answer after retries (data says why)",
    },
    {"code": -32013, "reason": "shutting_down", "meaning": "the process is stopping"},
    {
        "code": -32014,
        "reason": "schema_mismatch",
        "meaning": "the database was written by a newer version",
    },
    {
        "code": -32015,
        "reason": "invalid_policy",
        "meaning": "a memory_policy.toml cannot be read or breaks a rule (data.file names it)",
    },
]


def code_for(exc: errors.ReosError) -> int:
    for cls in type(exc).__mro__:
        if cls in APP_CODES:
            return APP_CODES[cls]  # type: ignore[index]
    return REASON_CODES.get(exc.reason, -32000)
