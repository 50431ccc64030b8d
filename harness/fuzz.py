"""Fuzzing the real server from its own contract, `rpc_schema/openrpc.json`: params generated
from each method's JSON Schema (valid ones, and invalid ones: wrong types, unknown fields, random
JSON), and hostile framing. Every reply must be well-formed JSON-RPC 2.0 with the request's id,
never -32603, and the process must stay alive. Used by tests/test_fuzz_e2e.py (short budget) and
tools/fuzz.py (long budget)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from harness.rpc_client import ROOT, Server

SCHEMA = json.loads((ROOT / "rpc_schema" / "openrpc.json").read_text(encoding="utf-8"))
METHODS = {m["name"]: m for m in SCHEMA["methods"]}
INTERNAL_ERROR = -32603

# JSON values of every kind, nested a little
JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=40),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=12,
)


def from_schema(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values valid under a JSON Schema of the kinds msgspec writes (type, bounds, pattern,
    enum, anyOf, $ref into components, objects with required properties); long strings and
    arrays are kept short so cases stay quick."""
    if "$ref" in schema:
        return st.deferred(lambda: from_schema(_ref(schema["$ref"])))
    if "anyOf" in schema:
        return st.one_of([from_schema(s) for s in schema["anyOf"]])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    kind = schema.get("type")
    if kind == "null":
        return st.none()
    if kind == "boolean":
        return st.booleans()
    if kind == "integer":
        lo = schema.get("minimum", -(2**63))
        if "exclusiveMinimum" in schema:
            lo = int(schema["exclusiveMinimum"]) + 1
        return st.integers(lo, schema.get("maximum", 2**63))
    if kind == "number":
        return st.floats(
            schema.get("minimum", schema.get("exclusiveMinimum")),
            schema.get("maximum"),
            allow_nan=False,
            allow_infinity=False,
            exclude_min="exclusiveMinimum" in schema,
        )
    if kind == "string":
        lo, hi = schema.get("minLength", 0), min(schema.get("maxLength", 60), 60)
        if "pattern" in schema:
            return st.from_regex(schema["pattern"], fullmatch=True).filter(
                lambda t: lo <= len(t) <= schema.get("maxLength", 10**9)
            )
        return st.text(min_size=lo, max_size=max(lo, hi))
    if kind == "array":
        lo = schema.get("minItems", 0)
        items = from_schema(schema["items"]) if "items" in schema else JSON
        return st.lists(items, min_size=lo, max_size=max(lo, min(schema.get("maxItems", 4), 4)))
    if kind == "object":
        props = schema.get("properties")
        if props is None:  # a free-form object
            return st.dictionaries(st.text(max_size=12), JSON, max_size=4)
        required = set(schema.get("required", []))
        return st.fixed_dictionaries(
            {k: from_schema(v) for k, v in props.items() if k in required},
            optional={k: from_schema(v) for k, v in props.items() if k not in required},
        )
    return JSON


def _ref(ref: str) -> dict[str, Any]:
    node: Any = SCHEMA
    for part in ref.removeprefix("#/").split("/"):
        node = node[part]
    return node


def params_schema(method: str) -> dict[str, Any]:
    """A method's params as one JSON Schema object (by name)."""
    m = METHODS[method]
    return {
        "type": "object",
        "properties": {p["name"]: p["schema"] for p in m["params"]},
        "required": [p["name"] for p in m["params"] if p.get("required")],
    }


def valid_params(method: str) -> st.SearchStrategy[dict[str, Any]]:
    return from_schema(params_schema(method))


def invalid_params(method: str) -> st.SearchStrategy[Any]:
    """Params that break the schema: a field of the wrong type, an unknown field, or not an
    object at all (a positional list is allowed by the spec, so lists are random too)."""
    names = [p["name"] for p in METHODS[method]["params"]]
    wrong_field = (
        st.tuples(st.sampled_from(names), JSON).map(lambda kv: {kv[0]: kv[1]})
        if names
        else st.just({"unexpected": 1})
    )
    unknown = st.dictionaries(
        st.text(min_size=1, max_size=12).filter(lambda k: k not in names), JSON, min_size=1
    )
    return wrong_field | unknown | JSON


def check_reply(reply: Any, rid: Any) -> None:
    """A well-formed JSON-RPC 2.0 reply to `rid`: result xor error, never an internal error."""
    assert isinstance(reply, dict) and reply.get("jsonrpc") == "2.0", reply
    assert reply.get("id") == rid, (reply, rid)
    assert ("result" in reply) != ("error" in reply), reply
    if "error" in reply:
        err = reply["error"]
        assert isinstance(err.get("code"), int) and isinstance(err.get("message"), str), reply
        assert err["code"] != INTERNAL_ERROR, reply


def call_and_check(srv: Server, method: str, params: Any, timeout: float = 60.0) -> dict:
    rid = srv.request(method, params)
    reply = srv.response(rid, timeout)
    check_reply(reply, rid)
    return reply


def hostile_frames(max_bytes: int) -> list[tuple[str, bytes]]:
    """(what, raw line) pairs that a parser must survive; each gets exactly one error reply."""
    deep = b"[" * 100_000 + b"]" * 100_000
    return [
        ("deep nesting", deep),
        ("deep object nesting", b'{"a":' * 50_000 + b"1" + b"}" * 50_000),
        (
            "a line over the size limit",
            b'{"jsonrpc":"2.0","id":1,"method":"ping","x":"' + b"x" * (max_bytes + 10) + b'"}',
        ),
        (
            "invalid UTF-8",
            b'{"jsonrpc":"2.0","id":2,"method":"memory/search","params":{"query":"\xff\xfe"}}',
        ),
        (
            "a lone surrogate",
            b'{"jsonrpc":"2.0","id":3,"method":"memory/search","params":{"query":"\\ud800"}}',
        ),
        ("not JSON", b"{this is not json"),
        ("an empty batch", b"[]"),
        ("a scalar", b"42"),
    ]


ODD_IDS = [0, -1, 2**53, 1.5, -0.0, 1e300, "", "\u00e9\u4e2d", "x" * 1000]
BAD_IDS = [True, False, {"a": 1}, [1]]


def mixed_batch() -> list[Any]:
    return [
        {"jsonrpc": "2.0", "id": "b1", "method": "ping"},
        {"jsonrpc": "2.0", "method": "ping"},  # a notification: no reply
        {"jsonrpc": "2.0", "id": "b2", "method": "nope/unknown"},
        {"jsonrpc": "2.0", "id": "b3", "method": "memory/search", "params": {"query": " "}},
        {"jsonrpc": "1.0", "id": "b4", "method": "ping"},
        42,
        {"jsonrpc": "2.0", "id": "b5", "method": "memory/stats", "params": {}},
    ]


def fresh_server(tmp: Path) -> Server:
    return Server(tmp / "fuzz.db", embedder="hash", env={"REOS_MEMORY_LLM_PROVIDER": "none"})
