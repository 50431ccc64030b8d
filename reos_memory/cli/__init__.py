"""Command line: argument parsing only."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any

from reos_memory import __version__

if TYPE_CHECKING:
    from reos_memory.config import Config


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="reos-memory",
        description="Local-first memory service for AI agents (JSON-RPC 2.0 over stdio).",
    )
    parser.add_argument("--version", action="version", version=f"reos-memory {__version__}")
    sub = parser.add_subparsers(dest="command")
    serve = sub.add_parser("serve", help="serve JSON-RPC on stdin/stdout (the default command)")
    _common(serve)
    serve.add_argument("--log-level", choices=["debug", "info", "warning", "error"])
    serve.add_argument("--embedder", choices=["onnx", "sentence-transformers", "hash", "none"])
    mcp = sub.add_parser("mcp", help="serve the Model Context Protocol on stdin/stdout (MCP tools)")
    _common(mcp)
    mcp.add_argument("--log-level", choices=["debug", "info", "warning", "error"])
    mcp.add_argument("--embedder", choices=["onnx", "sentence-transformers", "hash", "none"])
    model = sub.add_parser("model", help="prepare or inspect the embedding model")
    msub = model.add_subparsers(dest="model_command", required=True)
    prep = msub.add_parser("prepare", help="export all-MiniLM-L6-v2 to ONNX once and verify it")
    _common(prep)
    prep.add_argument("--force", action="store_true", help="export again even if prepared")
    prep.add_argument("--sts", help="STS-B test file to verify against (Spearman >= 0.82)")
    status = msub.add_parser("status", help="print where the model is and whether it is prepared")
    _common(status)
    mig = sub.add_parser("migrate", help="apply pending database migrations and exit")
    _common(mig)
    sub.add_parser("schema", help="print the OpenRPC document")
    exp = sub.add_parser(
        "export", help="draw the graph as DOT, Mermaid or a self-contained HTML page"
    )
    _common(exp)
    exp.add_argument("--format", choices=["dot", "mermaid", "html"], default="html")
    exp.add_argument("--block", help="only the neighbourhood of this block")
    exp.add_argument("--depth", type=int, default=2, help="hops around --block (default 2)")
    exp.add_argument("--act", help="only blocks of this act")
    exp.add_argument("--max-nodes", type=int, default=200)
    exp.add_argument("--out", help="file to write (default: stdout)")
    bak = sub.add_parser(
        "backup", help="copy the database to a new file while servers keep running (online)"
    )
    _common(bak)
    bak.add_argument("target", help="the new file (an existing one is never overwritten)")
    dmp = sub.add_parser(
        "dump", help="write the data as JSON Lines (one snapshot; no vectors, no secrets added)"
    )
    _common(dmp)
    dmp.add_argument(
        "target", nargs="?", default="-", help="the new file (never overwritten), - for stdout"
    )
    lod = sub.add_parser(
        "load", help="read a dump into an empty or new database, then compute its vectors"
    )
    _common(lod)
    lod.add_argument("source", help="the dump file, - for stdin")
    lod.add_argument("--embedder", choices=["onnx", "sentence-transformers", "hash", "none"])
    where = sub.add_parser("where", help="print the database path that serve would open")
    _common(where)
    hook = sub.add_parser("hook", help="run as an agent's hook (reads the hook JSON on stdin)")
    hook.add_argument("agent", choices=["claude-code"])
    _common(hook)
    hook.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    hook.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    hook.add_argument("--lock-fd", type=int, help=argparse.SUPPRESS)
    return parser


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--db", help="database file (default: $REOS_MEMORY_HOME/memory.db or the user data dir)"
    )
    p.add_argument("--config", help="TOML config file")


def main(argv: list[str] | None = None) -> int:
    # Before numpy loads: a vector scan is memory-bound, and a second BLAS thread only competes
    # with the embedder and SQLite for the cores (measured: search p50 28.6 -> 23.9 ms at 100K).
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    if "MALLOC_ARENA_MAX" not in os.environ:
        from reos_memory import heap

        heap.limit_arenas()
    args = build_parser().parse_args(argv)
    command = args.command or "serve"
    if command == "schema":
        from reos_memory.interfaces.jsonrpc.methods import load_all
        from reos_memory.interfaces.jsonrpc.openrpc import render

        sys.stdout.write(render(load_all()))
        return 0

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
    if command == "where":
        sys.stdout.write(config.db + "\n")
        return 0
    if command == "backup":
        from reos_memory.app import backup_database

        return backup_database(config, args.target)
    if command == "dump":
        from reos_memory.app import dump_database

        return dump_database(config, args.target)
    if command == "load":
        from reos_memory.app import load_dump

        return load_dump(config, args.source)
    if command == "export":
        from reos_memory.app import export_graph

        return export_graph(
            config, args.format, args.block, args.depth, args.act, args.max_nodes, args.out
        )
    if command == "model":
        return _model(args.model_command, config, args)
    if command == "migrate":
        from reos_memory.app import migrate_database

        applied = migrate_database(config)
        sys.stdout.write(f"{config.db}: applied {applied or 'nothing (up to date)'}\n")
        return 0
    if command == "mcp":
        from reos_memory.interfaces.mcp import run_mcp

        return run_mcp(config)
    from reos_memory.app import serve

    return serve(config)


def _hook(args: argparse.Namespace, config: Config) -> int:
    """`reos-memory hook claude-code`: a hook call, or (hidden) the queue worker or the warm
    service it starts. Only the hook's own modules load before it has its answer."""
    from reos_memory.interfaces import claude_hook as hook

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
    return hook.run(config, sys.stdin.buffer.read(hook.MAX_INPUT + 1), _open_app)


def _open_app(config: Config, **how: Any) -> Any:
    from reos_memory.app import open_app

    return open_app(config, **how)


def _model(sub: str, config: object, args: argparse.Namespace) -> int:
    from reos_memory.app import model_prepare, model_status

    if sub == "status":
        return model_status(config)  # type: ignore[arg-type]
    return model_prepare(config, sts=args.sts, force=args.force)  # type: ignore[arg-type]


def build_sqrl_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sqrl",
        description="Squirrel, the memory of your coding assistant: works on the reos-memory"
        " database directly (no server needed).",
    )
    parser.add_argument("--version", action="version", version=f"sqrl {__version__}")
    _sqrl_global(parser, before=True)
    common = argparse.ArgumentParser(add_help=False)
    _sqrl_global(common, before=False)
    common.add_argument(
        "--embedder",
        choices=["onnx", "sentence-transformers", "hash", "none"],
        help="embedder (default: the one the database's vectors come from)",
    )
    where = common.add_mutually_exclusive_group()
    where.add_argument("--project-root", help="project directory (default: the current one)")
    where.add_argument("--project-id", help="project id instead of a directory")
    sub = parser.add_subparsers(dest="command", required=True)
    fl = sub.add_parser("flush", parents=[common], help="cut the open episodes and learn now")
    fl.add_argument("--session", help="only this session (default: every open session)")
    cx = sub.add_parser("context", parents=[common], help="the memories for a task")
    cx.add_argument("task")
    cx.add_argument("--budget", type=int, default=400, help="token budget (default 400)")
    cx.add_argument("--path", help="file or directory the task is about")
    cx.add_argument("--session", help="the session the context is for")
    add = sub.add_parser("add", parents=[common], help="remember something explicitly")
    add.add_argument("text", nargs="+")
    add.add_argument(
        "--kind", default="note", choices=["preference", "invariant", "pattern", "guard", "note"]
    )
    add.add_argument("--scope", default="project", choices=["project", "global", "repo_path"])
    add.add_argument(
        "--tier", default="short_term", choices=["short_term", "long_term", "emergency"]
    )
    add.add_argument("--key", help="slot name such as project.package_manager")
    add.add_argument("--ttl-days", type=int)
    add.add_argument("--path-prefix", help="sub-tree, for --scope repo_path")
    add.add_argument("--avoid", action="store_true", help="an anti-pattern (polarity -1)")
    mem = sub.add_parser(
        "memories", parents=[common], help="list memories, or show one with its evidence"
    )
    mem.add_argument("memory_id", nargs="?", help="show this memory in full")
    mem.add_argument("--status", action="append", choices=["provisional", "active", "deprecated"])
    mem.add_argument(
        "--kind", action="append", choices=["preference", "invariant", "pattern", "guard", "note"]
    )
    mem.add_argument("--all-projects", action="store_true")
    mem.add_argument("--limit", type=int, default=100)
    se = sub.add_parser("search", parents=[common], help="search memories")
    se.add_argument("query", nargs="+")
    se.add_argument("--limit", type=int, default=20)
    fo = sub.add_parser("forget", parents=[common], help="erase a memory for good")
    fo.add_argument("memory_id")
    cr = sub.add_parser(
        "cr-memory", parents=[common], help="promote useful memories, deprecate useless ones"
    )
    cr.add_argument("--dry-run", action="store_true", help="explain, change nothing")
    cr.add_argument("--all-projects", action="store_true")
    sub.add_parser("status", parents=[common], help="memories, episodes, writer calls, tokens")
    ing = sub.add_parser(
        "ingest", parents=[common], help="learn from Claude Code / Codex session logs"
    )
    ing.add_argument("paths", nargs="+", metavar="FILE|DIR")
    ing.add_argument("--agent", choices=["auto", "claude-code", "codex"], default="auto")
    ing.add_argument("--end", action="store_true", help="end the sessions now (default: when idle)")
    wa = sub.add_parser(
        "watch", parents=[common], help="follow the agents' session logs as they are written"
    )
    wa.add_argument("--once", action="store_true", help="one catch-up pass, then exit")
    wa.add_argument("--interval", type=float, help="seconds between passes (default 2)")
    wa.add_argument(
        "--root",
        action="append",
        help="directory to follow (repeatable; default: the Claude Code and Codex roots)",
    )
    wa.add_argument("--idle-minutes", type=float, help="a session idle this long has ended")
    hk = sub.add_parser("hooks", help="install Squirrel's Claude Code hooks")
    hk_common = argparse.ArgumentParser(add_help=False)
    _sqrl_global(hk_common, before=False)
    target = hk_common.add_mutually_exclusive_group()
    target.add_argument("--user", action="store_true", help="~/.claude/settings.json (default)")
    target.add_argument("--project", metavar="DIR", help="DIR/.claude/settings.json")
    target.add_argument("--local", metavar="DIR", help="DIR/.claude/settings.local.json")
    hsub = hk.add_subparsers(dest="hooks_command", required=True)
    hin = hsub.add_parser("install", parents=[hk_common], help="add the hooks (keeps yours)")
    hin.add_argument(
        "--writer",
        choices=["claude-code", "codex", "rules", "auto"],
        help="also set the Memory Writer (claude-code / codex: says what it will cost first)",
    )
    hin.add_argument("--yes", action="store_true", help="do not ask before switching it on")
    hsub.add_parser("uninstall", parents=[hk_common], help="remove exactly Squirrel's hooks")
    hsub.add_parser("status", parents=[hk_common], help="show what is installed")
    return parser


def _sqrl_global(p: argparse.ArgumentParser, *, before: bool) -> None:
    """The options every sqrl command takes, before its name (`sqrl --db X ingest`) or after it.

    After the name they default to "not given" (SUPPRESS): argparse copies a subcommand's
    defaults over what was parsed before it, which would drop a `--db` given first."""
    unset: object = None if before else argparse.SUPPRESS
    p.add_argument(
        "--db",
        default=unset,
        help="database file (default: $REOS_MEMORY_HOME/memory.db or the user data dir)",
    )
    p.add_argument("--config", default=unset, help="TOML config file")
    p.add_argument(
        "--json",
        action="store_true",
        default=False if before else argparse.SUPPRESS,
        help="print the result as JSON",
    )


def sqrl_main(argv: list[str] | None = None) -> int:
    """The `sqrl` command."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    args = build_sqrl_parser().parse_args(argv)
    from reos_memory.config import ConfigError, load_config

    try:
        config = load_config(args.config, {"db": args.db})
    except ConfigError as exc:
        sys.stderr.write(f"sqrl: {exc}\n")
        return 2
    if args.command in ("ingest", "watch", "hooks"):
        from reos_memory.cli.sqrl import run

        return run(config, args)
    from reos_memory.app import run_sqrl

    return run_sqrl(config, args)


if __name__ == "__main__":
    raise SystemExit(main())
