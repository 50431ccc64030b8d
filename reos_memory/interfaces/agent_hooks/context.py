"""Session start and prompt: the context the hook puts in front of the model.

Worked out the same way in the warm service and in a one-shot hook process (the fallback), so
both print the same bytes for the same call: `ask` says what a call asks for, `answer` works it
out on an open App through the Squirrel service, and the call's dialect writes it out."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from reos_memory.config import Config
from reos_memory.interfaces.agent_hooks.common import Opener
from reos_memory.interfaces.agent_hooks.dialects import CONTEXT_KINDS, DIALECTS, Call
from reos_memory.json_types import JSONObject

if TYPE_CHECKING:
    from reos_memory.embeddings.base import Embedder
    from reos_memory.interfaces.services import Services

MAX_INPUT = 4 << 20


class Ask(NamedTuple):
    """What one hook call asks for: the project (cwd), the task, the budget."""

    prompt: bool  # a prompt's context (only memories new to the session and similar to it)
    cwd: str
    session: str | None
    task: str | None
    budget: int


def parse(stdin: bytes) -> JSONObject:
    """The hook's JSON object (ValueError when it is not one)."""
    payload = json.loads(stdin[:MAX_INPUT])
    if not isinstance(payload, dict):
        raise ValueError("the hook input is not a JSON object")
    return payload


def wanted(call: Call) -> bool:
    """Whether a call asks for context at all: a session start or a non-empty prompt, with a
    project directory, from an agent that takes context (cheap: nothing else is asked)."""
    if call.kind not in CONTEXT_KINDS or not call.cwd or DIALECTS[call.tool].answer is None:
        return False
    return call.kind == "session_start" or bool(call.prompt and call.prompt.strip())


def ask(config: Config, call: Call) -> Ask | None:
    """The context a call asks for; None when it asks for none (see `wanted`)."""
    if not wanted(call) or call.cwd is None:
        return None
    if call.kind == "session_start":
        task = _first_prompt(call.transcript, DIALECTS[call.tool].agent)
        return Ask(False, call.cwd, call.session, task, config.hook_context_budget)
    return Ask(True, call.cwd, call.session, call.prompt, config.hook_prompt_budget)


def app_config(config: Config) -> Config:
    """The App's settings for the hook: the few nearest memories come from the sqlite-vec table
    (no vectors loaded into memory first, and every process sees the others' writes at once)."""
    import msgspec

    return msgspec.structs.replace(config, vector_search="sqlite")


def answer(app: Services, req: Ask) -> str | None:
    """The context for a request (None: nothing to give), from the Squirrel service of an
    open App."""
    from reos_memory.squirrel import api

    if req.task is not None:
        app.embeddings.wait_ready(120)
    p = api.ContextParams(
        project_root=req.cwd,
        task=req.task or "",
        session_id=req.session,
        context_budget_tokens=req.budget,
        exclude_injected=req.prompt,
    )
    sq = app.squirrel
    out = (
        sq.get_task_context(p, relevant_only=req.prompt)
        if req.task is not None
        else sq.session_start_context(p)
    )
    return out.context_prompt if out.memory_ids else None


def answer_once(config: Config, req: Ask, open_app: Opener) -> str | None:
    """`answer` in this process: the App opened for this one call (the model, when the task
    needs it, starts loading on a thread before the rest is imported)."""
    model = _start_model(config) if req.task is not None else None
    app = open_app(
        app_config(config), needs_model=req.task is not None, wait=False, preloaded=model
    )
    try:
        return answer(app, req)
    finally:
        app.close()


def reply(config: Config, call: Call, answer_with: Callable[[Ask], str | None]) -> bytes:
    """What the hook prints for a call: its agent's answer holding the context, or nothing."""
    req = ask(config, call)
    return b"" if req is None else DIALECTS[call.tool].render(call, answer_with(req))


def _start_model(config: Config) -> dict[str, Callable[[], Embedder]]:
    """Start building the ONNX embedder on a thread now; {setting: callable returning it}."""
    if config.embedder != "onnx":
        return {}
    import threading

    built: list[Embedder] = []
    failed: list[BaseException] = []

    def build() -> None:
        try:
            from reos_memory.embeddings.onnx import OnnxEmbedder

            built.append(OnnxEmbedder(Path(config.model_dir), threads=config.onnx_threads or None))
        except BaseException as exc:  # handed to whoever asks for the model
            failed.append(exc)

    t = threading.Thread(target=build, name="model-preload", daemon=True)
    t.start()

    def get() -> Embedder:
        t.join()
        if failed:
            raise failed[0]
        return built[0]

    return {"onnx": get}


def _first_prompt(path: str | None, agent: str) -> str | None:
    """The first thing the user asked in this session, when the transcript already has it (a
    resumed, cleared or compacted session) and Squirrel reads that agent's transcripts."""
    if not path or not os.path.isfile(path):
        return None
    from reos_memory.squirrel.ingest import reader
    from reos_memory.squirrel.ingest.base import ParseState
    from reos_memory.squirrel.ingest.ingest import ADAPTERS

    adapter, state = ADAPTERS.get(agent), ParseState()
    if adapter is None:
        return None
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
