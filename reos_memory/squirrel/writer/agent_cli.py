"""The Memory Writer through the coding agent the user already has: `claude -p` or `codex exec`.

The prompt and the validation are the HTTP writer's (`writer/llm.py`): this module only runs the
agent's command line once per episode, bounded, and reads its answer. It has the face of
`LLMClient` (`settings.provider`, `settings.model`, `complete_full`), so the service keeps one
path for every LLM writer: the input cap, the daily token budget, the concurrency slots, the call
record and the op schema.

Facts relied on (Claude Code CLI reference and headless docs; codex-rs `exec/src/cli.rs` and
`exec/src/exec_events.rs`):

* `claude -p` reads the prompt from stdin when none is given. `--output-format json` prints one
  object: `type: "result"`, `subtype` (`success`, `error_max_turns`, `error_during_execution`),
  `is_error`, `result` (the reply text; missing on some errors), `session_id`, `total_cost_usd`,
  `usage` {`input_tokens`, `output_tokens`, `cache_creation_input_tokens`,
  `cache_read_input_tokens`} and, in 2.x, `modelUsage` per model (`inputTokens`, `outputTokens`,
  `cacheReadInputTokens`, `cacheCreationInputTokens`). `--system-prompt` replaces the default
  system prompt (`--append-system-prompt` only adds to it, in every version); `--tools ""` turns
  every built-in tool off (`--allowedTools` is not an allow-list: it only pre-approves);
  `--no-session-persistence` writes no transcript; `--strict-mcp-config` without `--mcp-config`
  starts no MCP server; `--settings` takes JSON (`disableAllHooks`); `--max-turns` bounds the
  agent loop; `CLAUDE_CODE_MAX_OUTPUT_TOKENS` caps the reply. A `claude` started with
  `CLAUDECODE` in its environment (any Claude Code session's children have it) refuses to run.
  `--bare` is not used: it skips OAuth and keychain credentials, which subscription users need.
* `codex exec` reads the prompt from stdin when none is given; `--json` prints JSONL events:
  `thread.started` {thread_id}, `turn.started`, `item.started|updated|completed` {item: {id,
  type: agent_message|reasoning|command_execution|..., text}}, `turn.completed` {usage:
  {input_tokens, cached_input_tokens (a part of input_tokens), output_tokens}}, `turn.failed`
  {error: {message}}, `error` {message}. `--skip-git-repo-check`, `--sandbox read-only`,
  `-m MODEL`, and in newer builds `--ephemeral` (no rollout file).

Which optional flags a build knows is read once from its `--help`; an older build gets the ones
it has (and its transcripts, if it writes any, are recognised by their working directory and
never ingested: see `markers.is_writer_run_dir`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from typing import Any, Literal

from reos_memory.llm import Completion, LLMError
from reos_memory.squirrel.markers import WRITER_RUN_DIR_PREFIX, WRITER_RUN_ENV

AgentName = Literal["claude-code", "codex"]
EXECUTABLES: dict[str, str] = {"claude-code": "claude", "codex": "codex"}
DEFAULT_MODELS: dict[str, str] = {"claude-code": "haiku", "codex": ""}  # codex: its own default

RUN_DIR_PREFIX = WRITER_RUN_DIR_PREFIX
RUN_ENV = WRITER_RUN_ENV

MAX_OUTPUT_BYTES = 1 << 20  # a reply is a few KiB; a CLI printing more is stopped
STDERR_TAIL = 4096  # bytes of stderr kept for the error message
HELP_TIMEOUT_S = 20.0
ARG_MAX_SYSTEM = 100_000  # a system prompt longer than this goes on stdin (one argv string <128K)

# Only these reach the child: what any program needs, and each CLI's own credentials and
# endpoints. Nothing of ours (REOS_MEMORY_*, the HTTP writer's key) and no Claude Code session
# markers (CLAUDECODE, CLAUDE_CODE_ENTRYPOINT, ...).
_BASE_ENV = frozenset(
    {
        "PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "TZ",
        "TMPDIR", "TEMP", "TMP", "SHELL", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME",
        "XDG_STATE_HOME", "XDG_RUNTIME_DIR", "HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY",
        "ALL_PROXY", "https_proxy", "http_proxy", "no_proxy", "all_proxy", "SSL_CERT_FILE",
        "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS", "SYSTEMROOT", "USERPROFILE", "APPDATA",
        "LOCALAPPDATA",
    }
)  # fmt: skip
_AGENT_ENV: dict[str, frozenset[str]] = {
    "claude-code": frozenset(
        {
            "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL",
            "ANTHROPIC_CUSTOM_HEADERS", "ANTHROPIC_MODEL", "ANTHROPIC_SMALL_FAST_MODEL",
            "ANTHROPIC_DEFAULT_HAIKU_MODEL", "ANTHROPIC_DEFAULT_SONNET_MODEL",
            "ANTHROPIC_DEFAULT_OPUS_MODEL", "ANTHROPIC_VERTEX_PROJECT_ID",
            "CLAUDE_CONFIG_DIR", "CLAUDE_CODE_OAUTH_TOKEN", "CLAUDE_CODE_USE_BEDROCK",
            "CLAUDE_CODE_USE_VERTEX", "CLOUD_ML_REGION", "GOOGLE_APPLICATION_CREDENTIALS",
            "AWS_PROFILE", "AWS_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
            "AWS_SESSION_TOKEN", "AWS_BEARER_TOKEN_BEDROCK",
        }
    ),
    "codex": frozenset(
        {
            "CODEX_HOME", "CODEX_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL",
            "OPENAI_ORGANIZATION", "OPENAI_PROJECT", "AZURE_OPENAI_API_KEY",
        }
    ),
}  # fmt: skip

# tools to refuse by name when a claude build has no `--tools` (its built-ins of 1.x and 2.x)
_CLAUDE_TOOLS = (
    "Bash BashOutput KillShell Edit MultiEdit Write NotebookEdit NotebookRead Read Glob Grep LS "
    "WebFetch WebSearch Task TodoWrite ExitPlanMode SlashCommand Skill"
)


@dataclass(frozen=True)
class CLISettings:
    """How to run the agent's CLI as the Memory Writer."""

    provider: AgentName  # the writer's name in status and call records
    path: str = ""  # the executable; empty: `claude` / `codex` on PATH
    model: str = ""  # empty: DEFAULT_MODELS
    timeout_s: float = 120.0
    max_output_bytes: int = MAX_OUTPUT_BYTES

    @property
    def executable(self) -> str:
        return self.path or EXECUTABLES[self.provider]

    @property
    def effective_model(self) -> str:
        return self.model or DEFAULT_MODELS[self.provider]


def child_env(agent: str, source: dict[str, str] | None = None) -> dict[str, str]:
    """The environment a writer run gets: the minimum, its CLI's credentials, our guard."""
    src = os.environ if source is None else source
    keep = _BASE_ENV | _AGENT_ENV[agent]
    env = {k: v for k, v in src.items() if k in keep}
    env[RUN_ENV] = "1"
    return env


@dataclass
class RunResult:
    """What one run of the CLI left: its exit status and the bytes it printed (capped)."""

    returncode: int | None
    stdout: bytes
    stderr_tail: bytes
    timed_out: bool = False
    overflow: bool = False


def run_bounded(
    argv: list[str],
    stdin: bytes,
    *,
    env: dict[str, str],
    cwd: str,
    timeout_s: float,
    max_stdout: int,
) -> RunResult:
    """Run `argv` in its own process group; the whole group is killed on timeout, on too much
    output, and once the leader has exited (nothing it started is left running)."""
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=cwd,
            start_new_session=True,  # its own group: killpg reaches its children too
            close_fds=True,
        )
    except OSError as exc:
        raise LLMError(f"cannot start {argv[0]}: {exc.strerror or exc}") from None
    run = _Pipes(proc, stdin, max_stdout)
    threads = [
        threading.Thread(target=f, name=f"writer-cli-{f.__name__}", daemon=True)
        for f in (run.feed, run.read_out, run.read_err, run.wait_leader)
    ]
    for t in threads:
        t.start()
    timed_out = not run.wake.wait(timeout_s)
    if timed_out or run.overflow.is_set():
        _kill_group(proc.pid, signal.SIGTERM)
        if not run.exited.wait(1.0):
            _kill_group(proc.pid, signal.SIGKILL)
    # whatever the leader left behind in its group goes with it
    _kill_group(proc.pid, signal.SIGKILL)
    proc.wait()
    for t in threads[:3]:
        t.join(5)
    run.close()
    return RunResult(
        returncode=proc.returncode,
        stdout=bytes(run.out),
        stderr_tail=bytes(run.err[-STDERR_TAIL:]),
        timed_out=timed_out,
        overflow=run.overflow.is_set(),
    )


class _Pipes:
    """The pipes of a running process, each served by its own thread (one method each): its
    input written, its output kept up to max_stdout, the tail of its stderr, its leader's exit."""

    def __init__(self, proc: subprocess.Popen[bytes], stdin: bytes, max_stdout: int) -> None:
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        self.proc = proc
        self.stdin, self.max_stdout = stdin, max_stdout
        self.stdin_pipe, self.stdout_pipe, self.stderr_pipe = proc.stdin, proc.stdout, proc.stderr
        self.out = bytearray()
        self.err = bytearray()
        self.overflow = threading.Event()
        self.exited = threading.Event()  # the leader has exited
        self.wake = threading.Event()  # it exited, or printed too much

    def feed(self) -> None:
        with contextlib.suppress(OSError):  # it may exit without reading everything
            self.stdin_pipe.write(self.stdin)
        with contextlib.suppress(OSError):
            self.stdin_pipe.close()

    def read_out(self) -> None:
        while True:
            chunk = os.read(self.stdout_pipe.fileno(), 65536)
            if not chunk:
                return
            if len(self.out) + len(chunk) > self.max_stdout:
                self.overflow.set()
                self.wake.set()  # the waiter kills the group
                return
            self.out.extend(chunk)

    def read_err(self) -> None:
        err = self.err
        while True:
            chunk = os.read(self.stderr_pipe.fileno(), 65536)
            if not chunk:
                return
            err.extend(chunk)
            if len(err) > 2 * STDERR_TAIL:
                del err[: len(err) - STDERR_TAIL]

    def wait_leader(self) -> None:
        # the leader's exit, without reaping it: while it is a zombie its pid (the group id)
        # cannot be reused, so the group can still be killed safely (os.waitid: Linux, and
        # macOS from Python 3.13; elsewhere the leader is reaped first)
        waitid = getattr(os, "waitid", None)
        with contextlib.suppress(ChildProcessError, OSError):
            if waitid is not None:
                waitid(os.P_PID, self.proc.pid, os.WEXITED | os.WNOWAIT)
            else:
                self.proc.wait()
        self.exited.set()
        self.wake.set()

    def close(self) -> None:
        for pipe in (self.stdout_pipe, self.stderr_pipe):
            with contextlib.suppress(OSError):
                pipe.close()


def _kill_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


class AgentCLIClient:
    """The writer's LLM client when the model is reached through `claude -p` or `codex exec`."""

    def __init__(self, settings: CLISettings) -> None:
        if settings.provider not in EXECUTABLES:
            raise LLMError(f"unknown agent CLI {settings.provider!r}")
        # the model it asks for, as the call records show it
        self.settings = dataclasses.replace(settings, model=settings.effective_model)
        self.calls = 0
        self._flags: dict[str, frozenset[str]] = {}
        self._lock = threading.Lock()

    # -- what the status shows -------------------------------------------------------------

    def found(self) -> str | None:
        """The executable's full path, or None when it is not on PATH (or not executable)."""
        exe = self.settings.executable
        if os.sep in exe or (os.altsep and os.altsep in exe):
            exe = os.path.abspath(os.path.expanduser(exe))  # the run's cwd is elsewhere
            return exe if os.path.isfile(exe) and os.access(exe, os.X_OK) else None
        return shutil.which(exe)

    def describe(self) -> dict[str, Any]:
        """The set-up as `squirrel/status` shows it (never an environment value)."""
        s = self.settings
        return {
            "provider": s.provider,
            "model": s.effective_model or "(the CLI's default)",
            "executable": s.executable,
            "executable_found": self.found(),
            "timeout_s": s.timeout_s,
        }

    # -- one call --------------------------------------------------------------------------

    def complete_full(
        self, system: str, user: str, *, json_mode: bool = True, max_tokens: int | None = None
    ) -> Completion:
        """One run of the CLI; raises LLMError naming what went wrong (never retried here: a
        failed episode stays for `squirrel/episodes/retry`)."""
        exe = self.found()
        if exe is None:
            raise LLMError(
                f"the {self.settings.provider} writer needs `{self.settings.executable}`,"
                " which is not on PATH (set writer_cli_path, or another writer)"
            )
        self.calls += 1
        rundir = tempfile.mkdtemp(prefix=RUN_DIR_PREFIX)
        try:
            env = child_env(self.settings.provider)
            flags = self._known_flags(exe, env, rundir)
            if self.settings.provider == "claude-code":
                if max_tokens:
                    env["CLAUDE_CODE_MAX_OUTPUT_TOKENS"] = str(max_tokens)
                argv, stdin = self._claude_argv(exe, flags, system, user)
            else:
                argv, stdin = self._codex_argv(exe, flags, system, user)
            res = run_bounded(
                argv,
                stdin.encode(),
                env=env,
                cwd=rundir,
                timeout_s=self.settings.timeout_s,
                max_stdout=self.settings.max_output_bytes,
            )
        finally:
            shutil.rmtree(rundir, ignore_errors=True)
        name = os.path.basename(argv[0])
        if res.timed_out:
            raise LLMError(
                f"{name} did not answer within writer_cli_timeout_s={self.settings.timeout_s:g}"
                " (its processes were ended)"
            )
        if res.overflow:
            raise LLMError(
                f"{name} printed more than {self.settings.max_output_bytes} bytes (stopped)"
            )
        if self.settings.provider == "claude-code":
            return parse_claude(res, name)
        return parse_codex(res, name)

    def _known_flags(self, exe: str, env: dict[str, str], cwd: str) -> frozenset[str]:
        """The options this build's `--help` lists (read once per executable and version)."""
        try:
            st = os.stat(exe)
            key = f"{exe}:{st.st_mtime_ns}:{st.st_size}"
        except OSError:
            key = exe
        with self._lock:
            if key in self._flags:
                return self._flags[key]
        argv = (
            [exe, "--help"] if self.settings.provider == "claude-code" else [exe, "exec", "--help"]
        )
        try:
            res = run_bounded(
                argv, b"", env=env, cwd=cwd, timeout_s=HELP_TIMEOUT_S, max_stdout=1 << 18
            )
        except LLMError:
            return frozenset()  # the run itself will say what is wrong
        flags = frozenset(
            re.findall(r"(?<![\w-])--[a-zA-Z][\w-]*", res.stdout.decode("utf-8", "replace"))
        )
        if res.returncode == 0 and not res.timed_out:  # a failed probe is tried again next time
            with self._lock:
                self._flags[key] = flags
        return flags

    def _claude_argv(
        self, exe: str, flags: frozenset[str], system: str, user: str
    ) -> tuple[list[str], str]:
        argv = [exe, "-p", "--output-format", "json", "--max-turns", "1"]
        model = self.settings.effective_model
        if model:
            argv += ["--model", model]
        if len(system) > ARG_MAX_SYSTEM:
            user = f"{system}\n\n{user}"  # too long for one argument: it leads the prompt
        elif "--system-prompt" in flags:
            argv += ["--system-prompt", system]
        else:
            argv += ["--append-system-prompt", system]
        if "--tools" in flags:
            argv += ["--tools", ""]
        else:
            argv += ["--disallowedTools", _CLAUDE_TOOLS]
        if "--no-session-persistence" in flags:
            argv.append("--no-session-persistence")
        if "--strict-mcp-config" in flags:
            argv.append("--strict-mcp-config")
        if "--settings" in flags:
            argv += ["--settings", json.dumps({"disableAllHooks": True})]
        return argv, user

    def _codex_argv(
        self, exe: str, flags: frozenset[str], system: str, user: str
    ) -> tuple[list[str], str]:
        argv = [exe, "exec", "--json", "--skip-git-repo-check", "--sandbox", "read-only"]
        if "--color" in flags:
            argv += ["--color", "never"]
        if "--ephemeral" in flags:
            argv.append("--ephemeral")
        model = self.settings.effective_model
        if model:
            argv += ["--model", model]
        # codex exec has no system-prompt option: the instructions lead the prompt
        prompt = f"<instructions>\n{system}\n</instructions>\n\n{user}"
        return argv, prompt

    def close(self) -> None:
        """Nothing stays open between calls."""


def _tail(res: RunResult) -> str:
    from reos_memory.squirrel.redaction import redact

    text = res.stderr_tail.decode("utf-8", "replace").strip()
    text = " ".join(text.split())[-600:]
    return redact(text) if text else "(nothing on stderr)"


def _int(v: Any) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else 0


def parse_claude(res: RunResult, name: str = "claude") -> Completion:
    """The reply and tokens of a `claude -p --output-format json` run."""
    data = _result_object(res.stdout)
    if data is None:
        if res.returncode:
            raise LLMError(f"{name} exited with status {res.returncode}: {_tail(res)}")
        raise LLMError(f"{name} did not print its JSON result (--output-format json)")
    text = data.get("result")
    if data.get("is_error") or data.get("subtype", "success") != "success":
        why = text if isinstance(text, str) and text else data.get("errors") or "no detail"
        from reos_memory.squirrel.redaction import redact

        raise LLMError(
            f"{name} reported an error ({data.get('subtype') or 'error'}): {redact(str(why))[:600]}"
        )
    if not isinstance(text, str):
        raise LLMError(f"{name}'s result has no text")
    usage: dict[str, Any] = data["usage"] if isinstance(data.get("usage"), dict) else {}
    tin = sum(
        _int(usage.get(k))
        for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    )
    tout = _int(usage.get("output_tokens"))
    per_model = data.get("modelUsage")
    if isinstance(per_model, dict):  # every model the run used (2.x), when it says more
        m_in = m_out = 0
        for u in per_model.values():
            if isinstance(u, dict):
                m_in += sum(
                    _int(u.get(k))
                    for k in ("inputTokens", "cacheCreationInputTokens", "cacheReadInputTokens")
                )
                m_out += _int(u.get("outputTokens"))
        tin, tout = max(tin, m_in), max(tout, m_out)
    has_usage = bool(usage) or isinstance(per_model, dict)
    return Completion(
        text=text,
        input_tokens=tin if has_usage else None,
        output_tokens=tout if has_usage else None,
        attempts=1,
    )


def _result_object(stdout: bytes) -> dict[str, Any] | None:
    """The `type: result` object of the output: the whole output, else its last such line."""
    text = stdout.decode("utf-8", "replace").strip()
    if not text:
        return None
    candidates = [text, *reversed(text.splitlines())]
    for c in candidates:
        c = c.strip()
        if not c.startswith("{"):
            continue
        try:
            obj = json.loads(c)
        except ValueError:
            continue
        if isinstance(obj, dict) and obj.get("type") == "result":
            return obj
    return None


def parse_codex(res: RunResult, name: str = "codex") -> Completion:
    """The last agent message and the tokens of a `codex exec --json` run."""
    message: str | None = None
    failure: str | None = None
    tin = tout = 0
    turns = 0
    for line in res.stdout.decode("utf-8", "replace").splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        if not isinstance(ev, dict):
            continue
        kind = ev.get("type")
        if kind == "item.completed":
            item = ev.get("item")
            if (
                isinstance(item, dict)
                and item.get("type") == "agent_message"
                and isinstance(item.get("text"), str)
            ):
                message = item["text"]
        elif kind == "turn.completed":
            turns += 1
            usage: dict[str, Any] = ev["usage"] if isinstance(ev.get("usage"), dict) else {}
            tin += _int(usage.get("input_tokens"))
            tout += _int(usage.get("output_tokens"))
        elif kind == "turn.failed":
            err = ev.get("error")
            failure = str(err.get("message") if isinstance(err, dict) else err)
        elif kind == "error":
            failure = str(ev.get("message"))
    if failure is not None and message is None:
        from reos_memory.squirrel.redaction import redact

        raise LLMError(f"{name} reported an error: {redact(failure)[:600]}")
    if message is None:
        if res.returncode:
            raise LLMError(f"{name} exited with status {res.returncode}: {_tail(res)}")
        raise LLMError(f"{name} gave no agent message (--json events)")
    return Completion(
        text=message,
        input_tokens=tin if turns else None,
        output_tokens=tout if turns else None,
        attempts=1,
    )
