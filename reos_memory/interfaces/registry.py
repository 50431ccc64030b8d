"""Method registration and parameter conversion (msgspec Structs, named or positional)."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Generic, Literal, TypeVar

import msgspec
import msgspec.inspect as mi

from reos_memory.errors import InvalidInput, ReosError
from reos_memory.json_types import JSONObject, as_object

# inline: cheap, no I/O, answered on the reading thread, waits for nothing;
# read: database reads on a pool of threads, each after the writes the client sent before it;
# write: quick writes, one at a time on the write thread, in the order they arrived;
# pipeline: Squirrel's writes that may call the Memory Writer, ordered like writes but on their
#   own thread so the write thread never waits on the network;
# heavy: long jobs (batch index, documents, auto-link, CR-Memory, and memory/extract, whose LLM
#   call may last the provider's timeout x retries) on their own threads; they start after
#   earlier writes and nothing waits for them.
# Every kind but inline may write to SQLite from its own thread: BEGIN IMMEDIATE and the busy
# handler serialise them, the write thread only keeps quick writes from queueing on the lock.
Kind = Literal["inline", "read", "write", "pipeline", "heavy"]


C = TypeVar("C")  # what a handler gets besides its params: a request's context, an MCP env
P = TypeVar("P", bound=msgspec.Struct)
R = TypeVar("R")


@dataclass
class MethodSpec(Generic[C]):
    name: str
    handler: Callable[[C, msgspec.Struct], object]  # the function, on params of type `params`
    params: type[msgspec.Struct]
    result: object  # the result's type, as msgspec reads it for the schema
    kind: Kind
    summary: str
    description: str
    errors: list[type[ReosError]] = field(default_factory=list)  # what a client may meet
    field_names: tuple[str, ...] = ()


class MethodTable(Generic[C]):
    """Name -> method. Registering a name twice is a programming error and raises. Handlers are
    registered through a typed decorator (`Registry.method`, the team server's `method`)."""

    def __init__(self) -> None:
        self.methods: dict[str, MethodSpec[C]] = {}

    def add(
        self,
        name: str,
        fn: Callable[[C, P], object],
        *,
        params: type[P],
        result: object,
        kind: Kind,
        errors: list[type[ReosError]] | None,
        doc: str | None,
    ) -> None:
        """Register `fn` under `name`; `doc` (the function's docstring) gives its summary and
        description."""
        if name in self.methods:
            raise ValueError(f"method {name!r} is registered twice")

        def handler(ctx: C, p: msgspec.Struct) -> object:
            if not isinstance(p, params):  # the dispatchers convert to `params`: a bug
                raise TypeError(f"{name}: params of type {type(p).__name__}, not {params.__name__}")
            return fn(ctx, p)

        summary, _, rest = inspect.cleandoc(doc or "").partition("\n")
        self.methods[name] = MethodSpec(
            name=name,
            handler=handler,
            params=params,
            result=result,
            kind=kind,
            summary=summary.strip(),
            description=" ".join(line.strip() for line in rest.splitlines()).strip(),
            errors=list(errors or []),
            field_names=tuple(f.name for f in msgspec.structs.fields(params)),
        )


class Registry(MethodTable[C]):
    """Methods whose handlers take (context, params): a handler whose params type is not the
    Struct declared for it, or whose first argument is not this registry's context, fails mypy
    at its decorator."""

    def method(
        self,
        name: str,
        *,
        params: type[P],
        result: type[R],
        kind: Kind = "read",
        errors: list[type[ReosError]] | None = None,
    ) -> Callable[[Callable[[C, P], R]], Callable[[C, P], R]]:
        def register(fn: Callable[[C, P], R]) -> Callable[[C, P], R]:
            self.add(
                name, fn, params=params, result=result, kind=kind, errors=errors, doc=fn.__doc__
            )
            return fn

        return register


def input_schemas(specs: list[MethodSpec]) -> dict[str, JSONObject]:
    """Each method's params Struct as the JSON Schema an MCP tool's `inputSchema` takes (plainer
    for agents, see `_simplify`); a Struct nested in the params comes along under `$defs`."""
    _, raw = msgspec.json.schema_components(
        [s.params for s in specs], ref_template="#/$defs/{name}"
    )
    components = as_object(clean_descriptions(raw), "schema components")
    out: dict[str, JSONObject] = {}
    for s in specs:
        schema = as_object(_simplify(components[s.params.__name__]), s.name)
        schema.pop("title", None)
        schema.pop("description", None)
        if "#/$defs/" in msgspec.json.encode(schema).decode():
            schema["$defs"] = {
                k: _simplify(v) for k, v in components.items() if k != s.params.__name__
            }
        out[s.name] = schema
    return out


def clean_descriptions(node: object) -> object:
    """The schema with every `description` cleaned as `inspect.cleandoc` does. A description
    taken from a docstring otherwise depends on the interpreter (3.13 strips the indentation of
    docstrings when it compiles them, 3.11 keeps it) and on msgspec's version (0.23 dedents it,
    older ones did not), and so would the documents committed under rpc_schema/."""
    if isinstance(node, dict):
        return {
            k: inspect.cleandoc(v)
            if k == "description" and isinstance(v, str)
            else (clean_descriptions(v))
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [clean_descriptions(v) for v in node]
    return node


def _simplify(node: object) -> object:
    """Plainer schema for agents: an optional field shows its type (null is still accepted),
    a string enum says it is a string."""
    if isinstance(node, list):
        return [_simplify(x) for x in node]
    if not isinstance(node, dict):
        return node
    node = {k: _simplify(v) for k, v in node.items()}
    variants = node.get("anyOf")
    if isinstance(variants, list) and {"type": "null"} in variants and len(variants) == 2:
        (inner,) = [v for v in variants if v != {"type": "null"}]
        rest = {
            k: v for k, v in node.items() if k != "anyOf" and not (k == "default" and v is None)
        }
        node = {**inner, **rest}
    enum = node.get("enum")
    if isinstance(enum, list) and "type" not in node and all(isinstance(v, str) for v in enum):
        node = {"type": "string", **node}
    return node


_PATH = re.compile(r"at `(\$[^`]*)`")
_UNKNOWN = re.compile(r"Object contains unknown field `([^`]*)`")
_STEP = re.compile(r"\.([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]|\[(?:'|\")(.*?)(?:'|\")\]")


def convert_params(spec: MethodSpec, params: object) -> msgspec.Struct:
    """Turn JSON params (object, array or absent) into the method's Struct, or raise InvalidInput."""
    if params is None:
        params = {}
    elif isinstance(params, list):
        if len(params) > len(spec.field_names):
            raise InvalidInput(
                "",
                f"takes at most {len(spec.field_names)} positional params"
                f" ({', '.join(spec.field_names)}), got {len(params)}",
            )
        params = dict(zip(spec.field_names, params, strict=False))
    return parse(spec.params, params)


def parse(params_type: type[P], raw: object, *, strict: bool = True) -> P:
    """`raw` (JSON-like, as a client sent it) as `params_type`, or InvalidInput naming the field
    and the rule. Not `strict`: a web form's or query's strings convert to the field's type
    ("50" to 50), as msgspec's lax mode does."""
    try:
        return msgspec.convert(raw, params_type, strict=strict)
    except msgspec.ValidationError as exc:
        raise _explain(params_type, str(exc)) from None


def _explain(struct: type, message: str) -> InvalidInput:
    m = _PATH.search(message)
    path = m.group(1) if m else "$"
    rule = message[: m.start()].rstrip(" -") if m else message
    allowed = _allowed_at(struct, path)
    if allowed and (
        "enum" in rule.lower() or "literal" in rule.lower() or "invalid" in rule.lower()
    ):
        rule += " (valid: " + ", ".join(map(str, allowed)) + ")"
    unknown = _UNKNOWN.match(rule)
    if unknown:
        if path == "$":
            rule += " (known: " + ", ".join(f.name for f in msgspec.structs.fields(struct)) + ")"
        path = f"{path}.{unknown.group(1)}"
    err = InvalidInput(path[2:] if path.startswith("$.") else "", rule)
    err.data["field"] = path
    err.message = f"{rule} - at `{path}`"
    return err


def _allowed_at(struct: type, path: str) -> list[object] | None:
    """Literal values allowed at a `$.a[0].b` path of a Struct type, if it is an enum-like field."""
    try:
        t = mi.type_info(struct)
    except Exception:
        return None
    pos = 1
    while pos < len(path):
        m = _STEP.match(path, pos)
        if not m:
            return None
        pos = m.end()
        t = _unwrap(t)
        if m.group(1) is not None:
            if not isinstance(t, mi.StructType):
                return None
            match = [f for f in t.fields if f.encode_name == m.group(1)]
            if not match:
                return None
            t = match[0].type
        else:
            if isinstance(t, (mi.ListType, mi.SetType, mi.FrozenSetType, mi.VarTupleType)):
                t = t.item_type
            elif isinstance(t, mi.DictType):
                t = t.value_type
            else:
                return None
    t = _unwrap(t)
    if isinstance(t, mi.LiteralType):
        return list(t.values)
    if isinstance(t, (mi.ListType, mi.SetType)):
        item = _unwrap(t.item_type)
        if isinstance(item, mi.LiteralType):
            return list(item.values)
    return None


def _unwrap(t: mi.Type) -> mi.Type:
    while True:
        if isinstance(t, mi.Metadata):
            t = t.type
        elif isinstance(t, mi.UnionType):
            real = [
                x
                for x in t.types
                if not isinstance(x, mi.NoneType) and type(x).__name__ != "UnsetType"
            ]
            if len(real) != 1:
                return t
            t = real[0]
        else:
            return t
