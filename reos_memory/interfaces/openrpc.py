"""OpenRPC documents, generated from the registered methods' msgspec types: one generator for
every JSON-RPC endpoint (the local stdio service's, the team server's over HTTP)."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from reos_memory.errors import ReosError
from reos_memory.interfaces.registry import MethodTable, clean_descriptions

_REF = "#/components/schemas/{name}"
# Types whose short name is taken twice are published by their qualified name; those names were
# fixed when the types lived in `rpc/`, and a client may refer to them, so they keep that spelling.
_PUBLISHED_PREFIX = {
    "reos_memory.interfaces.jsonrpc.types.": "reos_memory.rpc.types.",
    "reos_memory.graph.api.": "reos_memory.rpc.types.",
    "reos_memory.documents.api.": "reos_memory.rpc.types.",
    "reos_memory.squirrel.api.": "reos_memory.rpc.types_squirrel.",
}


def _published(name: str) -> str:
    for now, published in _PUBLISHED_PREFIX.items():
        if name.startswith(now):
            return published + name[len(now) :]
    return name


def _published_refs(node: Any) -> Any:
    if isinstance(node, dict):
        return {
            k: _REF.format(name=_published(v.removeprefix(_REF.format(name=""))))
            if k == "$ref" and isinstance(v, str)
            else _published_refs(v)
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [_published_refs(v) for v in node]
    return node


def build_document(
    registry: MethodTable,
    *,
    info: dict[str, Any],
    meanings: Mapping[int, str],
    read_errors: Sequence[type[ReosError]] = (),
) -> dict[str, Any]:
    """The OpenRPC 1.3 document for every method in the registry: `info` as given, each error
    described by `meanings` of its code, and `read_errors` added to every read method."""
    specs = sorted(registry.methods.values(), key=lambda s: s.name)
    types: list[Any] = []
    for s in specs:
        types.append(s.params)
        types.append(s.result if s.result is not None else type(None))
    schemas, components = msgspec.json.schema_components(types, ref_template=_REF)
    schemas = clean_descriptions(_published_refs(schemas))
    components = {
        _published(k): clean_descriptions(_published_refs(v)) for k, v in components.items()
    }
    methods = []
    for i, s in enumerate(specs):
        pschema = components[s.params.__name__]
        required = set(pschema.get("required", []))
        params = [
            {
                "name": name,
                "required": name in required,
                "schema": copy.deepcopy(prop),
            }
            for name, prop in pschema.get("properties", {}).items()
        ]
        entry: dict[str, Any] = {
            "name": s.name,
            "summary": s.summary,
            "paramStructure": "either",
            "params": params,
            "result": {"name": "result", "schema": schemas[2 * i + 1]},
            "x-execution": s.kind,
        }
        if s.description:
            entry["description"] = s.description
        extra = [e for e in read_errors if s.kind == "read" and e not in s.errors]
        errors = [*s.errors, *extra]
        if errors:
            entry["errors"] = [
                {"code": c.code, "message": c.reason, "data": meanings[c.code]} for c in errors
            ]
        methods.append(entry)
    # Param Structs are inlined into each method's params; only referenced ones stay.
    param_names = {s.params.__name__ for s in specs}
    text = json.dumps(methods)
    kept = {k: v for k, v in components.items() if k not in param_names or f'/{k}"' in text}
    return {
        "openrpc": "1.3.2",
        "info": info,
        "methods": methods,
        "components": {"schemas": dict(sorted(kept.items()))},
    }


_BOUNDS = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})


def _plain_bounds(node: Any) -> Any:
    """Bounds that are whole numbers written as integers. typing caches equal Annotated types
    (Meta(ge=0) == Meta(ge=0.0)), so whichever module built one first would otherwise decide
    whether the document says 0 or 0.0."""
    if isinstance(node, dict):
        return {
            k: int(v)
            if k in _BOUNDS and isinstance(v, float) and v.is_integer()
            else _plain_bounds(v)
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [_plain_bounds(v) for v in node]
    return node


def plain(doc: dict[str, Any]) -> dict[str, Any]:
    """The document with whole-number bounds written as integers (see `_plain_bounds`)."""
    return _plain_bounds(doc)  # type: ignore[no-any-return]


def as_text(doc: dict[str, Any]) -> str:
    """A document as committed under rpc_schema/."""
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
