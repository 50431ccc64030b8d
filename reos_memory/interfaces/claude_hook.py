"""`reos-memory hook claude-code`: how memories get back into Claude Code, and how its
transcript gets to Squirrel, through the agent's own hooks.

Claude Code runs the command with one JSON object on stdin (`hook_event_name`, `session_id`,
`transcript_path`, `cwd`, `prompt`, `source`, ...):

* `SessionStart`: `hookSpecificOutput.additionalContext` holds get_task_context for the project
  (the task: the session's first prompt when the transcript has one, else the project's most
  important memories), within `hook_context_budget` tokens.
* `UserPromptSubmit`: context for the prompt, only memories not injected earlier in the session
  and only ones similar to the prompt, within `hook_prompt_budget`; no output at all otherwise.
* `Stop`, `SubagentStop`, `PreCompact`, `SessionEnd`: the transcript (and its subagent files) is
  ingested from its cursor, and on SessionEnd the session is ended, by a detached worker: the
  hook itself returns at once. Requests are files in `<db dir>/hook-queue/`, one per session
  (a later one for the same session replaces it); at most one worker runs per database (an
  exclusive lock), drains the queue and exits.

The hook never breaks the agent: whatever fails, it prints nothing to stdout and exits 0 (the
reason goes to `<db dir>/hook.log`).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from reos_memory.config import Config
from reos_memory.squirrel.markers import WRITER_RUN_ENV

MAX_INPUT = 4 << 20
LOG_BYTES = 1 << 20
INGEST_EVENTS = ("Stop", "SubagentStop", "PreCompact", "SessionEnd")


def _beside_db(config: Config, suffix: str) -> Path:
    """A file or folder of the hook's next to its database (one set per database)."""
    db = Path(config.db).expanduser().resolve()
    return db.with_name(db.name + suffix)


def log_line(config: Config, text: str) -> None:
    """Append to the hook log `<db>.hook.log` (kept under 1 MB: the older half is dropped)."""
    with contextlib.suppress(OSError):
        path = _beside_db(config, ".hook.log")
        if path.exists() and path.stat().st_size > LOG_BYTES:
            data = path.read_bytes()[-LOG_BYTES // 2 :]
            path.write_bytes(data)
        with open(path, "a", encoding="utf-8") as f:
            f.write(time.strftime("%Y-%m-%dT%H:%M:%S ") + text.rstrip() + "\n")


def run(config: Config, stdin: bytes) -> int:
    """Handle one hook call; the answer (if any) is written to stdout. Always returns 0."""
    if os.environ.get(WRITER_RUN_ENV):
        # a Memory Writer run of ours (`claude -p`): never hooked, so never learned from
        return 0
    # Nothing but the answer may reach stdout: anything printed meanwhile (by us or a library,
    # through sys.stdout or the file descriptor) goes to stderr.
    sys.stdout.flush()
    out_fd = os.dup(1)
    os.dup2(2, 1)
    real_stdout, sys.stdout = sys.stdout, sys.stderr
    answer: dict[str, Any] | None = None
    try:
        payload = json.loads(stdin[:MAX_INPUT])
        if not isinstance(payload, dict):
            raise ValueError("the hook input is not a JSON object")
        answer = handle(config, payload)
    except Exception:
        log_line(config, "hook failed: " + traceback.format_exc())
        answer = None
    finally:
        with contextlib.suppress(Exception):
            sys.stderr.flush()
        sys.stdout = real_stdout
        os.dup2(out_fd, 1)
        os.close(out_fd)
    if answer:
        with contextlib.suppress(OSError):
            sys.stdout.write(json.dumps(answer, ensure_ascii=False))
            sys.stdout.flush()
    return 0


def handle(config: Config, payload: dict[str, Any]) -> dict[str, Any] | None:
    event = payload.get("hook_event_name")
    if event == "SessionStart":
        return _context(config, payload, event, _first_prompt(payload), config.hook_context_budget)
    if event == "UserPromptSubmit":
        prompt = payload.get("prompt")
        if not isinstance(prompt, str) or not prompt.strip():
            return None
        model = _start_model(config)  # while Python imports the rest
        return _context(config, payload, event, prompt, config.hook_prompt_budget, model)
    if event in INGEST_EVENTS:
        transcript = payload.get("transcript_path")
        if isinstance(transcript, str) and transcript:
            enqueue(config, payload.get("session_id"), transcript, end=event == "SessionEnd")
            spawn_worker(config)
        return None
    return None


def _start_model(config: Config) -> dict[str, Any]:
    """Start building the ONNX embedder on a thread now; {setting: callable returning it}."""
    if config.embedder != "onnx":
        return {}
    import threading

    box: dict[str, Any] = {}

    def build() -> None:
        try:
            from reos_memory.embeddings.onnx import OnnxEmbedder

            box["embedder"] = OnnxEmbedder(
                Path(config.model_dir), threads=config.onnx_threads or None
            )
        except BaseException as exc:  # handed to whoever asks for the model
            box["error"] = exc

    t = threading.Thread(target=build, name="model-preload", daemon=True)
    t.start()

    def get() -> Any:
        t.join()
        if "error" in box:
            raise box["error"]
        return box["embedder"]

    return {"onnx": get}


def _context(
    config: Config,
    payload: dict[str, Any],
    event: str,
    task: str | None,
    budget: int,
    model: dict[str, Any] | None = None,
) -> dict[str, Any] | None:
    cwd = payload.get("cwd")
    if not isinstance(cwd, str) or not cwd:
        return None
    session = payload.get("session_id") if isinstance(payload.get("session_id"), str) else None
    import msgspec

    from reos_memory.app import open_app

    # A one-shot process: the few nearest memories come from the sqlite-vec table instead of
    # loading every vector into memory first; the model loads while the rest is prepared.
    one_shot = msgspec.structs.replace(config, vector_search="sqlite")
    app = open_app(one_shot, needs_model=task is not None, wait=False, preloaded=model)
    try:
        # Only the read path: the Squirrel facade would also load the writer's rules (~0.4 s).
        from reos_memory.squirrel.memory import context as ctxmod
        from reos_memory.squirrel.memory.policy import load_policy
        from reos_memory.squirrel.projects import owner_of, resolve_project, safe_session_id

        proj = resolve_project(app.db, None, cwd)
        assert proj is not None
        policy = load_policy(config.policy_file or None, proj.root)
        session = safe_session_id(session)
        if task is not None:
            app.embeddings.wait_ready(120)
        out = ctxmod.get_task_context(
            app.db,
            app.indexer,
            policy,
            project_id=proj.id,
            task=task,
            owner=owner_of(None, None, config.owner_id),
            path=None,
            session_id=session,
            budget=budget,
            exclude_injected=event == "UserPromptSubmit",
            relevant_only=event == "UserPromptSubmit",
        )
    finally:
        app.close()
    if not out.memory_ids:
        return None
    return {
        "hookSpecificOutput": {
            "hookEventName": event,
            "additionalContext": out.context_prompt,
        }
    }


def _first_prompt(payload: dict[str, Any]) -> str | None:
    """The first thing the user asked in this session, when the transcript already has it (a
    resumed, cleared or compacted session)."""
    path = payload.get("transcript_path")
    if not isinstance(path, str) or not os.path.isfile(path):
        return None
    from reos_memory.squirrel.ingest import reader
    from reos_memory.squirrel.ingest.base import ParseState
    from reos_memory.squirrel.ingest.claude_code import ClaudeCode

    adapter, state = ClaudeCode(), ParseState()
    for line in reader.lines(path, 0, 4 << 20):
        try:
            rec = json.loads(line.data or b"")
        except ValueError:
            continue
        if not isinstance(rec, dict):
            continue
        for p in adapter.parse(rec, state):
            if p.event.role == "user" and p.event.kind == "message" and p.event.text:
                return p.event.text[:2000]
    return None


# -- the detached worker ----------------------------------------------------------------------


def queue_dir(config: Config) -> Path:
    return _beside_db(config, ".hook-queue")


def enqueue(config: Config, session_id: Any, transcript: str, end: bool) -> Path:
    """Ask the worker to ingest a transcript (one request per session; an end request stays)."""
    q = queue_dir(config)
    q.mkdir(mode=0o700, parents=True, exist_ok=True)
    key = session_id if isinstance(session_id, str) and session_id else transcript
    name = hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:24] + ".json"
    path = q / name
    with contextlib.suppress(OSError, ValueError):
        end = end or bool(json.loads(path.read_text()).get("end"))
    tmp = q / (name + f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"transcript": transcript, "end": end}))
    os.replace(tmp, path)
    return path


def _claim(q: Path) -> list[tuple[Path, dict[str, Any] | None]]:
    """Take the pending requests (oldest first): each is renamed to a name of this worker's
    first, so a request written meanwhile under the same name is kept for the next round."""
    out: list[tuple[Path, dict[str, Any] | None]] = []
    try:
        entries = sorted(q.glob("*.json"), key=lambda p: p.stat().st_mtime)
    except OSError:
        return out
    for p in entries:
        mine = p.with_name(p.name + f".{os.getpid()}.taken")
        try:
            os.rename(p, mine)
        except OSError:
            continue
        try:
            req = json.loads(mine.read_text())
        except (OSError, ValueError):
            req = None
        ok = isinstance(req, dict) and isinstance(req.get("transcript"), str)
        out.append((mine, req if ok else None))
    return out


def _tidy(q: Path, older_than: float = 3600.0) -> None:
    """Remove leftovers of workers that died (temporary and taken files an hour old)."""
    now = time.time()
    for p in [*q.glob("*.tmp"), *q.glob("*.taken")]:
        with contextlib.suppress(OSError):
            if now - p.stat().st_mtime > older_than:
                p.unlink()


def spawn_worker(config: Config) -> None:
    """Start the worker detached (own session, no terminal, no pipes back to the agent)."""
    cmd = [
        sys.executable,
        "-m",
        "reos_memory",
        "hook",
        "claude-code",
        "--worker",
        "--db",
        config.db,
    ]
    env = dict(os.environ)
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    subprocess.Popen(
        cmd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        close_fds=True,
        env=env,
    )


MAX_ROUNDS = 1000  # a worker that keeps finding work this long leaves the rest to the next


def work(config: Config) -> int:
    """Drain the queue under the worker lock; exit when it is empty. A second worker finding
    the lock taken exits at once: the one holding it looks at the queue again before leaving."""
    q = queue_dir(config)
    q.mkdir(mode=0o700, parents=True, exist_ok=True)
    _tidy(q)
    lock_path = q / "worker.lock"
    app = None
    try:
        for _ in range(MAX_ROUNDS):
            with open(lock_path, "a+") as lock:
                try:
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    return 0
                for _ in range(MAX_ROUNDS):
                    taken = _claim(q)
                    if not taken:
                        break
                    for path, req in taken:
                        try:
                            if req is not None:
                                if app is None:
                                    from reos_memory.app import open_app

                                    app = open_app(config, needs_model=True, wait=False)
                                _ingest(
                                    config, app.squirrel, req["transcript"], bool(req.get("end"))
                                )
                        except Exception:
                            log_line(config, "hook worker: " + traceback.format_exc())
                        finally:
                            with contextlib.suppress(OSError):
                                path.unlink()
                fcntl.flock(lock, fcntl.LOCK_UN)
            if not any(q.glob("*.json")):  # a request that came in while we were unlocking
                return 0
        return 0
    finally:
        if app is not None:
            app.close_when_written()


def _ingest(config: Config, sq: Any, transcript: str, end: bool) -> None:
    from reos_memory.squirrel.ingest.ingest import Options, end_session, ingest_file

    files = [transcript]
    sub = Path(transcript).with_suffix("") / "subagents"
    if sub.is_dir():
        files += sorted(str(p) for p in sub.glob("agent-*.jsonl") if "acompact" not in p.name)
    session = None
    for f in files:
        try:
            # the session ends below, once every file of it is in
            rep = ingest_file(sq, f, Options(session_end=False))
            session = session or rep.session_id
        except Exception:
            log_line(config, f"ingest {f} failed: " + traceback.format_exc())
    if end and session is not None:
        end_session(sq, session)
