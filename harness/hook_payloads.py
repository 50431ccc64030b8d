"""What each agent writes on its hook's stdin, as its docs and sources describe it (field notes
in ../shared/formats/<tool>/NOTES.md), for tests and benchmarks of `reos-memory hook <tool>`."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

# the agent's own event name for each kind of call; None: the agent has no such hook event
EVENTS: dict[str, dict[str, str | None]] = {
    "claude-code": {
        "session_start": "SessionStart",
        "prompt": "UserPromptSubmit",
        "ingest": "Stop",
        "end": "SessionEnd",
    },
    "cursor": {
        "session_start": "sessionStart",
        "prompt": "beforeSubmitPrompt",
        "ingest": "stop",
        "end": "sessionEnd",
    },
    "gemini": {
        "session_start": "SessionStart",
        "prompt": "BeforeAgent",
        "ingest": "AfterAgent",
        "end": "SessionEnd",
    },
    "windsurf": {
        "session_start": None,
        "prompt": "pre_user_prompt",
        "ingest": "post_cascade_response_with_transcript",
        "end": None,
    },
    "copilot": {
        "session_start": "SessionStart",
        "prompt": "UserPromptSubmit",
        "ingest": "Stop",
        "end": None,
    },
}


def payload(
    tool: str,
    kind: str,
    session: str,
    cwd: str,
    transcript: str | None = None,
    prompt: str = "",
) -> dict[str, Any]:
    """The stdin of `tool`'s hook for one kind of call (session_start, prompt, ingest, end)."""
    event = EVENTS[tool][kind]
    assert event is not None, f"{tool} has no {kind} hook"
    now = datetime.now(UTC).isoformat()
    if tool == "windsurf":
        info: dict[str, Any] = {"user_prompt": prompt} if kind == "prompt" else {}
        if transcript is not None:
            info["transcript_path"] = transcript
        return {
            "agent_action_name": event,
            "trajectory_id": session,
            "execution_id": f"{session}-x",
            "timestamp": now,
            "tool_info": info,
        }
    if tool == "cursor":
        out: dict[str, Any] = {
            "conversation_id": session,
            "generation_id": f"{session}-g",
            "model": "claude-sonnet-4",
            "hook_event_name": event,
            "cursor_version": "1.7.2",
            "workspace_roots": [cwd],
            "user_email": None,
            "transcript_path": transcript,
        }
        extra: dict[str, Any] = {
            "session_start": {
                "session_id": session,
                "is_background_agent": False,
                "composer_mode": "agent",
            },
            "prompt": {"prompt": prompt, "attachments": []},
            "ingest": {"status": "completed", "loop_count": 0},
            "end": {"session_id": session, "reason": "completed", "duration_ms": 1000},
        }
        return {**out, **extra[kind]}
    if tool == "copilot":
        out = {
            "timestamp": now,
            "cwd": cwd,
            "sessionId": session,
            "hookEventName": event,
            "transcript_path": transcript,
        }
    else:  # claude-code, gemini
        out = {
            "session_id": session,
            "transcript_path": transcript,
            "cwd": cwd,
            "hook_event_name": event,
        }
        if tool == "gemini":
            out["timestamp"] = now
    if kind == "prompt":
        out["prompt"] = prompt
    elif kind == "session_start":
        out["source"] = "new" if tool == "copilot" else "startup"
    elif kind == "ingest" and tool != "gemini":
        out["stop_hook_active"] = False
    elif kind == "ingest":
        out.update(prompt="p", prompt_response="r", stop_hook_active=False)
    else:
        out["reason"] = "exit" if tool == "gemini" else "prompt_input_exit"
    return out


def cursor_tool_runs(
    conversation: str,
    cwd: str,
    runs: list[dict[str, Any]],
    transcript: str | None = None,
) -> list[dict[str, Any]]:
    """What Cursor hands its post-tool hooks for each tool run (cursor.com/docs/agent/hooks):
    `postToolUse` {tool_name, tool_input, tool_output, tool_use_id, cwd, duration}, or
    `postToolUseFailure` {error_message, failure_type, is_interrupt} for a run with a
    `failure`; a shell command's run is also told by `afterShellExecution` {command, output,
    duration}. `runs`: {name, input, output, failure?, error?} (`Session.runs` of
    harness.agent_logs.cursor)."""
    out: list[dict[str, Any]] = []
    for i, run in enumerate(runs):
        common = {
            **payload("cursor", "ingest", conversation, cwd, transcript=transcript),
            "generation_id": f"{conversation}-g",
        }
        for k in ("status", "loop_count"):
            common.pop(k)
        tool = {"tool_name": run["name"], "tool_input": run["input"], "tool_use_id": f"tu-{i}"}
        if run.get("failure"):
            out.append(
                {
                    **common,
                    **tool,
                    "hook_event_name": "postToolUseFailure",
                    "cwd": cwd,
                    "error_message": run.get("error") or "the tool failed",
                    "failure_type": run["failure"],
                    "duration": 800,
                    "is_interrupt": False,
                }
            )
        else:
            out.append(
                {
                    **common,
                    **tool,
                    "hook_event_name": "postToolUse",
                    "cwd": cwd,
                    "tool_output": run["output"],
                    "duration": 1200,
                }
            )
        command = run["input"].get("command")
        if run["name"] == "Shell" and isinstance(command, str) and not run.get("failure"):
            out.append(
                {
                    **common,
                    "hook_event_name": "afterShellExecution",
                    "command": command,
                    "output": run["output"],
                    "duration": 1100,
                }
            )
    return out
