"""SessionStart and UserPromptSubmit: the context the hook puts in front of the model.

Worked out the same way in the warm service and in a one-shot hook process (the fallback), so
both print the same bytes for the same input: `ask` says what a payload asks for, `answer`
works it out on an open App through the Squirrel service, `render` is what goes to stdout."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from reos_memory.config import Config
from reos_memory.interfaces.claude_hook.common import Opener

if TYPE_CHECKING:
    from reos_memory.interfaces.services import Services

MAX_INPUT = 4 << 20
EVENTS = ("SessionStart", "UserPromptSubmit")


class Ask(NamedTuple):
    """What one hook call asks for: the project (cwd), the task, the budget."""

    event: str
    cwd: str
    session: str | None
    task: str | None
    budget: int


def parse(stdin: bytes) -> dict[str, Any]:
    """The hook's JSON object (ValueError when it is not one)."""
    payload = json.loads(stdin[:MAX_INPUT])
    if not isinstance(payload, dict):
        raise ValueError("the hook input is not a JSON object")
    return payload


def ask(config: Config, payload: dict[str, Any]) -> Ask | None:
    """The context a SessionStart or UserPromptSubmit call asks for; None when there is none
    to give (another event, no project directory, an empty prompt)."""
    event = payload.get("hook_event_name")
    cwd = payload.get("cwd")
    if event not in EVENTS or not isinstance(cwd, str) or not cwd:
        return None
    sid = payload.get("session_id")
    session = sid if isinstance(sid, str) else None
    if event == "SessionStart":
        return Ask(event, cwd, session, _first_prompt(payload), config.hook_context_budget)
    prompt = payload.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        return None
    return Ask(event, cwd, session, prompt, config.hook_prompt_budget)


def app_config(config: Config) -> Config:
    """The App's settings for the hook: the few nearest memories come from the sqlite-vec table
    (no vectors loaded into memory first, and every process sees the others' writes at once)."""
    import msgspec

    return msgspec.structs.replace(config, vector_search="sqlite")


def answer(app: Services, req: Ask) -> dict[str, Any] | None:
    """The hook's output for a request, from the Squirrel service of an open App."""
    from reos_memory.squirrel import api

    if req.task is not None:
        app.embeddings.wait_ready(120)
    prompt = req.event == "UserPromptSubmit"
    p = api.ContextParams(
        project_root=req.cwd,
        task=req.task or "",
        session_id=req.session,
        context_budget_tokens=req.budget,
        exclude_injected=prompt,
    )
    sq = app.squirrel
    out = (
        sq.get_task_context(p, relevant_only=prompt)
        if req.task is not None
        else sq.session_start_context(p)
    )
    if not out.memory_ids:
        return None
    return {
        "hookSpecificOutput": {
            "hookEventName": req.event,
            "additionalContext": out.context_prompt,
        }
    }


def answer_once(config: Config, req: Ask, open_app: Opener) -> dict[str, Any] | None:
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


def reply(
    config: Config, payload: dict[str, Any], answer_with: Callable[[Ask], dict[str, Any] | None]
) -> bytes:
    """What the hook prints for a SessionStart or UserPromptSubmit payload."""
    req = ask(config, payload)
    return b"" if req is None else render(answer_with(req))


def render(out: dict[str, Any] | None) -> bytes:
    """What the hook prints: the JSON answer, or nothing."""
    if not out:
        return b""
    return json.dumps(out, ensure_ascii=False).encode("utf-8", "surrogateescape")


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
