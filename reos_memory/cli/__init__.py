"""The entry points of `reos-memory` and `sqrl` ([project.scripts]); the commands, each beside
its arguments, are in `reos.py` and `sqrl.py`."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, BinaryIO

from reos_memory.cli import reos

if TYPE_CHECKING:
    from reos_memory.app import App
    from reos_memory.config import Config
    from reos_memory.embeddings.base import Embedder


def main(argv: list[str] | None = None) -> int:
    # Before numpy loads: a vector scan is memory-bound, and a second BLAS thread only competes
    # with the embedder and SQLite for the cores (measured: search p50 28.6 -> 23.9 ms at 100K).
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    if "MALLOC_ARENA_MAX" not in os.environ:
        from reos_memory import heap

        heap.limit_arenas()
    args = reos.build_parser().parse_args(argv)
    command = args.command or "serve"
    if command == "schema":
        return reos.schema()

    from reos_memory.config import ConfigError, load_config

    try:
        config = load_config(
            getattr(args, "config", None),
            {
                "db": getattr(args, "db", None),
                "log_level": getattr(args, "log_level", None),
                "embedder": getattr(args, "embedder", None),
            },
        )
    except ConfigError as exc:
        sys.stderr.write(f"reos-memory: {exc}\n")
        return 0 if command == "hook" else 2  # a hook never breaks the agent
    if command == "hook":
        return _hook(args, config)
    run = reos.COMMANDS[command].run
    assert run is not None  # only `schema` and `hook` are run above
    from reos_memory.private_files import NotOwnFile

    try:
        return run(config, args)
    except NotOwnFile as exc:  # (a database another user made first: said, not a traceback)
        sys.stderr.write(f"reos-memory: {exc}\n")
        return 2


def _hook(args: argparse.Namespace, config: Config) -> int:
    """`reos-memory hook <tool>`: a hook call, or (hidden) the queue worker or the warm
    service it starts. Only the hook's own modules load before it has its answer."""
    from reos_memory.interfaces import agent_hooks as hook

    # the worker and the service it starts open this same database and config file, whatever
    # their working directory
    if config.db != ":memory:":
        config.db = os.path.abspath(config.db)
    if args.config:
        os.environ["REOS_MEMORY_CONFIG"] = os.path.abspath(args.config)
    if args.worker:
        return hook.work(config, _open_app)
    if args.serve:
        return hook.serve(config, args.lock_fd, _open_app)
    stdin = sys.stdin.buffer.read(hook.MAX_INPUT + 1)
    if len(stdin) > hook.MAX_INPUT:
        _drain(sys.stdin.buffer)  # refused as too big, but read: the agent's write must not fail
    return hook.run(args.agent, config, stdin, _open_app)


def _drain(stream: BinaryIO, limit: int = 256 << 20) -> None:
    """Read and drop what is left of a stream (at most `limit` bytes)."""
    left = limit
    while left > 0:
        chunk = stream.read(min(1 << 20, left))
        if not chunk:
            return
        left -= len(chunk)


def _open_app(
    config: Config,
    *,
    needs_model: bool,
    embedder: str | None = None,
    wait: bool = True,
    preloaded: dict[str, Callable[[], Embedder]] | None = None,
    defer_model: bool = False,
) -> App:
    """`reos_memory.app.open_app`, imported when a hook first opens the App."""
    from reos_memory.app import open_app

    return open_app(
        config,
        needs_model=needs_model,
        embedder=embedder,
        wait=wait,
        preloaded=preloaded,
        defer_model=defer_model,
    )


def sqrl_main(argv: list[str] | None = None) -> int:
    """The `sqrl` command."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    from reos_memory.cli import sqrl

    args = sqrl.build_parser().parse_args(argv)
    from reos_memory.config import ConfigError, load_config

    try:
        config = load_config(args.config, {"db": args.db})
    except ConfigError as exc:
        sys.stderr.write(f"sqrl: {exc}\n")
        return 2
    from reos_memory.private_files import NotOwnFile

    try:
        return sqrl.COMMANDS[args.command].run(config, args)
    except NotOwnFile as exc:
        sys.stderr.write(f"sqrl: {exc}\n")
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
