"""OpenRPC documents, generated from the registered methods' msgspec types: one generator for
every JSON-RPC endpoint (the local stdio service's, the team server's over HTTP)."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from typing import Annotated

import msgspec

from reos_memory.errors import ReosError
from reos_memory.interfaces.registry import MethodTable, clean_descriptions
from reos_memory.json_types import JSONMapping, JSONObject, as_object

_REF = "#/components/schemas/{name}"

# `rpc.discover`'s result: the document, encoded once; described as the object it is
DocumentResult = Annotated[msgspec.Raw, msgspec.Meta(extra_json_schema={"type": "object"})]
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


def _published_refs(node: object) -> object:
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
    info: JSONMapping,
    meanings: Mapping[int, str],
    read_errors: Sequence[type[ReosError]] = (),
) -> JSONObject:
    """The OpenRPC 1.3 document for every method in the registry: `info` as given, each error
    described by `meanings` of its code, and `read_errors` added to every read method."""
    specs = sorted(registry.methods.values(), key=lambda s: s.name)
    types: list[object] = []
    for s in specs:
        types.append(s.params)
        types.append(s.result if s.result is not None else type(None))
    raw_schemas, raw_components = msgspec.json.schema_components(types, ref_template=_REF)
    schemas = clean_descriptions(_published_refs(raw_schemas))
    assert isinstance(schemas, tuple)
    components = {
        _published(k): clean_descriptions(_published_refs(v)) for k, v in raw_components.items()
    }
    methods = []
    for i, s in enumerate(specs):
        pschema = as_object(components[s.params.__name__], s.params.__name__)
        required = pschema.get("required", [])
        assert isinstance(required, list)
        properties = as_object(pschema.get("properties", {}), s.params.__name__)
        params = [
            {
                "name": name,
                "required": name in required,
                "schema": copy.deepcopy(prop),
            }
            for name, prop in properties.items()
        ]
        entry: JSONObject = {
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


def _plain_bounds(node: object) -> object:
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


def plain(doc: JSONObject) -> JSONObject:
    """The document with whole-number bounds written as integers (see `_plain_bounds`)."""
    return as_object(_plain_bounds(doc), "document")


def encoded(doc: JSONMapping) -> msgspec.Raw:
    """A document as `rpc.discover` answers it."""
    return msgspec.Raw(msgspec.json.encode(doc))


def as_text(doc: JSONMapping) -> str:
    """A document as committed under rpc_schema/."""
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
