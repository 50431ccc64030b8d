"""The entry points of `reos-memory` and `sqrl` ([project.scripts]); the commands, each beside
its arguments, are in `reos.py` and `sqrl.py`."""

from __future__ import annotations

import os
import sys

from reos_memory.cli import reos


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
        from reos_memory.interfaces import claude_hook as hook

        if args.worker:
            return hook.work(config)
        return hook.run(config, sys.stdin.buffer.read(hook.MAX_INPUT + 1))
    run = reos.COMMANDS[command].run
    assert run is not None  # only `schema` and `hook` are run above
    return run(config, args)


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
    return sqrl.COMMANDS[args.command].run(config, args)


if __name__ == "__main__":
    raise SystemExit(main())
