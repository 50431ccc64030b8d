"""A stop, compaction or session end: the transcript goes to a detached worker.

Requests are files in `<db>.hook-queue/`, one per session (a later one for the same session
replaces it, an end request stays one); at most one worker runs per database (an exclusive
lock), drains the queue and exits. A request names the ingest adapter of the agent that wrote
the transcript, so one worker serves every agent's hook."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import sys
import time
import traceback
from pathlib import Path
from typing import IO, TYPE_CHECKING, Literal, NamedTuple, TypeGuard

from reos_memory.config import Config
from reos_memory.interfaces.agent_hooks.common import Opener, beside_db, log_line
from reos_memory.interfaces.agent_hooks.dialects import DIALECTS, Call
from reos_memory.private_files import private_dir

if TYPE_CHECKING:
    from reos_memory.interfaces.services import Services
    from reos_memory.squirrel.facade import Squirrel

MAX_ROUNDS = 1000  # a worker that keeps finding work this long leaves the rest to the next


class Queued(NamedTuple):
    """A request as its file has it (`enqueue`): the transcript, and the fields read loosely."""

    transcript: str
    end: object  # true: the session ended
    agent: object  # the ingest adapter's name (absent or empty: "auto")


Request = tuple[Path, Queued | None]  # a claimed file and its request (None: unreadable)
# the names `api.IngestTranscriptParams.agent` takes: `AGENT_NAMES`, the ingest adapters' names
# and "auto" (tests/test_ingest_framework.py holds the three equal)
IngestAgent = Literal[
    "auto", "claude-code", "codex", "gemini", "cursor", "copilot", "windsurf", "opencode",
    "aider", "cline",
]  # fmt: skip


def queue_dir(config: Config) -> Path:
    return beside_db(config, ".hook-queue")


def enqueue(config: Config, call: Call, end: bool) -> Path | None:
    """Ask the worker to ingest a call's transcript (one request per session; an end request
    stays); None when the queue's folder is not this user's alone (another user could have made
    it first, beside a database in a shared folder: its links would redirect our writes and its
    requests name transcripts of its choosing)."""
    assert call.transcript is not None
    q = queue_dir(config)
    q.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    if not private_dir(q):
        log_line(config, f"{q} is not a folder of this user's alone: nothing queued")
        return None
    key = f"{call.tool}:{call.session}" if call.session else call.transcript
    name = hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:24] + ".json"
    path = q / name
    with contextlib.suppress(OSError, ValueError):
        end = end or bool(json.loads(path.read_text()).get("end"))
    tmp = q / (name + f".{os.getpid()}.tmp")
    agent = DIALECTS[call.tool].agent
    tmp.write_text(json.dumps({"transcript": call.transcript, "end": end, "agent": agent}))
    os.replace(tmp, path)
    return path


def spawn_worker(config: Config, tool: str) -> None:
    """Start the worker detached (own session, no terminal, no pipes back to the agent)."""
    import subprocess

    cmd = [sys.executable, "-m", "reos_memory", "hook", tool, "--worker"]
    env = dict(os.environ)
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    subprocess.Popen(
        [*cmd, "--db", config.db],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        close_fds=True,
        env=env,
    )


def _claim(q: Path) -> list[Request]:
    """Take the pending requests (oldest first): each is renamed to a name of this worker's
    first, so a request written meanwhile under the same name is kept for the next round."""
    out: list[Request] = []
    if not private_dir(q):
        return out  # (requests in a folder another user can write are not ours)
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
        if isinstance(req, dict) and isinstance(transcript := req.get("transcript"), str):
            out.append((mine, Queued(transcript, req.get("end"), req.get("agent"))))
        else:
            out.append((mine, None))
    return out


def _tidy(q: Path, older_than: float = 3600.0) -> None:
    """Remove leftovers of workers that died (temporary and taken files an hour old)."""
    now = time.time()
    for p in [*q.glob("*.tmp"), *q.glob("*.taken")]:
        with contextlib.suppress(OSError):
            if now - p.stat().st_mtime > older_than:
                p.unlink()


class _Worker:
    """One worker's state: the App, opened at the first readable request, kept for the rest."""

    def __init__(self, config: Config, open_app: Opener) -> None:
        self.config = config
        self.open_app = open_app
        self.app: Services | None = None

    def squirrel(self) -> Squirrel:
        if self.app is None:
            self.app = self.open_app(self.config, needs_model=True, wait=False)
        return self.app.squirrel

    def do(self, path: Path, req: Queued | None) -> None:
        """One request, done or logged; its file is gone afterwards either way."""
        try:
            if req is not None:
                ingest(
                    self.config,
                    self.squirrel(),
                    req.transcript,
                    bool(req.end),
                    str(req.agent or "auto"),
                )
        except Exception:
            log_line(self.config, "hook worker: " + traceback.format_exc())
        finally:
            with contextlib.suppress(OSError):
                path.unlink()

    def drain(self, q: Path) -> None:
        """Claim and do requests until a round finds none; then end the sessions idle past
        `session_idle_minutes` (a tool without a session-end hook, or a session that crashed,
        ends at the next hook call of any session, without `sqrl watch`)."""
        did = False
        for _ in range(MAX_ROUNDS):
            taken = _claim(q)
            if not taken:
                break
            for path, req in taken:
                self.do(path, req)
                did = True
        if did:
            try:
                from reos_memory.squirrel.ingest.ingest import end_idle_sessions

                end_idle_sessions(
                    self.squirrel().ingest_deps, self.config.session_idle_minutes * 60.0
                )
            except Exception:
                log_line(self.config, "hook worker: " + traceback.format_exc())


def _locked(lock: IO[str]) -> bool:
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def work(config: Config, open_app: Opener) -> int:
    """Drain the queue under the worker lock; exit when it is empty. A second worker finding
    the lock taken exits at once: the one holding it looks at the queue again before leaving."""
    q = queue_dir(config)
    q.mkdir(mode=0o700, parents=True, exist_ok=True)
    _tidy(q)
    from reos_memory.squirrel.ingest import cursor_sidecar

    cursor_sidecar.prune(beside_db(config, cursor_sidecar.SUFFIX) / cursor_sidecar.FOLDER)
    worker = _Worker(config, open_app)
    try:
        for _ in range(MAX_ROUNDS):
            with open(q / "worker.lock", "a+") as lock:
                if not _locked(lock):
                    return 0
                worker.drain(q)
                fcntl.flock(lock, fcntl.LOCK_UN)
            if not any(q.glob("*.json")):  # a request that came in while we were unlocking
                return 0
        return 0
    finally:
        if worker.app is not None:
            worker.app.close_when_written()


def ingest(config: Config, sq: Squirrel, transcript: str, end: bool, agent: str) -> None:
    """Ingest a session's transcript and its subagents' files from their cursors with the
    agent's adapter (found by its records while Squirrel has none of that name); end it."""
    from reos_memory.squirrel import api

    # the name goes to the ingester, which checks it against ADAPTERS
    known: IngestAgent = agent if _adapter_name(agent) else "auto"
    files = [transcript]
    sub = Path(transcript).with_suffix("") / "subagents"
    if sub.is_dir():
        files += sorted(str(p) for p in sub.glob("agent-*.jsonl") if "acompact" not in p.name)
    session = None
    for f in files:
        try:
            # the session ends below, once every file of it is in
            rep = sq.ingest_transcript(
                api.IngestTranscriptParams(path=f, agent=known, session_end=False)
            )
            session = session or rep.session_id
        except Exception:
            log_line(config, f"ingest {f} failed: " + traceback.format_exc())
    if end and session is not None:
        sq.end_session(session)


def _adapter_name(agent: str) -> TypeGuard[IngestAgent]:
    """Whether Squirrel has an ingest adapter of this name."""
    from reos_memory.squirrel.ingest.ingest import ADAPTERS

    return agent in ADAPTERS
