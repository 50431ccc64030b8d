"""A local HTTP server on loopback speaking the OpenAI chat-completions and Anthropic messages
wire formats, scripted reply by reply; it records every request it receives."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

HANG = "hang"  # a reply that never comes (the client's timeout must end it)


class FakeProvider:
    """Answers each POST with the next queued (status, body); records what it was sent."""

    def __init__(self) -> None:
        self.replies: list[tuple[int, str]] = []
        self.requests: list[dict] = []
        self.delay = 0.0  # seconds each answer takes (hangs excepted)
        self.active = 0  # requests being answered now
        self.peak = 0  # the most requests ever answered at once
        self._lock = threading.Lock()
        self._stop = threading.Event()
        provider = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                with provider._lock:
                    provider.active += 1
                    provider.peak = max(provider.peak, provider.active)
                try:
                    self._answer()
                finally:
                    with provider._lock:
                        provider.active -= 1

            def _answer(self) -> None:
                raw = self.rfile.read(int(self.headers["content-length"]))
                provider.requests.append(
                    {
                        "path": self.path,
                        "headers": dict(self.headers),
                        "body": json.loads(raw),
                        "raw": raw,
                    }
                )
                status, text = provider.replies.pop(0) if provider.replies else (500, "")
                if text == HANG:
                    provider._stop.wait(60)
                    return
                if provider.delay:
                    time.sleep(provider.delay)
                data = text.encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    @staticmethod
    def openai(content: str, usage: tuple[int, int] | None = (321, 45)) -> str:
        body: dict = {"choices": [{"message": {"role": "assistant", "content": content}}]}
        if usage:
            body["usage"] = {"prompt_tokens": usage[0], "completion_tokens": usage[1]}
        return json.dumps(body)

    @staticmethod
    def anthropic(content: str, usage: tuple[int, int] | None = (321, 45)) -> str:
        body: dict = {"content": [{"type": "text", "text": content}]}
        if usage:
            body["usage"] = {"input_tokens": usage[0], "output_tokens": usage[1]}
        return json.dumps(body)

    def reply(self, kind: str, content: str) -> tuple[int, str]:
        return 200, (self.openai(content) if kind == "openai" else self.anthropic(content))

    def close(self) -> None:
        self._stop.set()
        self.httpd.shutdown()
        time.sleep(0.05)


def provider_env(provider: FakeProvider, kind: str = "openai", **extra: str) -> dict[str, str]:
    return {
        "REOS_MEMORY_LLM_PROVIDER": kind,
        "REOS_MEMORY_LLM_BASE_URL": provider.url + ("/v1" if kind == "openai" else ""),
        "REOS_MEMORY_LLM_MODEL": "test-model",
        "REOS_MEMORY_LLM_API_KEY_ENV": "TEST_LLM_KEY",
        "TEST_LLM_KEY": "sk-test-123",
        "REOS_MEMORY_LLM_MAX_RETRIES": "2",
        "REOS_MEMORY_LLM_TIMEOUT_S": "5",
        **extra,
    }


def settle(srv, project_root: str, timeout: float = 30.0) -> list[dict]:
    """Wait until the background Memory Writer has no episode of the project left to write;
    returns the project's episodes."""
    deadline = time.monotonic() + timeout
    while True:
        eps = srv.call("squirrel/episodes/list", {"project_root": project_root})["episodes"]
        if all(e["outcome"] not in ("pending", "running") for e in eps):
            return eps
        if time.monotonic() > deadline:
            raise TimeoutError(f"episodes still being written: {eps}")
        time.sleep(0.05)


def failing_episode(tag: str = "") -> list[dict[str, Any]]:
    """One episode whose test run fails: what a writer is asked to learn from."""
    return [
        {"role": "user", "kind": "message", "text": f"run the test suite {tag}".strip()},
        {
            "role": "assistant",
            "kind": "tool_call",
            "tool_name": "Bash",
            "command": "pytest",
            "call_id": "a",
        },
        {
            "role": "tool",
            "kind": "tool_result",
            "call_id": "a",
            "exit_code": 1,
            "text": "E   sqlalchemy.exc.OperationalError: no such table: orders",
        },
    ]
