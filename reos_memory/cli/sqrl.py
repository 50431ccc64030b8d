"""The `sqrl` commands: each one's arguments beside the function that runs it. The memory
commands work on the database directly (no server needed); `ingest`, `watch` and `hooks`
connect the real agents."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, TypedDict

from reos_memory import __version__
from reos_memory.config import Config, ConfigError
from reos_memory.errors import ReosError
from reos_memory.squirrel.ingest import AGENT_NAMES

if TYPE_CHECKING:
    from types import FrameType

    import msgspec

    from reos_memory.cli.connect import FileState, Kind
    from reos_memory.cli.connect import Scope as ConnectScope
    from reos_memory.cli.hooks_settings import Result, Status
    from reos_memory.cli.hooks_settings import Scope as HooksScope
    from reos_memory.interfaces.services import Services
    from reos_memory.squirrel.facade import Squirrel
    from reos_memory.squirrel.writer.helper_process import Helper

KINDS = ["preference", "invariant", "pattern", "guard", "note"]


Run = Callable[[Config, argparse.Namespace], int]


class Command(NamedTuple):
    help: str
    arguments: Callable[[argparse.ArgumentParser], None]
    run: Run
    common: bool  # takes the options every command on a project takes


COMMANDS: dict[str, Command] = {}


def build_parser() -> argparse.ArgumentParser:
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
    for name, cmd in COMMANDS.items():
        cmd.arguments(sub.add_parser(name, parents=[common] if cmd.common else [], help=cmd.help))
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


def command(
    name: str,
    help: str,
    arguments: Callable[[argparse.ArgumentParser], None] = lambda p: None,
    *,
    common: bool = True,
) -> Callable[[Run], Run]:
    """Register the decorated function as `sqrl NAME`, its arguments added by `arguments`."""

    def register(run: Run) -> Run:
        COMMANDS[name] = Command(help, arguments, run, common)
        return run

    return register


# -- the memories: one call of Squirrel, its result as text or JSON --------------------------------


class Where(TypedDict):
    """The project a command is about, as Squirrel's params take it: by id or by its root
    directory (both None: no project, for global memories and every project's)."""

    project_id: str | None
    project_root: str | None


Shown = tuple["msgspec.Struct", str]  # a command's result (its --json) and its text
OnMemories = Callable[["Squirrel", argparse.Namespace, Where], Shown]


def on_memories(
    name: str,
    help: str,
    arguments: Callable[[argparse.ArgumentParser], None] = lambda p: None,
    *,
    needs_model: bool = False,
) -> Callable[[OnMemories], OnMemories]:
    """Register the decorated `fn(squirrel, args, where) -> (result, text)` as `sqrl NAME`."""

    def register(fn: OnMemories) -> OnMemories:
        def run(config: Config, args: argparse.Namespace) -> int:
            return _run_on_memories(config, args, fn, needs_model)

        COMMANDS[name] = Command(help, arguments, run, True)
        return fn

    return register


def _run_on_memories(
    config: Config, args: argparse.Namespace, fn: OnMemories, needs_model: bool
) -> int:
    """Open the database (and the model when the command embeds), run `fn`, print its result."""
    import msgspec

    from reos_memory.app import open_app

    try:
        app = open_app(config, needs_model=needs_model, embedder=getattr(args, "embedder", None))
    except ReosError as exc:
        sys.stderr.write(f"sqrl: {exc.message}\n")
        return 1
    try:
        root = None if args.project_id else (args.project_root or os.getcwd())
        out, text = fn(app.squirrel, args, {"project_id": args.project_id, "project_root": root})
    except ReosError as exc:
        sys.stderr.write(f"sqrl: {exc.message}\n")
        return 1
    finally:
        app.close()
    if args.json:
        sys.stdout.write(msgspec.json.encode(out).decode() + "\n")
    else:
        sys.stdout.write(text)
    return 0


_NO_PROJECT: Where = {"project_id": None, "project_root": None}


def _flush_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--session", help="only this session (default: every open session)")


@on_memories("flush", "cut the open episodes and learn now", _flush_args, needs_model=True)
def flush(sq: Squirrel, args: argparse.Namespace, where: Where) -> Shown:
    from reos_memory.cli import report
    from reos_memory.squirrel import api

    out = sq.flush(api.FlushParams(**where, session_id=args.session, wait=True))
    return out, report.episodes(out)


def _context_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("task")
    p.add_argument("--budget", type=int, default=400, help="token budget (default 400)")
    p.add_argument("--path", help="file or directory the task is about")
    p.add_argument("--session", help="the session the context is for")


@on_memories("context", "the memories for a task", _context_args, needs_model=True)
def context(sq: Squirrel, args: argparse.Namespace, where: Where) -> Shown:
    from reos_memory.cli import report
    from reos_memory.squirrel import api

    out = sq.get_task_context(
        api.ContextParams(
            **where,
            task=args.task,
            path=args.path,
            session_id=args.session,
            context_budget_tokens=args.budget,
        )
    )
    return out, report.context(out)


def _add_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("text", nargs="+")
    p.add_argument("--kind", default="note", choices=KINDS)
    p.add_argument("--scope", default="project", choices=["project", "global", "repo_path"])
    p.add_argument("--tier", default="short_term", choices=["short_term", "long_term", "emergency"])
    p.add_argument("--key", help="slot name such as project.package_manager")
    p.add_argument("--ttl-days", type=int)
    p.add_argument("--path-prefix", help="sub-tree, for --scope repo_path")
    p.add_argument("--avoid", action="store_true", help="an anti-pattern (polarity -1)")


@on_memories("add", "remember something explicitly", _add_args, needs_model=True)
def add(sq: Squirrel, args: argparse.Namespace, where: Where) -> Shown:
    import msgspec

    from reos_memory.squirrel import api
    from reos_memory.squirrel.writer.schema import WriterOp

    try:
        op = msgspec.convert(
            {
                "op": "ADD",
                "scope": args.scope,
                "kind": args.kind,
                "tier": args.tier,
                "polarity": -1 if args.avoid else 1,
                "key": args.key,
                "text": " ".join(args.text),
                "ttl_days": args.ttl_days,
                "path_prefix": args.path_prefix,
            },
            WriterOp,
        )
    except msgspec.ValidationError as exc:
        msg, _, at = str(exc).rpartition(" - at `$.")
        option = "--" + at.rstrip("`").replace("_", "-")
        raise ReosError(f"{option}: {msg or exc}") from None
    if args.scope == "global":
        where = _NO_PROJECT
    out = sq.add_memory(
        api.MemoryAddParams(
            **where,
            scope=op.scope,
            kind=args.kind,
            tier=op.tier,
            polarity=op.polarity,
            key=op.key,
            text=op.text or "",
            ttl_days=op.ttl_days,
            path_prefix=op.path_prefix,
        )
    )
    m = out.memory
    assert m is not None  # a memory of one's own is always stored here
    text = (
        f"deduplicated into {out.deduplicated_into}: {m.text}\n"
        if out.deduplicated_into
        else f"added {m.id} ({m.kind}, {m.status}): {m.text}\n"
    )
    return out, text


def _memories_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("memory_id", nargs="?", help="show this memory in full")
    p.add_argument("--status", action="append", choices=["provisional", "active", "deprecated"])
    p.add_argument("--kind", action="append", choices=KINDS)
    p.add_argument("--all-projects", action="store_true")
    p.add_argument("--limit", type=int, default=100)


@on_memories("memories", "list memories, or show one with its evidence", _memories_args)
def memories(sq: Squirrel, args: argparse.Namespace, where: Where) -> Shown:
    from reos_memory.cli import report

    if args.memory_id:
        out = sq.get_memory(args.memory_id)
        return out, report.memory(out)
    from reos_memory.squirrel import api

    listed = sq.list_memories(
        api.MemoryListParams(
            **(_NO_PROJECT if args.all_projects else where),
            statuses=args.status or ["provisional", "active"],
            kinds=args.kind,
            limit=args.limit,
        )
    )
    return listed, report.memories(listed.memories, listed.metrics)


def _search_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("query", nargs="+")
    p.add_argument("--limit", type=int, default=20)


@on_memories("search", "search memories", _search_args, needs_model=True)
def search(sq: Squirrel, args: argparse.Namespace, where: Where) -> Shown:
    from reos_memory.cli import report
    from reos_memory.squirrel import api

    out = sq.search(api.SquirrelSearchParams(query=" ".join(args.query), **where, limit=args.limit))
    return out, report.search(out)


def _forget_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("memory_id")


@on_memories("forget", "erase a memory for good", _forget_args)
def forget(sq: Squirrel, args: argparse.Namespace, where: Where) -> Shown:
    return sq.forget(args.memory_id), f"forgot {args.memory_id}\n"


def _cr_memory_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dry-run", action="store_true", help="explain, change nothing")
    p.add_argument("--all-projects", action="store_true")


@on_memories("cr-memory", "promote useful memories, deprecate useless ones", _cr_memory_args)
def cr_memory(sq: Squirrel, args: argparse.Namespace, where: Where) -> Shown:
    from reos_memory.cli import report
    from reos_memory.squirrel import api

    scope = _NO_PROJECT if args.all_projects else where
    out = sq.cr_memory(api.CrMemoryParams(**scope, dry_run=args.dry_run))
    return out, report.cr_memory(out)


@on_memories("status", "memories, episodes, writer calls, tokens")
def status(sq: Squirrel, args: argparse.Namespace, where: Where) -> Shown:
    from reos_memory.cli import report

    out = sq.status()
    return out, report.status(out)


# -- the team server -----------------------------------------------------------------------------


def _share_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("memory_id")
    p.add_argument("--team", help="the team's id (default: your key's team, else the whole org)")


@on_memories("share", "propose a memory of yours to your team", _share_args, needs_model=True)
def share(sq: Squirrel, args: argparse.Namespace, where: Where) -> Shown:
    from reos_memory.cli import report
    from reos_memory.squirrel import api

    out = sq.share(api.ShareParams(memory_id=args.memory_id, team_id=args.team))
    return out, report.share(out)


def _team_args(p: argparse.ArgumentParser) -> None:
    common = argparse.ArgumentParser(add_help=False)
    _sqrl_global(common, before=False)
    sub = p.add_subparsers(dest="team_command", required=True)
    sub.add_parser("status", parents=[common], help="server, key set?, cursor, outbox")
    sync = sub.add_parser("sync", parents=[common], help="send the outbox and pull, now")
    sync.add_argument("--timeout", type=float, default=30.0, help="seconds (default 30)")


@command("team", "the team server: status, or sync now", _team_args, common=False)
def team(config: Config, args: argparse.Namespace) -> int:
    """`sqrl team status` and `sqrl team sync` (a sync embeds what it pulls: the model loads)."""
    from reos_memory.cli import report
    from reos_memory.squirrel import api

    def run(sq: Squirrel, a: argparse.Namespace, where: Where) -> Shown:
        if a.team_command == "status":
            st = sq.team_status()
            return st, report.team_status(st)
        if not 0 < a.timeout <= 600:
            raise ReosError("--timeout: seconds, more than 0 and at most 600")
        done = sq.team_sync(api.TeamSyncParams(timeout_s=a.timeout))
        return done, report.team_sync(done)

    args.project_id = args.project_root = args.embedder = None
    return _run_on_memories(config, args, run, args.team_command == "sync")


# -- the agents' session logs -------------------------------------------------------------------


def _ingest_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "paths",
        nargs="*",
        metavar="FILE|DIR",
        help="logs or directories of logs (default: every agent's own log locations)",
    )
    p.add_argument("--agent", choices=AGENT_NAMES, default="auto")
    p.add_argument("--end", action="store_true", help="end the sessions now (default: when idle)")


@command("ingest", "learn from coding agents' session logs", _ingest_args)
def ingest(config: Config, args: argparse.Namespace) -> int:
    """Read the given logs (or the new part of them) and learn from their ended episodes."""
    if not args.paths:
        args.paths = [p for p in _default_roots(config) if os.path.exists(p)]
        if not args.paths:
            sys.stderr.write("sqrl: no agent's session logs were found in their usual places\n")
            return 1
    helper = None
    from reos_memory.squirrel.writer import helper_process as ingest_helper

    if ingest_helper.wanted(config, args.paths):
        # a large catch-up: the Memory Writer runs in a second process, started first so
        # its start-up overlaps ours; this process then needs the model only if it fails
        helper = ingest_helper.Helper(
            "reos_memory.app:open_helper", config, getattr(args, "embedder", None)
        )
    return _on_logs(config, args, helper, lambda app: _ingest(config, app, args, helper))


def _watch_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--once", action="store_true", help="one catch-up pass, then exit")
    p.add_argument("--interval", type=float, help="seconds between passes (default 2)")
    p.add_argument(
        "--root",
        action="append",
        help="directory to follow (repeatable; default: every agent's own log locations)",
    )
    p.add_argument("--idle-minutes", type=float, help="a session idle this long has ended")


def _ui_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--port", type=int, help="port on 127.0.0.1 (default: a free one)")
    p.add_argument(
        "--no-browser", action="store_true", help="print the address, do not open a browser"
    )


@command("ui", "see and correct the memories in a web page (on 127.0.0.1)", _ui_args)
def ui(config: Config, args: argparse.Namespace) -> int:
    """Serve the web UI for this database until interrupted (Ctrl-C)."""
    from reos_memory.app import open_app
    from reos_memory.interfaces.web.local import serve

    try:
        # the model loads when an edit or a preview first needs it
        app = open_app(
            config, needs_model=True, embedder=getattr(args, "embedder", None), defer_model=True
        )
    except ReosError as exc:
        sys.stderr.write(f"sqrl: {exc.message}\n")
        return 1
    try:
        return serve(app, args.port, open_browser=not args.no_browser)
    except KeyboardInterrupt:
        return 0
    finally:
        app.close()


@command("watch", "follow the agents' session logs as they are written", _watch_args)
def watch(config: Config, args: argparse.Namespace) -> int:
    """Follow the agents' log directories, learning as sessions end (or one pass with --once)."""
    return _on_logs(config, args, None, lambda app: _watch(config, app, args))


def _on_logs(
    config: Config,
    args: argparse.Namespace,
    helper: Helper | None,
    work: Callable[[Services], int],
) -> int:
    """Open the App for reading logs, run `work(app)`, and let the Memory Writer finish."""
    from reos_memory.app import open_app

    try:
        # the model loads while the logs are read: the first commit that needs it waits for it
        app = open_app(
            config,
            needs_model=True,
            embedder=getattr(args, "embedder", None),
            wait=False,
            defer_model=bool(helper),
        )
    except ReosError as exc:
        if helper is not None:
            helper.close()
        sys.stderr.write(f"sqrl: {exc.message}\n")
        return 1
    try:
        return work(app)
    except ReosError as exc:
        sys.stderr.write(f"sqrl: {exc.message}\n")
        return 1
    except KeyboardInterrupt:
        # every batch of lines committed with its cursor: nothing half-done, nothing lost
        sys.stderr.write("sqrl: interrupted; run it again to go on from where it stopped\n")
        return 130
    finally:
        if helper is not None:
            helper.close()
        app.close_when_written()


def _default_roots(config: Config) -> list[str]:
    """The configured Claude Code and Codex directories, then every other agent's default log
    locations on this OS that exist, and the logs kept inside the projects this database
    knows (Aider's history in each repository)."""
    from reos_memory.squirrel.ingest import ingest as tin

    configured = [config.claude_projects_dir, config.codex_sessions_dir]
    found = tin.default_roots(projects=_known_project_roots(config))
    return configured + [r for r in found if r not in configured]


def _known_project_roots(config: Config) -> list[str]:
    """The project directories the database knows (read-only; none when there is none yet)."""
    if config.db == ":memory:" or not os.path.exists(config.db):
        return []
    import apsw

    from reos_memory.store import projects as project_sql

    try:
        conn = apsw.Connection(config.db, flags=apsw.SQLITE_OPEN_READONLY)
    except apsw.Error:
        return []
    try:
        conn.set_busy_timeout(5000)
        return project_sql.project_roots(conn)
    except apsw.Error:
        return []
    finally:
        conn.close()


def _ingest(
    config: Config, app: Services, args: argparse.Namespace, helper: Helper | None = None
) -> int:
    import msgspec

    from reos_memory.squirrel.ingest import ingest as tin
    from reos_memory.squirrel.ingest.watch import Progress

    missing = [p for p in args.paths if not os.path.exists(p)]
    if missing:
        sys.stderr.write(f"sqrl: no such file or directory: {missing[0]}\n")
        return 1
    end = True if args.end else None
    # a project named on the command line takes the sessions whose log names no directory
    fallback = app.squirrel.named_project(args.project_id, args.project_root)
    opts = tin.Options(args.agent, end, config.session_idle_minutes * 60.0, project=fallback)
    progress = None if args.json else Progress()
    reps = app.squirrel.ingest_paths(args.paths, opts, progress, helper)
    # sessions left open (their logs are fresh): their last events wait for the session to end
    pending = app.squirrel.pending_events(
        r.session_id for r in reps if r.session_id and not r.ended
    )
    if args.json:
        out = [
            {
                **msgspec.to_builtins(r.public()),
                "pending_events": pending.get(r.session_id or "", 0),
            }
            for r in reps
        ]
        sys.stdout.write(json.dumps(out, default=str) + "\n")
        return 0
    lines = sum(r.lines for r in reps)
    events = sum(r.events for r in reps)
    episodes = sum(len(r.episodes) for r in reps)
    learned = sum(len(e.ops or []) for r in reps for e in r.learned() if e.outcome == "written")
    skipped = [r for r in reps if r.skipped_reason]
    sys.stdout.write(
        f"{len(reps)} file(s): {lines} new lines, {events} events, {episodes} episode(s),"
        f" {learned} memory op(s)\n"
    )
    for r in skipped:
        sys.stdout.write(f"  skipped {r.path}: {r.skipped_reason}\n")
    for r in reps:
        if r.counts.get("no_project") and not r.skipped_reason:
            sys.stdout.write(
                f"  {r.path}: {r.counts['no_project']} events name no project directory, not"
                " learned from: give the project with --project-root DIR or --project-id ID\n"
            )
    if pending:
        sys.stdout.write(
            f"  still pending: {sum(pending.values())} event(s) of {len(pending)} open session(s),"
            " not yet cut into episodes nor learned from. They are learned once their logs have"
            f" been idle for {config.session_idle_minutes:g} min (at the next `sqrl ingest` or"
            " `sqrl watch`), or now with `sqrl ingest --end` on the same paths.\n"
        )
    return 0


def _watch(config: Config, app: Services, args: argparse.Namespace) -> int:
    from reos_memory.squirrel.ingest.watch import AlreadyWatching, Progress, WatchLock

    roots = args.root or _default_roots(config)
    interval = args.interval if args.interval is not None else config.watch_interval_s
    idle = (args.idle_minutes or config.session_idle_minutes) * 60.0
    try:
        lock = WatchLock(config.db).__enter__()
    except AlreadyWatching as exc:
        sys.stderr.write(f"sqrl: {exc}\n")
        return 3
    refresh = None if args.root else (lambda: _default_roots(config))
    watcher = app.squirrel.watcher(roots, idle_seconds=idle, progress=Progress(), refresh=refresh)

    def stop(signum: int, frame: FrameType | None) -> None:
        watcher.stop.set()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)

    def say(text: str) -> None:
        sys.stderr.write(text + "\n")
        sys.stderr.flush()

    try:
        if not args.once:
            say(f"sqrl watch: following {', '.join(roots)} every {interval:g}s (Ctrl-C stops)")
        total = watcher.run(interval, args.once, say)
    finally:
        lock.__exit__(None, None, None)
    if args.json:
        sys.stdout.write(json.dumps(vars(total)) + "\n")
    elif args.once:
        sys.stdout.write(
            f"{total.files_read} file(s) read: {total.lines} lines, {total.events} events,"
            f" {total.episodes} episode(s), {total.sessions_ended} session(s) ended\n"
        )
    return 0


def hook_executable() -> str:
    """The command that runs `reos-memory` from this installation, for the agent to call."""
    from reos_memory.cli.connect import reos_memory_argv

    return shlex.join(reos_memory_argv())


def _hooks_args(hk: argparse.ArgumentParser) -> None:
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


@command("hooks", "install Squirrel's Claude Code hooks", _hooks_args, common=False)
def hooks(config: Config, args: argparse.Namespace) -> int:
    """Install, remove or show Squirrel's hooks in a Claude Code settings file."""
    from reos_memory.cli import hooks_settings as hs

    scope: HooksScope = (
        "project" if args.project is not None else ("local" if args.local else "user")
    )
    project = Path(args.project or args.local or ".").resolve() if scope != "user" else None
    path = hs.settings_path(scope, project)
    writer: WriterChoice | None = None
    try:
        if args.hooks_command == "install":
            writer = _writer_choice(config, args)
            if writer is not None and writer.get("refused"):
                sys.stdout.write("nothing changed\n")
                return 1
            res = hs.install(path, _hook_command(config, args, writer))
        elif args.hooks_command == "uninstall":
            res = hs.uninstall(path)
        else:
            _hooks_status(hs.status(path), args.json)
            return 0
    except (hs.SettingsError, ValueError, ConfigError) as exc:
        sys.stderr.write(f"sqrl: {exc}\n")
        return 1
    _hooks_changed(res, writer, args.json)
    return 0


def _hook_command(config: Config, args: argparse.Namespace, writer: WriterChoice | None) -> str:
    """The hook's command line: this installation's `reos-memory`, on the database this command
    opened (Claude Code runs it with its own environment), with the config that names the writer."""
    command = hook_executable()
    config_file = (writer or {}).get("config_file") or args.config
    config_file = config_file or os.environ.get("REOS_MEMORY_CONFIG")
    if config_file:
        command = f"REOS_MEMORY_CONFIG={shlex.quote(os.path.abspath(config_file))} {command}"
    if args.db or os.environ.get("REOS_MEMORY_DB"):
        command = f"REOS_MEMORY_DB={shlex.quote(config.db)} {command}"
    return command


def _hooks_status(st: Status, as_json: bool) -> None:
    if as_json:
        sys.stdout.write(json.dumps(st) + "\n")
        return
    sys.stdout.write(f"{st['path']}: {'installed' if st['installed'] else 'not installed'}\n")
    for ev, s in st["events"].items():
        mark = "yes" if s["installed"] else "no "
        extra = f" (+{s['foreign_hooks']} other hook(s))" if s["foreign_hooks"] else ""
        cmd = f"  {s['commands'][0]}" if s["commands"] else ""
        sys.stdout.write(f"  {mark} {ev}{extra}{cmd}\n")


def _hooks_changed(res: Result, writer: WriterChoice | None, as_json: bool) -> None:
    if as_json:
        sys.stdout.write(
            json.dumps(
                {
                    **({"writer": writer} if writer else {}),
                    "path": str(res.path),
                    "changed": res.changed,
                    "backup": str(res.backup) if res.backup else None,
                    "added": list(res.added),
                    "updated": list(res.updated),
                    "removed": list(res.removed),
                }
            )
            + "\n"
        )
        return
    if not res.changed:
        sys.stdout.write(f"{res.path}: nothing to change\n")
    else:
        done = ", ".join(
            f"{what} {', '.join(evs)}"
            for what, evs in (
                ("added", res.added),
                ("updated", res.updated),
                ("removed", res.removed),
            )
            if evs
        )
        backup = f" (backup: {res.backup})" if res.backup else ""
        sys.stdout.write(f"{res.path}: {done}{backup}\n")
    if writer:
        sys.stdout.write(f'{writer["config_file"]}: writer = "{writer["writer"]}"\n')


class WriterEstimate(TypedDict):
    """What an agent-CLI Memory Writer will cost (`writer_setup.Estimate`), in `--json`."""

    command: str
    executable_found: str | None
    tokens_per_episode: int
    episodes_per_day: float
    from_history: bool
    tokens_per_day: int
    daily_token_budget: int


class WriterChoice(TypedDict, total=False):
    """What `--writer` did: the writer, its cost (an agent's CLI) and the config file it was
    written into; or `refused` alone when the user said no."""

    writer: str
    estimate: WriterEstimate
    config_file: str
    refused: bool


def _writer_choice(config: Config, args: argparse.Namespace) -> WriterChoice | None:
    """With `--writer`: say what an agent-CLI writer will cost, ask when on a terminal (unless
    `--yes`), and write the setting into the user's config file."""
    choice = getattr(args, "writer", None)
    if choice is None:
        return None
    from reos_memory.cli import writer_setup as ws

    out: WriterChoice = {"writer": choice}
    if choice in ("claude-code", "codex"):
        est = ws.estimate(config, choice)
        out["estimate"] = {
            "command": est.command,
            "executable_found": est.executable_found,
            "tokens_per_episode": est.tokens_per_episode,
            "episodes_per_day": round(est.episodes_per_day, 2),
            "from_history": est.from_history,
            "tokens_per_day": est.tokens_per_day,
            "daily_token_budget": est.daily_cap,
        }
        if not args.json:
            sys.stdout.write(ws.describe(est))
        if not args.yes and sys.stdin.isatty():
            sys.stdout.write("Use it? [y/N] ")
            sys.stdout.flush()
            if sys.stdin.readline().strip().lower() not in ("y", "yes"):
                return {"refused": True}
    out["config_file"] = str(ws.switch_on(args.config, choice))
    return out


# -- the other agents: their hook and MCP files ----------------------------------------------------


def _connect_args(p: argparse.ArgumentParser) -> None:
    from reos_memory.cli.connect import TOOLS

    _sqrl_global(p, before=False)
    p.add_argument("tool", choices=TOOLS, metavar="TOOL", help=", ".join(TOOLS))
    where = p.add_mutually_exclusive_group()
    where.add_argument(
        "--project",
        action="store_true",
        help="this checkout's files (default; a tool with user files only gets those)",
    )
    where.add_argument("--user", action="store_true", help="your home directory's files")
    p.add_argument("--remove", action="store_true", help="take out exactly what connect added")


class ConnectedFile(TypedDict):
    """One file `sqrl connect` edited, in `--json`."""

    path: str
    kinds: list[Kind]
    scope: ConnectScope  # the file's own scope
    note: str | None
    changed: bool
    created: bool
    deleted: bool
    backup: str | None
    added: list[str]
    updated: list[str]
    removed: list[str]


@command("connect", "give an agent Squirrel's hooks and MCP server", _connect_args, common=False)
def connect(config: Config, args: argparse.Namespace) -> int:
    """Write (or with --remove take out) `args.tool`'s hook and MCP entries."""
    from reos_memory.cli import connect as cn

    scope: cn.Scope = "project"
    if args.user or (args.tool == "cline" and not args.project):
        scope = "user"
    argv = [*cn.reos_memory_argv(), "mcp"]
    if args.db or os.environ.get("REOS_MEMORY_DB"):
        argv += ["--db", config.db]
    config_file = args.config or os.environ.get("REOS_MEMORY_CONFIG")
    if config_file:
        argv += ["--config", os.path.abspath(config_file)]
    project = cn.project_root()
    try:
        planned = cn.plan(
            args.tool,
            scope,
            project,
            os.environ,
            mcp_argv=argv,
            hook_base=_hook_command(config, args, None),
        )
        results = cn.connect(planned, remove=args.remove)
    except cn.ConfigError as exc:
        sys.stderr.write(f"sqrl: {exc}\n")
        return 1
    files: list[ConnectedFile] = [
        {
            "path": str(r.path),
            "kinds": list(p.kinds),
            "scope": p.scope,
            "note": p.note,
            "changed": r.changed,
            "created": r.created,
            "deleted": r.deleted,
            "backup": str(r.backup) if r.backup else None,
            "added": list(r.added),
            "updated": list(r.updated),
            "removed": list(r.removed),
        }
        for p, r in zip(planned, results, strict=True)
    ]
    if args.json:
        out = {"tool": args.tool, "scope": scope, "project_root": str(project), "files": files}
        sys.stdout.write(json.dumps(out) + "\n")
        return 0
    where = f"project {project}" if scope == "project" else "user"
    sys.stdout.write(f"{args.tool} ({where}):\n")
    for f in files:
        changes = (("added", f["added"]), ("updated", f["updated"]), ("removed", f["removed"]))
        done = "; ".join(f"{what} {', '.join(names)}" for what, names in changes if names)
        extra = [w for w, did in (("created", f["created"]), ("deleted", f["deleted"])) if did]
        extra += [f"backup: {f['backup']}"] if f["backup"] else []
        tail = f" ({', '.join(extra)})" if extra else ""
        sys.stdout.write(f"  {f['path']} [{'+'.join(f['kinds'])}]: {done or 'unchanged'}{tail}\n")
        if f["note"]:
            sys.stdout.write(f"    {f['note']}\n")
    return 0


def _doctor_args(p: argparse.ArgumentParser) -> None:
    _sqrl_global(p, before=False)


@command(
    "doctor",
    "which agents are installed, connected, and last learned from",
    _doctor_args,
    common=False,
)
def doctor(config: Config, args: argparse.Namespace) -> int:
    """Show, per agent: installed?, connected (user / project files)?, its last session read."""
    from reos_memory.cli import connect as cn

    report = cn.doctor(config.db, cn.project_root(), os.environ)
    if args.json:
        sys.stdout.write(json.dumps(report) + "\n")
        return 0
    state = report["database_state"]
    log = report["hook_log"]
    sys.stdout.write(f"database: {report['database']}{'' if state == 'ok' else f' ({state})'}\n")
    errors = log["recent_errors"]
    sys.stdout.write(
        f"hook log: {log['path']}: "
        + (
            f"{errors} problem(s) in the last 24 h; last: {log.get('last_error')}"
            if errors
            else ("no problems in the last 24 h" if log["exists"] else "none yet")
        )
        + "\n"
    )

    def shown(conn: dict[Kind, FileState] | None) -> str:
        if conn is None:
            return "n/a"
        parts = []
        for kind, c in conn.items():
            if "error" in c:
                parts.append(f"{kind}: unreadable")
            elif c["connected"] != "no":
                parts.append(kind if c["connected"] == "yes" else f"{kind} (partly)")
        return "+".join(parts) or "-"

    sys.stdout.write(f"{'tool':<12} {'installed':<9} {'user':<12} {'project':<12} last session\n")
    for t in report["tools"]:
        last = f"{t['last_session_at']} ({t['logs']} log(s))" if t["logs"] else "never"
        sys.stdout.write(
            f"{t['tool']:<12} {'yes' if t['installed'] else 'no':<9} {shown(t['user']):<12}"
            f" {shown(t['project']):<12} {last}\n"
        )
    return 0
