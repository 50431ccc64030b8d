"""One chat-completion call through httpx: OpenAI-compatible servers (OpenAI, Ollama, llama.cpp,
vLLM) or Anthropic. Timeouts, bounded retries with backoff on 429/5xx/network errors, and a cap on
output tokens. The API key is read from an environment variable named in the settings, so it
never sits in a config file or a log line."""

from __future__ import annotations

import os
import random
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from reos_memory.errors import LLMError

if TYPE_CHECKING:
    import httpx

__all__ = ["Completion", "LLMClient", "LLMError", "LLMSettings"]


@dataclass(frozen=True)
class Completion:
    """A reply and what it cost (tokens as the provider reported them, None when it did not)."""

    text: str
    input_tokens: int | None
    output_tokens: int | None
    attempts: int


@dataclass(frozen=True)
class LLMSettings:
    provider: str = "none"  # none | openai | anthropic
    base_url: str = ""
    model: str = ""
    api_key_env: str = ""
    timeout_s: float = 30.0
    max_retries: int = 2
    max_output_tokens: int = 800

    @property
    def enabled(self) -> bool:
        return self.provider != "none" and bool(self.model)


_DEFAULT_URLS = {"openai": "https://api.openai.com/v1", "anthropic": "https://api.anthropic.com"}
_RETRYABLE = {408, 409, 425, 429, 500, 502, 503, 504, 529}


def _http_errors() -> type[Exception]:
    import httpx

    return httpx.HTTPError


def shown_url(url: str) -> str:
    """A URL without the parts that may carry a secret: credentials and the query string."""
    from urllib.parse import urlsplit, urlunsplit

    try:
        parts = urlsplit(url)
    except ValueError:
        return "(unparsable URL)"
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


class LLMClient:
    """Sends one system + user prompt and returns the text of the reply."""

    def __init__(self, settings: LLMSettings, transport: httpx.BaseTransport | None = None) -> None:
        if not settings.enabled:
            raise LLMError("no LLM provider is configured (llm_provider / llm_model)")
        self.settings = settings
        self.base_url = (settings.base_url or _DEFAULT_URLS.get(settings.provider, "")).rstrip("/")
        key = os.environ.get(settings.api_key_env, "") if settings.api_key_env else ""
        headers = {"content-type": "application/json"}
        if settings.provider == "anthropic":
            headers |= {"x-api-key": key, "anthropic-version": "2023-06-01"}
        elif key:
            headers["authorization"] = f"Bearer {key}"
        import httpx  # here, not at import: it costs ~0.2 s of every start-up (hooks, sqrl)

        self._http = httpx.Client(timeout=settings.timeout_s, headers=headers, transport=transport)
        self.calls = 0

    @property
    def shown_url(self) -> str:
        """The base URL as it may be shown or logged: without `user:password@` or a query."""
        return shown_url(self.base_url)

    def complete(self, system: str, user: str, *, json_mode: bool = True) -> str:
        """The reply text; raises LLMError once retries are used up or the reply is malformed."""
        return self.complete_full(system, user, json_mode=json_mode).text

    def complete_full(
        self, system: str, user: str, *, json_mode: bool = True, max_tokens: int | None = None
    ) -> Completion:
        """The reply with its token usage; raises LLMError like `complete`."""
        s = self.settings
        out_cap = max_tokens or s.max_output_tokens
        if s.provider == "anthropic":
            url = f"{self.base_url}/v1/messages"
            body: dict[str, Any] = {
                "model": s.model,
                "max_tokens": out_cap,
                "system": system,
                "messages": [{"role": "user", "content": user}],
                "temperature": 0,
            }
        else:
            url = f"{self.base_url}/chat/completions"
            body = {
                "model": s.model,
                "max_tokens": out_cap,
                "temperature": 0,
                "messages": [
                    {"role": "system", "content": system},
                    {"role": "user", "content": user},
                ],
            }
            if json_mode:
                body["response_format"] = {"type": "json_object"}
        last = "no attempt"
        for attempt in range(s.max_retries + 1):
            if attempt:
                time.sleep(min(8.0, 0.25 * 2**attempt) * (0.5 + random.random()))
            self.calls += 1
            try:
                resp = self._http.post(url, json=body)
            except _http_errors() as exc:
                last = f"{type(exc).__name__}: {exc}"
                continue
            if resp.status_code in _RETRYABLE:
                last = f"HTTP {resp.status_code}"
                continue
            if resp.status_code >= 400:
                raise LLMError(
                    f"the LLM provider refused the request: HTTP {resp.status_code}",
                    status=resp.status_code,
                )
            try:
                data = resp.json()
                usage = data.get("usage") or {}
                if s.provider == "anthropic":
                    text = "".join(part.get("text", "") for part in data["content"])
                    tin, tout = usage.get("input_tokens"), usage.get("output_tokens")
                else:
                    text = str(data["choices"][0]["message"]["content"])
                    tin, tout = usage.get("prompt_tokens"), usage.get("completion_tokens")
                return Completion(
                    text=text,
                    input_tokens=int(tin) if isinstance(tin, int) else None,
                    output_tokens=int(tout) if isinstance(tout, int) else None,
                    attempts=attempt + 1,
                )
            except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
                raise LLMError(
                    f"the LLM provider's reply has an unexpected shape: {exc!r}"
                ) from exc
        raise LLMError(
            f"the LLM provider did not answer after {s.max_retries + 1} attempts ({last})",
            attempts=s.max_retries + 1,
        )

    def close(self) -> None:
        self._http.close()
