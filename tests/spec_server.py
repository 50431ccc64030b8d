"""The real JSON-RPC engine and framing on stdio, serving the example methods of the
JSON-RPC 2.0 specification's section 7, so its examples can be replayed exactly."""

from __future__ import annotations

import sys

import msgspec

from reos_memory.interfaces.jsonrpc.framing import FrameReader, FrameWriter
from reos_memory.interfaces.jsonrpc.server import Server
from reos_memory.interfaces.registry import Registry
from reos_memory.logs import setup_logging

registry = Registry()


class Subtract(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    minuend: int
    subtrahend: int


class Numbers(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    a: int = 0
    b: int = 0
    c: int = 0
    d: int = 0
    e: int = 0


class Empty(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    pass


@registry.method("subtract", params=Subtract, result=int, kind="inline")
def subtract(ctx, p: Subtract) -> int:
    """Subtract."""
    return p.minuend - p.subtrahend


@registry.method("sum", params=Numbers, result=int, kind="read")
def sum_(ctx, p: Numbers) -> int:
    """Sum."""
    return p.a + p.b + p.c + p.d + p.e


@registry.method("update", params=Numbers, result=None, kind="write")
def update(ctx, p: Numbers) -> None:
    """Update."""


@registry.method("notify_hello", params=Numbers, result=None, kind="inline")
def notify_hello(ctx, p: Numbers) -> None:
    """Hello."""


@registry.method("get_data", params=Empty, result=list, kind="read")
def get_data(ctx, p: Empty) -> list:
    """Data."""
    return ["hello", 5]


class Explosive(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Params whose conversion raises something no handler expects (not a validation error)."""

    def __post_init__(self) -> None:
        raise RuntimeError("boom")


@registry.method("explode", params=Explosive, result=None, kind="read")
def explode(ctx, p: Explosive) -> None:
    """Never reached: converting the params raises first."""


def main() -> None:
    reader = FrameReader(sys.stdin.buffer, 1 << 20)
    Server(
        None, registry, reader, FrameWriter(sys.stdout.fileno(), reader), setup_logging("warning")
    ).serve()


if __name__ == "__main__":
    main()
