"""JSON-RPC 2.0 as both servers speak it (the local service over stdio, `interfaces/jsonrpc`; the
team server over HTTP, `team_http`): the protocol's error codes and the error table generated
from them and the domain errors, and one dispatch of a request object - its envelope checked,
its method looked up, its params converted, a failure mapped to its reply - that either
transport runs (how and where a handler runs is the transport's).

Each application error's code, reason and meaning live on its class in `reos_memory.errors`;
only the protocol-level codes are defined here."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypedDict

import msgspec

from reos_memory import errors
from reos_memory.interfaces.registry import MethodSpec, MethodTable, convert_params
from reos_memory.json_types import JSONMapping, JSONObject

RequestId = str | int | float | None  # JSON-RPC's id: a string, a number or null

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


class ErrorRow(TypedDict):
    """One row of the error table."""

    code: int
    reason: str
    meaning: str


# Codes the protocol itself answers (framing, dispatch, param conversion, bugs).
PROTOCOL_ERRORS: list[ErrorRow] = [
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
ERROR_TABLE: list[ErrorRow] = PROTOCOL_ERRORS + [
    {"code": cls.code, "reason": cls.reason, "meaning": cls.meaning}
    for cls in errors.published()
    if cls.code not in MESSAGES
]


def markdown_table() -> str:
    """ERROR_TABLE as the README shows it."""
    rows = ["| code | reason | meaning |", "|---|---|---|"]
    rows += [f"| {e['code']} | {e['reason']} | {e['meaning']} |" for e in ERROR_TABLE]
    return "\n".join(rows) + "\n"


# -- one request object -----------------------------------------------------------------------

_ID_TYPES = (str, int, float, type(None))
_MISSING = object()


def valid_id(value: object) -> bool:
    """JSON-RPC's rule for an id: a string, a number or null (true/false are not numbers)."""
    return isinstance(value, _ID_TYPES) and not isinstance(value, bool)


def error_obj(code: int, message: str | None = None, **data: object) -> JSONObject:
    err: JSONObject = {"code": code, "message": message or MESSAGES.get(code, "Server error")}
    if data:
        err["data"] = data
    return err


def failure(req_id: RequestId, code: int, message: str | None = None, **data: object) -> JSONObject:
    return {"jsonrpc": "2.0", "id": req_id, "error": error_obj(code, message, **data)}


class Refused(Exception):
    """A request answered before its handler runs; `reply` is None for a notification."""

    def __init__(self, reply: JSONObject | None) -> None:
        self.reply = reply


def refused(
    rid: RequestId, is_notification: bool, code: int, message: str, reason: str, /, **data: object
) -> Refused:
    """The refusal of a request that names a method: a notification gets no reply."""
    return Refused(None if is_notification else failure(rid, code, message, reason=reason, **data))


def envelope(obj: object, bad_text: bool = False, no_nul: bool = False) -> tuple[RequestId, bool]:
    """The request's id (None for a notification) and whether it is one; Refused when the
    envelope breaks JSON-RPC's rules or (`bad_text`: the message was decoded leniently) the
    request holds text that is not valid Unicode, or (`no_nul`: a store that keeps no NUL, as
    PostgreSQL's text) a NUL character."""
    if not isinstance(obj, dict):
        raise Refused(
            failure(
                None,
                INVALID_REQUEST,
                "Invalid Request: expected an object",
                reason="invalid_request",
            )
        )
    req_id = obj.get("id", _MISSING)
    is_notification = req_id is _MISSING
    if not is_notification and not valid_id(req_id):
        raise Refused(
            failure(
                None,
                INVALID_REQUEST,
                "Invalid Request: id must be a string, number or null",
                reason="invalid_request",
                field="$.id",
            )
        )
    rid = None if is_notification else req_id
    problem = _envelope_problem(obj)
    if problem is not None:
        field, rule = problem
        raise Refused(
            failure(
                rid,
                INVALID_REQUEST,
                f"Invalid Request: {rule} - at `{field}`",
                reason="invalid_request",
                field=field,
                rule=rule,
            )
        )
    where = _find_bad_text(obj, "$", nul=no_nul) if bad_text or no_nul else None
    if where is not None:
        in_params = where.startswith("$.params")
        field = "$" + where[len("$.params") :] if in_params else where
        rule = TEXT_RULE if bad_text and _find_bad_text(obj, "$") == where else NUL_RULE
        raise refused(
            rid,
            is_notification,
            INVALID_PARAMS if in_params else INVALID_REQUEST,
            f"{rule} - at `{field}`",
            "invalid_params" if in_params else "invalid_request",
            field=field,
            rule=rule,
        )
    return rid, is_notification


def check_batch(batch: Sequence[object], max_items: int) -> None:
    """Refused for an empty batch, or one of more than `max_items` requests (refused whole,
    before any item runs: one message must not queue unbounded work, nor replies to hold)."""
    if not batch:
        raise Refused(
            failure(None, INVALID_REQUEST, "Invalid Request: empty batch", reason="invalid_request")
        )
    if len(batch) > max_items:
        raise Refused(
            failure(
                None,
                INVALID_REQUEST,
                f"Invalid Request: batch of {len(batch)} items exceeds the limit of"
                f" {max_items} items (max_batch_items); nothing of it was run,"
                " send it in smaller batches",
                reason="payload_too_large",
                limit="max_batch_items",
                limit_items=max_items,
                items=len(batch),
            )
        )


def lookup(table: MethodTable, method: str, rid: RequestId, is_notification: bool) -> MethodSpec:
    """The method's spec; Refused (-32601) when there is none."""
    spec = table.methods.get(method)
    if spec is None:
        raise refused(
            rid,
            is_notification,
            METHOD_NOT_FOUND,
            f"Method not found: {method}",
            "method_not_found",
            method=method,
        )
    return spec


def params_of(
    spec: MethodSpec, raw: object, rid: RequestId, is_notification: bool
) -> msgspec.Struct:
    """The request's params as the method's Struct; Refused (-32602) naming the field."""
    try:
        return convert_params(spec, raw)
    except errors.InvalidInput as exc:
        raise refused(
            rid,
            is_notification,
            INVALID_PARAMS,
            f"Invalid params: {exc.message}",
            "invalid_params",
            **exc.data,
        ) from None


def domain_failure(rid: RequestId, exc: errors.ReosError) -> JSONObject:
    """A domain error's reply: its code, message and machine-readable reason."""
    code = exc.code  # each domain error class carries its code
    message = exc.message if code != INVALID_PARAMS else f"Invalid params: {exc.message}"
    return failure(rid, code, message, reason=exc.reason, **exc.data)


def internal_failure(rid: RequestId, incident: str, **data: object) -> JSONObject:
    """A bug's reply: nothing of it but the incident id under which the log has its details."""
    return failure(
        rid, INTERNAL_ERROR, "Internal error", reason="internal_error", incident=incident, **data
    )


def _envelope_problem(obj: JSONMapping) -> tuple[str, str] | None:
    if obj.get("jsonrpc") != "2.0":
        return "$.jsonrpc", 'must be exactly "2.0"'
    method = obj.get("method", _MISSING)
    if method is _MISSING:
        return "$.method", "is required"
    if not isinstance(method, str):
        return "$.method", "must be a string"
    params = obj.get("params", _MISSING)
    if params is not _MISSING and not isinstance(params, (dict, list)):
        return "$.params", "must be an object or an array when present"
    return None


TEXT_RULE = "must be valid Unicode text (invalid UTF-8 or a lone surrogate)"
NUL_RULE = "must not contain a NUL character (U+0000)"


def find_bad_text(value: object, path: str = "$", nul: bool = True) -> str | None:
    """Where in `value` a string is no valid Unicode, or (`nul`) holds a NUL; None if nowhere."""
    return _find_bad_text(value, path, nul)


def _find_bad_text(value: object, path: str, nul: bool = False) -> str | None:
    if isinstance(value, str):
        if nul and "\x00" in value:
            return path
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return path
        return None
    if isinstance(value, dict):
        for k, v in value.items():
            bad = _find_bad_text(k, path, nul) or _find_bad_text(v, f"{path}.{k}", nul)
            if bad:
                return bad
    elif isinstance(value, list):
        for i, v in enumerate(value):
            bad = _find_bad_text(v, f"{path}[{i}]", nul)
            if bad:
                return bad
    return None
