"""The `reos-memory` commands: each one's arguments beside the function that runs it.

Only the standard library is imported here: `reos-memory hook` parses its arguments with this
module on every prompt of the agent. Each command imports what it works with.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, BinaryIO, NamedTuple, TypeVar

from reos_memory import __version__

if TYPE_CHECKING:
    import psycopg

    from reos_memory.app import App
    from reos_memory.config import Config
    from reos_memory.store import Database
    from reos_memory.team.admin import Actor

EMBEDDERS = ["onnx", "sentence-transformers", "hash", "none"]
Run = Callable[["Config", argparse.Namespace], int]


class Command(NamedTuple):
    help: str
    arguments: Callable[[argparse.ArgumentParser], None]
    # None: run by `main` itself (`schema` needs no configuration; `hook` keeps its own branch)
    run: Run | None


COMMANDS: dict[str, Command] = {}


def command(
    name: str, help: str, arguments: Callable[[argparse.ArgumentParser], None]
) -> Callable[[Run], Run]:
    """Register the decorated function as `reos-memory NAME`, its arguments added by `arguments`."""

    def register(run: Run) -> Run:
        COMMANDS[name] = Command(help, arguments, run)
        return run

    return register


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="reos-memory",
        description="Local-first memory service for AI agents (JSON-RPC 2.0 over stdio).",
    )
    parser.add_argument("--version", action="version", version=f"reos-memory {__version__}")
    sub = parser.add_subparsers(dest="command")
    for name, cmd in COMMANDS.items():
        cmd.arguments(sub.add_parser(name, help=cmd.help))
    return parser


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--db", help="database file (default: $REOS_MEMORY_HOME/memory.db or the user data dir)"
    )
    p.add_argument("--config", help="TOML config file")


def _served(p: argparse.ArgumentParser) -> None:
    _common(p)
    p.add_argument("--log-level", choices=["debug", "info", "warning", "error"])
    p.add_argument("--embedder", choices=EMBEDDERS)


def _open_app(config: Config) -> Callable[[object], App]:
    """The opener a stdio interface calls: the App of a server (catch-up indexing, the model).
    `log` is the interface's logger, handed on to the App as it is."""

    def open_app(log: object) -> App:
        from reos_memory.app import App

        return App(config, log)

    return open_app


# -- servers ------------------------------------------------------------------------------------


@command("serve", "serve JSON-RPC on stdin/stdout (the default command)", _served)
def serve(config: Config, args: argparse.Namespace) -> int:
    """Serve JSON-RPC on stdin/stdout until end of input, SIGTERM or the parent's death."""
    from reos_memory.interfaces.jsonrpc.stdio import run_jsonrpc

    return run_jsonrpc(config, _open_app(config))


@command("mcp", "serve the Model Context Protocol on stdin/stdout (MCP tools)", _served)
def mcp(config: Config, args: argparse.Namespace) -> int:
    """Serve MCP on stdin/stdout until end of input, a signal or the parent's death."""
    from reos_memory.interfaces.mcp import run_mcp

    return run_mcp(config, _open_app(config))


# -- the model ----------------------------------------------------------------------------------


def _model_args(model: argparse.ArgumentParser) -> None:
    msub = model.add_subparsers(dest="model_command", required=True)
    prep = msub.add_parser("prepare", help="export all-MiniLM-L6-v2 to ONNX once and verify it")
    _common(prep)
    prep.add_argument("--force", action="store_true", help="export again even if prepared")
    prep.add_argument("--sts", help="STS-B test file to verify against (Spearman >= 0.82)")
    status = msub.add_parser("status", help="print where the model is and whether it is prepared")
    _common(status)


@command("model", "prepare or inspect the embedding model", _model_args)
def model(config: Config, args: argparse.Namespace) -> int:
    return MODEL_COMMANDS[args.model_command](config, args)


def model_prepare(config: Config, args: argparse.Namespace) -> int:
    """Export the model to ONNX in config.model_dir and verify it (no-op when already done)."""
    from pathlib import Path

    from reos_memory.embeddings.base import EmbedderUnavailableError
    from reos_memory.embeddings.locate import locate_model
    from reos_memory.embeddings.prepare import prepare

    try:
        src = locate_model()
        prepare(
            src,
            Path(config.model_dir),
            sts_path=Path(args.sts) if args.sts else None,
            force=args.force,
            log=lambda m: print(m, file=sys.stderr),
        )
    except (EmbedderUnavailableError, RuntimeError, ImportError) as exc:
        sys.stderr.write(f"reos-memory: {exc}\n")
        return 1
    return 0


def model_status(config: Config, args: argparse.Namespace) -> int:
    """Print where the model weights and the ONNX export are and whether the export is verified."""
    import json
    from pathlib import Path

    from reos_memory.embeddings.base import EmbedderUnavailableError
    from reos_memory.embeddings.locate import locate_model
    from reos_memory.embeddings.prepare import prepared_ok

    target = Path(config.model_dir)
    try:
        src: Path | None = locate_model()
        detail = None
    except EmbedderUnavailableError as exc:
        src, detail = None, str(exc)
    manifest = target / "manifest.json"
    info = {
        "source": str(src) if src else None,
        "source_problem": detail,
        "onnx_dir": str(target),
        "prepared": bool(src) and prepared_ok(target, src),  # type: ignore[arg-type]
        "manifest": json.loads(manifest.read_text()) if manifest.is_file() else None,
    }
    sys.stdout.write(json.dumps(info, indent=2) + "\n")
    return 0 if info["prepared"] else 1


MODEL_COMMANDS: dict[str, Run] = {
    "prepare": model_prepare,
    "status": model_status,
}


# -- the database -------------------------------------------------------------------------------


@command("migrate", "apply pending database migrations and exit", _common)
def migrate(config: Config, args: argparse.Namespace) -> int:
    """Apply the pending migrations and close, saying what was applied."""
    from reos_memory.logs import setup_logging
    from reos_memory.store import Database
    from reos_memory.store.migrations import migrate as apply

    setup_logging(config.log_level)
    db = Database(config.db)
    try:
        applied = list(apply(db) or [])
    finally:
        db.close()
    sys.stdout.write(f"{config.db}: applied {applied or 'nothing (up to date)'}\n")
    return 0


def schema() -> int:
    """Print the OpenRPC document (needs no configuration)."""
    from reos_memory.interfaces.jsonrpc.methods import load_all
    from reos_memory.interfaces.jsonrpc.openrpc import render

    sys.stdout.write(render(load_all()))
    return 0


# run by `main` before any configuration is read: the document depends on none
COMMANDS["schema"] = Command("print the OpenRPC document", lambda p: None, None)


def _export_args(exp: argparse.ArgumentParser) -> None:
    _common(exp)
    exp.add_argument("--format", choices=["dot", "mermaid", "html"], default="html")
    exp.add_argument("--block", help="only the neighbourhood of this block")
    exp.add_argument("--depth", type=int, default=2, help="hops around --block (default 2)")
    exp.add_argument("--act", help="only blocks of this act")
    exp.add_argument("--max-nodes", type=int, default=200)
    exp.add_argument("--out", help="file to write (default: stdout)")


@command("export", "draw the graph as DOT, Mermaid or a self-contained HTML page", _export_args)
def export(config: Config, args: argparse.Namespace) -> int:
    """Write a picture of the graph (or of a block's neighbourhood) to a file or stdout."""
    from reos_memory.errors import ReosError
    from reos_memory.graph import export
    from reos_memory.store import Database

    if _missing(config):
        return 1
    db = Database(config.db)
    try:  # a reader never migrates (nor backs up) the database it reads
        _refuse_older(db, "export")
        pic = export.collect(
            db, block_id=args.block, depth=args.depth, act_id=args.act, max_nodes=args.max_nodes
        )
    except ReosError as exc:
        sys.stderr.write(f"reos-memory: {exc.message}\n")
        return 1
    finally:
        db.close()
    render = {"dot": export.to_dot, "mermaid": export.to_mermaid, "html": export.to_html}
    text = render[args.format](pic)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text)
        sys.stderr.write(
            f"wrote {args.out}: {len(pic.nodes)} blocks, {len(pic.edges)} relationships\n"
        )
    else:
        sys.stdout.write(text)
    return 0


def _backup_args(bak: argparse.ArgumentParser) -> None:
    _common(bak)
    bak.add_argument("target", help="the new file (an existing one is never overwritten)")


@command(
    "backup", "copy the database to a new file while servers keep running (online)", _backup_args
)
def backup(config: Config, args: argparse.Namespace) -> int:
    """A consistent online copy of the database (servers may keep running), written to a new
    file readable by its owner only."""
    target = args.target
    if _missing(config):
        return 1
    if os.path.exists(target):
        sys.stderr.write(f"reos-memory: {target} exists; a backup never overwrites a file\n")
        return 1
    from reos_memory.errors import ReosError
    from reos_memory.store import Database, backup_to

    db = Database(config.db, busy_timeout_ms=config.busy_timeout_ms, lock_wait_s=config.lock_wait_s)
    try:
        t0 = time.monotonic()
        pages = backup_to(db, target)
    except (OSError, ReosError) as exc:
        sys.stderr.write(f"reos-memory: backup failed: {exc}\n")
        return 1
    finally:
        db.close()
    size = os.path.getsize(target)
    sys.stderr.write(
        f"backed up {config.db} to {target}: {pages} pages, {size} bytes"
        f" in {time.monotonic() - t0:.1f} s\n"
    )
    return 0


def _dump_args(dmp: argparse.ArgumentParser) -> None:
    _common(dmp)
    dmp.add_argument(
        "target", nargs="?", default="-", help="the new file (never overwritten), - for stdout"
    )


@command(
    "dump", "write the data as JSON Lines (one snapshot; no vectors, no secrets added)", _dump_args
)
def dump(config: Config, args: argparse.Namespace) -> int:
    """The user's data as JSON Lines, read from one snapshot (servers may keep running), to a new
    file readable by its owner only, or to stdout. Vectors are left out: `load` recomputes them."""
    import apsw

    from reos_memory.errors import ReosError
    from reos_memory.store import Database
    from reos_memory.store import dump as dump_sql
    from reos_memory.store.connection import create_private

    target = args.target
    if _missing(config):
        return 1
    to_file = target != "-"
    if to_file and os.path.lexists(target):
        sys.stderr.write(f"reos-memory: {target} exists; a dump never overwrites a file\n")
        return 1
    db = Database(config.db, busy_timeout_ms=config.busy_timeout_ms, lock_wait_s=config.lock_wait_s)
    out: BinaryIO | None = None
    created = False
    try:
        _refuse_older(db, "dump")
        if to_file:
            created = create_private(target)
            if not created:
                raise FileExistsError(f"{target} exists; a dump never overwrites a file")
            out = open(target, "wb")  # noqa: SIM115 - closed below, removed on failure
        stream = out if out is not None else sys.stdout.buffer
        counts = dump_sql.dump(db, stream.write, __version__)
        stream.flush()
        if out is not None:
            os.fsync(out.fileno())
            out.close()
    except (OSError, ReosError, apsw.Error) as exc:
        if out is not None:
            out.close()
        if created:
            os.unlink(target)  # never leave half a dump that looks like one
        sys.stderr.write(f"reos-memory: dump failed: {getattr(exc, 'message', exc)}\n")
        return 1
    finally:
        db.close()
    summary = ", ".join(f"{n} {k}" for k, n in counts.items() if n) or "nothing"
    sys.stderr.write(f"dumped {config.db} to {target if to_file else 'stdout'}: {summary}\n")
    return 0


def _load_args(lod: argparse.ArgumentParser) -> None:
    _common(lod)
    lod.add_argument("source", help="the dump file, - for stdin")
    lod.add_argument("--embedder", choices=EMBEDDERS)


@command("load", "read a dump into an empty or new database, then compute its vectors", _load_args)
def load(config: Config, args: argparse.Namespace) -> int:
    """A dump into an empty or new database, in one transaction (all of it or nothing), ids,
    timestamps and versions as they were; then the vectors of blocks and memories are computed
    with the configured embedder."""
    import contextlib

    import apsw

    from reos_memory.errors import ReosError
    from reos_memory.store import Database
    from reos_memory.store import dump as dump_sql
    from reos_memory.store.migrations import load_migrations
    from reos_memory.store.migrations import migrate as apply

    source = args.source
    if source != "-" and not os.path.isfile(source):
        sys.stderr.write(f"reos-memory: no dump at {source}\n")
        return 1
    existed = os.path.exists(config.db)
    db = Database(config.db, busy_timeout_ms=config.busy_timeout_ms, lock_wait_s=config.lock_wait_s)
    loaded = None
    try:
        full = db.read(dump_sql.tables_with_rows) if existed else {}
        if full:  # refused before anything (a migration included) is written
            held = ", ".join(f"{n}: {c}" for n, c in full.items())
            raise dump_sql.DumpError(
                f"{config.db} holds data ({held}); load only into an empty or new database"
            )
        apply(db)
        latest = max(m.version for m in load_migrations())
        with contextlib.ExitStack() as stack:
            f = sys.stdin.buffer if source == "-" else stack.enter_context(open(source, "rb"))
            loaded = dump_sql.load(db, f, latest)
    except (OSError, ReosError, apsw.Error) as exc:
        sys.stderr.write(
            f"reos-memory: load failed, nothing was stored: {getattr(exc, 'message', exc)}\n"
        )
        return 1
    finally:
        db.close()
        if loaded is None and not existed:  # leave no database behind that we made
            for suffix in ("", "-wal", "-shm"):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(config.db + suffix)
    assert loaded is not None
    summary = ", ".join(f"{n} {k}" for k, n in loaded.counts.items()) or "nothing"
    sys.stderr.write(f"loaded {source} into {config.db}: {summary}\n")
    return _index_loaded(config, loaded.header.get("embedding_model"))


def _index_loaded(config: Config, dumped_model: str | None) -> int:
    """Compute the vectors of a freshly loaded database with the configured embedder, through
    the catch-up indexing every server runs at start."""
    from reos_memory.app import open_app
    from reos_memory.errors import ReosError

    try:
        app = open_app(config, needs_model=True)
    except ReosError as exc:
        sys.stderr.write(f"reos-memory: indexing failed: {exc.message}\n")
        return 1
    try:
        emb = app.embeddings.wait_ready(0)
        if emb is None:
            sys.stderr.write(
                f"reos-memory: no vectors computed ({app.embeddings.detail or app.config.embedder});"
                " a server started with an embedder computes them\n"
            )
            return 0
        if dumped_model and dumped_model != emb.model_id:
            sys.stderr.write(
                f"the dump's vectors came from {dumped_model}; computing them with the configured"
                f" {emb.model_id}\n"
            )
        done = app.indexer.catch_up(app.log, lambda: False)
        left = app.indexer.pending_count()
    finally:
        app.close()
    sys.stderr.write(
        f"indexed {done} blocks and memories with {emb.model_id}"
        + (f"; {left} left for a server to index\n" if left else "\n")
    )
    return 0


@command("where", "print the database path that serve would open", _common)
def where(config: Config, args: argparse.Namespace) -> int:
    sys.stdout.write(config.db + "\n")
    return 0


# the agents `reos-memory hook` speaks to (`interfaces.agent_hooks.dialects.TOOLS`; spelled
# out here so that parsing the hook's arguments imports nothing more)
HOOK_TOOLS = ("claude-code", "cursor", "gemini", "windsurf", "copilot")


def _hook_args(hook: argparse.ArgumentParser) -> None:
    hook.add_argument("agent", choices=HOOK_TOOLS)
    _common(hook)
    hook.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    hook.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    hook.add_argument("--lock-fd", type=int, help=argparse.SUPPRESS)


# run by `main` itself, which keeps the hook's start-up cheap
COMMANDS["hook"] = Command(
    "run as an agent's hook (reads the hook JSON on stdin)", _hook_args, None
)


def _missing(config: Config) -> bool:
    """True (and said on stderr) when the database a command would read does not exist."""
    if os.path.exists(config.db):
        return False
    sys.stderr.write(f"reos-memory: no database at {config.db}\n")
    return True


def _refuse_older(db: Database, verb: str) -> None:
    """A command that only reads never migrates (nor backs up) the database it reads."""
    from reos_memory.errors import SchemaError
    from reos_memory.store.migrations import pending

    if pending(db):
        raise SchemaError(
            f"{db.path} is an older version of the database; start the service once"
            f" to upgrade it ({verb} only reads)"
        )


# -- the team server's database -----------------------------------------------------------------


def _app_url_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--app-database-url",
        help="with --database-url: the URL the server's requests use, as the login role"
        " reos_team_app the migrations create (default: --database-url, its role stepping"
        " down to reos_team_server in every transaction)",
    )


def _team_db_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--database-url",
        help="PostgreSQL >= 16 with pgvector >= 0.8.4 (default: an embedded one under --data-dir)",
    )
    p.add_argument(
        "--data-dir",
        help="where the embedded PostgreSQL keeps its data (default: team-db in the user data dir)",
    )


AdminRun = Callable[["psycopg.Connection", "Actor", argparse.Namespace], int]


class AdminCommand(NamedTuple):
    help: str
    arguments: Callable[[argparse.ArgumentParser], None]
    run: AdminRun


ADMIN_COMMANDS: dict[str, AdminCommand] = {}


def admin_command(
    name: str, help: str, arguments: Callable[[argparse.ArgumentParser], None]
) -> Callable[[AdminRun], AdminRun]:
    """Register the decorated function as `reos-memory team admin NAME`."""

    def register(run: AdminRun) -> AdminRun:
        ADMIN_COMMANDS[name] = AdminCommand(help, arguments, run)
        return run

    return register


def _team_args(team: argparse.ArgumentParser) -> None:
    tsub = team.add_subparsers(dest="team_command", required=True)
    admin = tsub.add_parser("admin", help="orgs, teams and API keys of the team database")
    asub = admin.add_subparsers(dest="admin_command", required=True)
    for name, cmd in ADMIN_COMMANDS.items():
        p = asub.add_parser(name, help=cmd.help)
        _team_db_args(p)
        cmd.arguments(p)


@command(
    "team", "the team server's database: `team admin` manages orgs, teams and keys", _team_args
)
def team(config: Config, args: argparse.Namespace) -> int:
    """Open (or start) the team database, migrate it, and run one admin command on it, with its
    audit-log row; domain errors are one line on stderr and exit code 1."""
    import getpass
    from pathlib import Path

    from reos_memory.config import default_home
    from reos_memory.errors import ReosError

    try:
        from reos_memory.team.admin import cli_actor
        from reos_memory.team.database import open_team_database
    except ImportError as exc:  # psycopg and the embedded PostgreSQL come with the extra
        sys.stderr.write(
            f'reos-memory: {exc}; install the team extra: pip install "reos-memory[team]"\n'
        )
        return 1

    data_dir = Path(args.data_dir) if args.data_dir else default_home() / "team-db"
    try:
        db = open_team_database(args.database_url, data_dir.expanduser())
    except ReosError as exc:
        sys.stderr.write(f"reos-memory: {exc.message}\n")
        return 1
    try:
        with db.connect() as conn:
            return ADMIN_COMMANDS[args.admin_command].run(conn, cli_actor(getpass.getuser()), args)
    except ReosError as exc:
        sys.stderr.write(f"reos-memory: {exc.message}\n")
        return 1
    finally:
        db.close()


def _name_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", help="the org's name (unique)")


@admin_command("create-org", "create an org", _name_arg)
def create_org(conn: psycopg.Connection, actor: Actor, args: argparse.Namespace) -> int:
    from reos_memory.team import admin

    org = admin.create_org(conn, actor, args.name)
    sys.stdout.write(f"created org {org.name} ({org.id})\n")
    return 0


def _create_team_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("org", help="the org's name or id")
    p.add_argument("team", help="the new team's name (unique in its org)")


@admin_command("create-team", "create a team in an org", _create_team_args)
def create_team(conn: psycopg.Connection, actor: Actor, args: argparse.Namespace) -> int:
    from reos_memory.team import admin

    t = admin.create_team(conn, actor, args.org, args.team)
    sys.stdout.write(f"created team {t.name} ({t.id}) in org {args.org}\n")
    return 0


def _create_key_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--org", required=True, help="the org's name or id")
    p.add_argument("--team", help="limit the key to this team of the org (name or id)")
    p.add_argument("--role", required=True, choices=["reader", "writer", "admin"])
    p.add_argument("--name", default="", help="what the key is for (shown by list-keys)")
    p.add_argument("--expires-days", type=float, help="the key stops working after these days")
    p.add_argument("--member", help="the member the key belongs to (name or id; see add-member)")
    p.add_argument("--json", action="store_true", help='print one line {"key_id": ..., "key": ...}')


@admin_command("create-key", "create an API key and print it (shown only once)", _create_key_args)
def create_key(conn: psycopg.Connection, actor: Actor, args: argparse.Namespace) -> int:
    import json

    from reos_memory.team import admin

    new, info = admin.create_key(
        conn,
        actor,
        org=args.org,
        team=args.team,
        role=args.role,
        name=args.name,
        expires_days=args.expires_days,
        member=args.member,
    )
    if args.json:
        sys.stdout.write(json.dumps({"key_id": new.key_id, "key": new.key}) + "\n")
    else:
        sys.stdout.write(new.key + "\n")
        sys.stderr.write(
            f"key {new.key_id}: role {info.role}, org {args.org}"
            + (f", team {args.team}" if args.team else "")
            + (f", member {info.member_id}" if info.member_id else "")
            + (f", expires {info.expires_at:%Y-%m-%d %H:%M} UTC" if info.expires_at else "")
            + "; this is the only time it is shown\n"
        )
    return 0


def _revoke_key_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("key_id", help="the key's id (or its rmk_<id> prefix)")


@admin_command("revoke-key", "revoke an API key (it is refused from now on)", _revoke_key_args)
def revoke_key(conn: psycopg.Connection, actor: Actor, args: argparse.Namespace) -> int:
    from reos_memory.team import admin

    info, now = admin.revoke_key(conn, actor, args.key_id)
    when = f"{info.revoked_at:%Y-%m-%d %H:%M:%S} UTC"
    sys.stdout.write(
        f"revoked key {info.key_id}\n" if now else f"key {info.key_id} was revoked at {when}\n"
    )
    return 0


def _list_keys_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("org", help="the org's name or id")


@admin_command("list-keys", "list an org's API keys (never a key or its hash)", _list_keys_args)
def list_keys(conn: psycopg.Connection, actor: Actor, args: argparse.Namespace) -> int:
    from reos_memory.team import admin

    rows = admin.list_keys(conn, args.org)
    out = [
        f"{'key_id':16}  {'role':6}  {'status':7}  {'team':21}  {'expires':16}  {'member':20}  name"
    ]
    for k in rows:
        expires = f"{k.expires_at:%Y-%m-%d %H:%M}" if k.expires_at else "never"
        out.append(
            f"{k.key_id:16}  {k.role:6}  {k.status:7}  {k.team_id or '(org)':21}  {expires:16}"
            f"  {k.member_id or '-':20}  {k.name}"
        )
    sys.stdout.write("\n".join(out) + "\n")
    return 0


def _add_member_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("org", help="the org's name or id")
    p.add_argument("name", help="the member's name (unique among the org's live members)")
    p.add_argument("--team", help="the member's team in the org (name or id; default: none)")
    p.add_argument("--email", help="the member's email address")
    p.add_argument("--json", action="store_true", help="print the member as one JSON line")


@admin_command(
    "add-member", "add a member (a person keys can belong to) to an org", _add_member_args
)
def add_member(conn: psycopg.Connection, actor: Actor, args: argparse.Namespace) -> int:
    from reos_memory.team import admin, members

    org = admin.org_named(conn, args.org)
    m = members.add_member(
        conn, actor, org.id, "team/admin/add-member", name=args.name, team=args.team,
        email=args.email,
    )  # fmt: skip
    if args.json:
        _json_line(m)
    else:
        where = f"team {args.team}" if args.team else "no team"
        sys.stdout.write(f"added member {m.name} ({m.member_id}) to org {org.name}, {where}\n")
    return 0


def _remove_member_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("org", help="the org's name or id")
    p.add_argument("member", help="the member's name or id")


@admin_command(
    "remove-member", "remove a member of an org and revoke its API keys", _remove_member_args
)
def remove_member(conn: psycopg.Connection, actor: Actor, args: argparse.Namespace) -> int:
    from reos_memory.team import admin, members

    org = admin.org_named(conn, args.org)
    done = members.remove_member(conn, actor, org.id, "team/admin/remove-member", args.member)
    m = done.member
    if not done.removed_now:
        sys.stdout.write(f"member {m.name} ({m.member_id}) was removed at {m.removed_at}\n")
        return 0
    revoked = ", ".join(done.revoked_key_ids) or "none"
    sys.stdout.write(f"removed member {m.name} ({m.member_id}); revoked its keys: {revoked}\n")
    return 0


def _list_members_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("org", help="the org's name or id")
    p.add_argument("--json", action="store_true", help="print one JSON object per member a line")


@admin_command("list-members", "list an org's members (removed ones too)", _list_members_args)
def list_members(conn: psycopg.Connection, actor: Actor, args: argparse.Namespace) -> int:
    from reos_memory.team import admin, members

    found = members.list_members(conn, admin.org_named(conn, args.org).id)
    if args.json:
        for m in found:
            _json_line(m)
        return 0
    out = [f"{'member_id':20}  {'status':7}  {'team':21}  {'email':24}  name"]
    out += [
        f"{m.member_id:20}  {m.status:7}  {m.team_id or '(org)':21}  {m.email or '-':24}  {m.name}"
        for m in found
    ]
    sys.stdout.write("\n".join(out) + "\n")
    return 0


def _prune_audit_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--older-than-days",
        type=_at_least(int, 1),
        required=True,
        help="delete audit rows older than this",
    )
    p.add_argument("--json", action="store_true", help="print the counts as one JSON line")


@admin_command(
    "prune-audit", "delete audit-log rows older than some days, in every org", _prune_audit_args
)
def prune_audit(conn: psycopg.Connection, actor: Actor, args: argparse.Namespace) -> int:
    from reos_memory.team import admin

    result = admin.prune_audit(conn, actor, args.older_than_days)
    if args.json:
        _json_line(result)
    else:
        sys.stdout.write(
            f"deleted {result.deleted} audit rows older than {result.older_than_days} days"
            f" ({len(result.by_org)} orgs)\n"
        )
    return 0


def _json_line(value: object) -> None:
    import msgspec

    sys.stdout.write(msgspec.json.encode(value).decode() + "\n")


def _team_server_args(p: argparse.ArgumentParser) -> None:
    _team_db_args(p)
    _app_url_arg(p)
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8787, help="port to listen on (default 8787)")
    p.add_argument("--log-level", choices=["debug", "info", "warning", "error"])
    p.add_argument(
        "--rate-limit",
        type=_at_least(float, 0),
        default=50.0,
        help="requests a second per API key in this process, burst twice that (0: no limit;"
        " also failed authentications a second per client address); default 50",
    )
    p.add_argument(
        "--trusted-proxy",
        action="append",
        default=[],
        metavar="ADDRESS",
        help="the address of a reverse proxy in front whose X-Forwarded-For and"
        " X-Forwarded-Proto name the client (repeatable); default none: the TCP peer is the client",
    )
    p.add_argument(
        "--header-timeout-s",
        type=_at_least(float, 0.1),
        default=10.0,
        help="seconds a client has to send a request's headers, and then its body, before its"
        " connection is closed; default 10",
    )
    p.add_argument(
        "--max-connections-per-address",
        type=_at_least(int, 1),
        default=256,
        help="connections one client address (IPv6: its /64) may hold open at once; one more"
        " is closed at once (a --trusted-proxy's are not counted); default 256",
    )
    p.add_argument(
        "--statement-timeout-ms",
        type=_at_least(int, 1),
        default=5000,
        help="longest a database statement of a request may run (default 5000)",
    )
    p.add_argument(
        "--lock-timeout-ms",
        type=_at_least(int, 1),
        default=1000,
        help="longest a request waits for a row or table lock (default 1000)",
    )
    p.add_argument(
        "--audit-retention-days",
        type=_at_least(int, 0),
        default=365,
        help="delete audit rows older than this at start and hourly (default 365; 0 keeps all)",
    )


Number = TypeVar("Number", int, float)


def _at_least(kind: Callable[[str], Number], low: float) -> Callable[[str], Number]:
    """An argparse type: `kind(text)`, refused below `low` with a message saying the rule."""

    def convert(text: str) -> Number:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if value < low or value != value:  # NaN compares false with everything
            raise argparse.ArgumentTypeError(f"{text} is below {low}")
        return value

    return convert


@command(
    "team-server",
    "serve the team server: JSON-RPC at POST /rpc with an API key, GET /health",
    _team_server_args,
)
def team_server(config: Config, args: argparse.Namespace) -> int:
    """Open (or start) the team database, migrate it, and serve HTTP until SIGTERM or SIGINT;
    the embedded database is stopped on the way out if this process started it."""
    from pathlib import Path

    from reos_memory.config import default_home
    from reos_memory.errors import ReosError
    from reos_memory.logs import setup_logging

    log = setup_logging(config.log_level)
    try:
        from reos_memory.app import open_team_service
        from reos_memory.interfaces.team_http import serve as serve_http
        from reos_memory.store.team.connection import Timeouts
        from reos_memory.team.database import open_team_database
        from reos_memory.team.retention import AuditPruner
    except ImportError as exc:  # starlette, uvicorn, psycopg: the team extra
        sys.stderr.write(
            f'reos-memory: {exc}; install the team extra: pip install "reos-memory[team]"\n'
        )
        return 1
    data_dir = Path(args.data_dir) if args.data_dir else default_home() / "team-db"
    t0 = time.monotonic()
    try:
        db = open_team_database(args.database_url, data_dir.expanduser(), args.app_database_url)
    except ReosError as exc:
        log.error("team_database_unavailable", error=exc.message)
        return 1
    timeouts = Timeouts(statement_ms=args.statement_timeout_ms, lock_ms=args.lock_timeout_ms)
    try:
        svc, embeddings = open_team_service(config, db.app_url, log, timeouts)
        pruner = AuditPruner(db.connect, args.audit_retention_days, log)
        try:
            log.info(
                "team_database_ready",
                embedded=db.embedded is not None,
                migrations_applied=list(db.applied),
                seconds=round(time.monotonic() - t0, 3),
            )
            if args.audit_retention_days > 0:
                pruner.start()
            serve_http(
                svc, args.host, args.port, log, args.rate_limit, args.header_timeout_s,
                trusted_proxies=args.trusted_proxy,
                max_per_address=args.max_connections_per_address,
            )  # fmt: skip
        finally:
            pruner.stop()
            svc.close()
            embeddings.close()
    finally:
        db.close()
    log.info("team_server_stopped")
    return 0
