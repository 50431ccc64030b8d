"""`sqrl ingest`, `sqrl watch` and `sqrl hooks`: connecting the real agents."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import sys
from pathlib import Path
from typing import Any

from reos_memory.config import Config, ConfigError
from reos_memory.errors import ReosError


def run(config: Config, args: Any) -> int:
    if args.command == "hooks":
        return _hooks(config, args)
    embedder = getattr(args, "embedder", None)
    helper = None
    if args.command == "ingest":
        from reos_memory.squirrel.writer import helper_process as ingest_helper

        if ingest_helper.wanted(config, args.paths):
            # a large catch-up: the Memory Writer runs in a second process, started first so
            # its start-up overlaps ours; this process then needs the model only if it fails
            helper = ingest_helper.Helper("reos_memory.app:open_helper", config, embedder)
    from reos_memory.app import open_app

    try:
        # the model loads while the logs are read: the first commit that needs it waits for it
        app = open_app(
            config, needs_model=True, embedder=embedder, wait=False, defer_model=bool(helper)
        )
    except ReosError as exc:
        if helper is not None:
            helper.close()
        sys.stderr.write(f"sqrl: {exc.message}\n")
        return 1
    try:
        if args.command == "ingest":
            return _ingest(config, app, args, helper)
        return _watch(config, app, args)
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


def _ingest(config: Config, app: Any, args: Any, helper: Any = None) -> int:
    from reos_memory.squirrel.ingest import ingest as tin
    from reos_memory.squirrel.ingest.watch import Progress

    missing = [p for p in args.paths if not os.path.exists(p)]
    if missing:
        sys.stderr.write(f"sqrl: no such file or directory: {missing[0]}\n")
        return 1
    end = True if args.end else None
    opts = tin.Options(args.agent, end, config.session_idle_minutes * 60.0)
    progress = None if args.json else Progress()
    reps = app.squirrel.ingest_paths(args.paths, opts, progress, helper)
    # sessions left open (their logs are fresh): their last events wait for the session to end
    pending = app.squirrel.pending_events(
        r.session_id for r in reps if r.session_id and not r.ended
    )
    if args.json:
        out = [{**r.public(), "pending_events": pending.get(r.session_id or "", 0)} for r in reps]
        sys.stdout.write(json.dumps(out, default=str) + "\n")
        return 0
    lines = sum(r.lines for r in reps)
    events = sum(r.events for r in reps)
    episodes = sum(len(r.episodes) for r in reps)
    learned = sum(
        len(e.get("ops") or []) for r in reps for e in r.episodes if e.get("outcome") == "written"
    )
    skipped = [r for r in reps if r.skipped_reason]
    sys.stdout.write(
        f"{len(reps)} file(s): {lines} new lines, {events} events, {episodes} episode(s),"
        f" {learned} memory op(s)\n"
    )
    for r in skipped:
        sys.stdout.write(f"  skipped {r.path}: {r.skipped_reason}\n")
    if pending:
        sys.stdout.write(
            f"  still pending: {sum(pending.values())} event(s) of {len(pending)} open session(s),"
            " not yet cut into episodes nor learned from. They are learned once their logs have"
            f" been idle for {config.session_idle_minutes:g} min (at the next `sqrl ingest` or"
            " `sqrl watch`), or now with `sqrl ingest --end` on the same paths.\n"
        )
    return 0


def _watch(config: Config, app: Any, args: Any) -> int:
    from reos_memory.squirrel.ingest.watch import AlreadyWatching, Progress, WatchLock

    roots = args.root or [config.claude_projects_dir, config.codex_sessions_dir]
    interval = args.interval if args.interval is not None else config.watch_interval_s
    idle = (args.idle_minutes or config.session_idle_minutes) * 60.0
    try:
        lock = WatchLock(config.db).__enter__()
    except AlreadyWatching as exc:
        sys.stderr.write(f"sqrl: {exc}\n")
        return 3
    watcher = app.squirrel.watcher(roots, idle_seconds=idle, progress=Progress())

    def stop(signum: int, frame: Any) -> None:
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
    beside = Path(sys.executable).parent / "reos-memory"
    if beside.is_file() and os.access(beside, os.X_OK):
        return shlex.quote(str(beside))
    found = shutil.which("reos-memory")
    if found:
        return shlex.quote(os.path.realpath(found))
    return f"{shlex.quote(sys.executable)} -m reos_memory"


def _hooks(config: Config, args: Any) -> int:
    from reos_memory.cli import hooks_settings as hs

    scope = "project" if args.project is not None else ("local" if args.local else "user")
    project = Path(args.project or args.local or ".").resolve() if scope != "user" else None
    path = hs.settings_path(scope, project)  # type: ignore[arg-type]
    writer: dict[str, Any] | None = None
    try:
        if args.hooks_command == "install":
            writer = _writer_choice(config, args)
            if writer is not None and writer.get("refused"):
                sys.stdout.write("nothing changed\n")
                return 1
            command = hook_executable()
            # the hook must open the database this command did (Claude Code runs it with its
            # own environment), with the config file that names the writer
            config_file = (writer or {}).get("config_file") or args.config
            config_file = config_file or os.environ.get("REOS_MEMORY_CONFIG")
            if config_file:
                command = (
                    f"REOS_MEMORY_CONFIG={shlex.quote(os.path.abspath(config_file))} {command}"
                )
            if args.db or os.environ.get("REOS_MEMORY_DB"):
                command = f"REOS_MEMORY_DB={shlex.quote(config.db)} {command}"
            res = hs.install(path, command)
        elif args.hooks_command == "uninstall":
            res = hs.uninstall(path)
        else:
            st = hs.status(path)
            if args.json:
                sys.stdout.write(json.dumps(st) + "\n")
                return 0
            sys.stdout.write(
                f"{st['path']}: {'installed' if st['installed'] else 'not installed'}\n"
            )
            for ev, s in st["events"].items():
                mark = "yes" if s["installed"] else "no "
                extra = f" (+{s['foreign_hooks']} other hook(s))" if s["foreign_hooks"] else ""
                cmd = f"  {s['commands'][0]}" if s["commands"] else ""
                sys.stdout.write(f"  {mark} {ev}{extra}{cmd}\n")
            return 0
    except (hs.SettingsError, ValueError, ConfigError) as exc:
        sys.stderr.write(f"sqrl: {exc}\n")
        return 1
    if args.json:
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
    elif not res.changed:
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
    if writer and not args.json:
        sys.stdout.write(f'{writer["config_file"]}: writer = "{writer["writer"]}"\n')
    return 0


def _writer_choice(config: Config, args: Any) -> dict[str, Any] | None:
    """With `--writer`: say what an agent-CLI writer will cost, ask when on a terminal (unless
    `--yes`), and write the setting into the user's config file."""
    choice = getattr(args, "writer", None)
    if choice is None:
        return None
    from reos_memory.cli import writer_setup as ws

    out: dict[str, Any] = {"writer": choice}
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
