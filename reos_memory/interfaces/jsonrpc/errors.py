"""JSON-RPC's own error codes, and the error table generated from them and the domain errors.

Each application error's code, reason and meaning live on its class in `reos_memory.errors`;
only the protocol-level codes are defined here."""

from __future__ import annotations

from typing import Any

from reos_memory import errors

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

MESSAGES = {
    PARSE_ERROR: "Parse error",
    INVALID_REQUEST: "Invalid Request",
    METHOD_NOT_FOUND: "Method not found",
    INVALID_PARAMS: "Invalid params",
    INTERNAL_ERROR: "Internal error",
}

# Codes the protocol itself answers (framing, dispatch, param conversion, bugs).
PROTOCOL_ERRORS: list[dict[str, Any]] = [
    {"code": PARSE_ERROR, "reason": "parse_error", "meaning": "not valid JSON (id null)"},
    {
        "code": INVALID_REQUEST,
        "reason": "invalid_request",
        "meaning": "not a JSON-RPC 2.0 request object or an empty batch; also (with"
        " `data.reason` `payload_too_large`) a message over `max_message_bytes` or a batch over"
        " `max_batch_items`",
    },
    {"code": METHOD_NOT_FOUND, "reason": "method_not_found", "meaning": "no such method"},
    {
        "code": INVALID_PARAMS,
        "reason": errors.InvalidInput.reason,
        "meaning": errors.InvalidInput.meaning,
    },
    {
        "code": INTERNAL_ERROR,
        "reason": "internal_error",
        "meaning": "a bug; details in the log under `data.incident`",
    },
]

# Documented in the README and in the OpenRPC document: the protocol's codes, then one row per
# domain error class with a code of its own.
ERROR_TABLE: list[dict[str, Any]] = PROTOCOL_ERRORS + [
    {"code": cls.code, "reason": cls.reason, "meaning": cls.meaning}
    for cls in errors.published()
    if cls.code not in MESSAGES
]


def markdown_table() -> str:
    """ERROR_TABLE as the README shows it."""
    rows = ["| code | reason | meaning |", "|---|---|---|"]
    rows += [f"| {e['code']} | {e['reason']} | {e['meaning']} |" for e in ERROR_TABLE]
    return "\n".join(rows) + "\n"
