"""Configuration: defaults < config file (TOML) < environment < command line.

The config file is `--config FILE`, else `$REOS_MEMORY_CONFIG`, else `config.toml` in the home
directory when it exists (`sqrl hooks install --writer` writes the writer setting there)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta

ENV_PREFIX = "REOS_MEMORY_"


def default_home() -> Path:
    """$REOS_MEMORY_HOME, else the platform's user data dir (XDG on Linux)."""
    home = os.environ.get(ENV_PREFIX + "HOME")
    if home:
        return Path(home).expanduser()
    import platformdirs

    return Path(platformdirs.user_data_dir("reos-memory", appauthor=False))


def default_db_path() -> str:
    return str(default_home() / "memory.db")


def default_config_path() -> Path:
    """The user's config file, read when no other is named: `$REOS_MEMORY_HOME/config.toml`."""
    return default_home() / "config.toml"


def default_model_dir() -> str:
    """Where `reos-memory model prepare` writes the ONNX export."""
    return str(default_home() / "models" / "all-MiniLM-L6-v2-onnx")


class Config(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Every setting of the service. Documented in the README's Configuration section."""

    db: str = ""
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    max_message_bytes: Annotated[int, Meta(ge=1024, le=1 << 30)] = 16 * 1024 * 1024
    max_batch_items: Annotated[int, Meta(ge=1, le=1_000_000)] = 1000
    max_result_bytes: Annotated[int, Meta(ge=1024, le=1 << 32)] = 64 * 1024 * 1024
    busy_timeout_ms: Annotated[int, Meta(ge=1, le=600_000)] = 5000
    lock_wait_s: Annotated[float, Meta(gt=0, le=3600)] = 60.0
    synchronous: Literal["OFF", "NORMAL", "FULL", "EXTRA"] = "NORMAL"
    cache_kib: Annotated[int, Meta(ge=512, le=4 << 20)] = 4096
    read_threads: Annotated[int, Meta(ge=1, le=64)] = 4
    heavy_threads: Annotated[int, Meta(ge=1, le=16)] = 2
    parent_watch_s: Annotated[float, Meta(ge=0, le=3600)] = 1.0
    embedder: Literal["onnx", "sentence-transformers", "hash", "none"] = "onnx"
    model_dir: str = ""
    onnx_threads: Annotated[int, Meta(ge=0, le=64)] = 0
    hash_dimensions: Annotated[int, Meta(ge=16, le=4096)] = 384
    vector_search: Literal["memory", "sqlite"] = "memory"
    vector_flat_max: Annotated[int, Meta(ge=0, le=100_000_000)] = 50_000
    vector_lists: Annotated[int, Meta(ge=1, le=65_536)] = 1024
    vector_probe: Annotated[int, Meta(ge=1, le=65_536)] = 32
    # a memory index built from this many vectors is saved beside the database for the next process
    vector_snapshot_min: Annotated[int, Meta(ge=1, le=10**9)] = 20_000
    catch_up_indexing: bool = True
    # blocks/create and blocks/update store what the client sends unless this is on: then block
    # text and properties pass through the same secret redaction as Squirrel's events
    redact_blocks: bool = False
    documents_follow_symlinks: bool = False  # documents/insert reads through a symbolic link
    max_document_bytes: Annotated[int, Meta(ge=1, le=1 << 34)] = 256 * 1024 * 1024
    max_document_pages: Annotated[int, Meta(ge=1, le=1_000_000)] = 2000  # PDF pages, XLSX sheets
    max_document_chunks: Annotated[int, Meta(ge=1, le=10_000_000)] = 50_000
    # an MCP tool's result, in Squirrel's token count: Claude Code refuses results over 25,000
    mcp_max_result_tokens: Annotated[int, Meta(ge=1000, le=10_000_000)] = 20_000
    keyword_postings_budget: Annotated[int, Meta(ge=100, le=100_000_000)] = 5_000
    # LLM provider (off by default): used by memory/extract with use_llm, later by the Memory Writer
    llm_provider: Literal["none", "openai", "anthropic"] = "none"
    llm_base_url: str = ""
    llm_model: str = ""
    llm_api_key_env: str = ""
    llm_timeout_s: Annotated[float, Meta(gt=0, le=600)] = 30.0
    llm_max_retries: Annotated[int, Meta(ge=0, le=10)] = 2
    llm_max_output_tokens: Annotated[int, Meta(ge=16, le=32_000)] = 800
    llm_extraction: bool = False
    # Squirrel (coding-assistant memory)
    # auto: the LLM when configured, else rules; claude-code / codex: the agent's own CLI
    writer: Literal["auto", "rules", "llm", "claude-code", "codex"] = "auto"
    owner_id: Annotated[str, Meta(max_length=128)] = ""  # default owner; empty: the OS user name
    policy_file: str = ""  # user memory_policy.toml; empty: $REOS_MEMORY_HOME/memory_policy.toml
    dedup_threshold: Annotated[float, Meta(ge=0.5, le=1.0)] = 0.92
    max_episode_events: Annotated[int, Meta(ge=10, le=100_000)] = 400
    max_events_per_ingest: Annotated[int, Meta(ge=1, le=1_000_000)] = 5000
    log_retention_days: Annotated[int, Meta(ge=1, le=36_500)] = 90  # context requests, writer calls
    writer_min_tool_calls: Annotated[int, Meta(ge=1, le=10_000)] = 12
    writer_max_input_tokens: Annotated[int, Meta(ge=500, le=1_000_000)] = 6000
    writer_max_output_tokens: Annotated[int, Meta(ge=64, le=32_000)] = 1200
    writer_daily_token_budget: Annotated[int, Meta(ge=0, le=10**10)] = 1_000_000
    writer_max_concurrent_calls: Annotated[int, Meta(ge=1, le=16)] = 2
    # writer = "claude-code" | "codex": the executable (empty: on PATH), model, time per call
    writer_cli_path: str = ""
    writer_cli_model: Annotated[str, Meta(max_length=200)] = ""  # empty: haiku / codex's own
    writer_cli_timeout_s: Annotated[float, Meta(gt=0, le=3600)] = 120.0
    # Real agents: session logs, `sqrl watch` and the Claude Code hook
    session_idle_minutes: Annotated[float, Meta(gt=0, le=10_080)] = 30.0
    claude_projects_dir: str = ""  # empty: $CLAUDE_CONFIG_DIR/projects or ~/.claude/projects
    codex_sessions_dir: str = ""  # empty: $CODEX_HOME/sessions or ~/.codex/sessions
    watch_interval_s: Annotated[float, Meta(ge=0.05, le=3600)] = 2.0
    # `sqrl ingest` of at least this many MB of logs learns in a second process (0: never)
    ingest_helper_min_mb: Annotated[float, Meta(ge=0, le=1e9)] = 16.0
    hook_context_budget: Annotated[int, Meta(ge=16, le=100_000)] = 400  # SessionStart
    hook_prompt_budget: Annotated[int, Meta(ge=16, le=100_000)] = 200  # UserPromptSubmit
    # the hook's warm service exits after this many idle seconds (0: none, each call in-process)
    hook_service_idle_s: Annotated[float, Meta(ge=0, le=86_400)] = 300.0
    # A team server (issue 21): team and org memories pulled into a local cache, team writes
    # sent through an outbox. Empty URL: none. The API key comes from the environment variable
    # NAMED by team_api_key_env, or from team_api_key_file (owner-only, mode 0600); it is never
    # stored in this file, the database or a log.
    team_server_url: Annotated[str, Meta(max_length=2000)] = ""
    team_api_key_env: Annotated[str, Meta(max_length=200)] = "REOS_TEAM_API_KEY"
    team_api_key_file: str = ""
    team_pull_interval_s: Annotated[float, Meta(ge=0, le=86_400)] = 60.0
    team_context_timeout_s: Annotated[float, Meta(gt=0, le=60)] = 1.0  # get_task_context's wait
    team_connect_timeout_s: Annotated[float, Meta(gt=0, le=300)] = 3.0
    team_timeout_s: Annotated[float, Meta(gt=0, le=3600)] = 15.0  # one reply
    team_max_retries: Annotated[int, Meta(ge=0, le=10)] = 2  # on 503 / 429, after Retry-After
    # Send each episode cut here that is worth a writer call (already redacted) to the team
    # server's Memory Writer, which learns team memories from it. Off unless the user turns it
    # on: it puts what they did in their sessions on a server their teammates read from.
    team_share_episodes: bool = False


_ENV_FIELDS = {f.name for f in msgspec.structs.fields(Config)}


class ConfigError(Exception):
    pass


def load_config(config_file: str | None = None, overrides: dict[str, Any] | None = None) -> Config:
    """Merge the sources in order and validate the result (errors name the setting)."""
    merged: dict[str, Any] = {}
    path = config_file or os.environ.get(ENV_PREFIX + "CONFIG")
    if not path and default_config_path().is_file():
        path = str(default_config_path())
    if path:
        try:
            raw = msgspec.toml.decode(Path(path).read_bytes())
        except (OSError, msgspec.DecodeError) as exc:
            raise ConfigError(f"cannot read config file {path}: {exc}") from exc
        merged.update(raw.get("server", raw) if isinstance(raw, dict) else {})
    for name in _ENV_FIELDS:
        val = os.environ.get(ENV_PREFIX + name.upper())
        if val is not None and name != "db":
            merged[name] = val
    if os.environ.get(ENV_PREFIX + "DB"):
        merged["db"] = os.environ[ENV_PREFIX + "DB"]
    merged.update({k: v for k, v in (overrides or {}).items() if v is not None})
    try:
        cfg = msgspec.convert(merged, Config, strict=False)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"invalid configuration: {exc}") from exc
    if not cfg.db:
        cfg.db = default_db_path()
    if not cfg.model_dir:
        cfg.model_dir = default_model_dir()
    if not cfg.policy_file:
        cfg.policy_file = str(default_home() / "memory_policy.toml")
    cfg.db = str(Path(cfg.db).expanduser()) if cfg.db != ":memory:" else cfg.db
    if not cfg.claude_projects_dir:
        claude = os.environ.get("CLAUDE_CONFIG_DIR") or str(Path.home() / ".claude")
        cfg.claude_projects_dir = str(Path(claude).expanduser() / "projects")
    if not cfg.codex_sessions_dir:
        codex = os.environ.get("CODEX_HOME") or str(Path.home() / ".codex")
        cfg.codex_sessions_dir = str(Path(codex).expanduser() / "sessions")
    _check_team(cfg)
    return cfg


def _check_team(cfg: Config) -> None:
    """A team server URL must be http(s) without credentials in it; a key file must be private."""
    from urllib.parse import urlsplit

    if cfg.team_server_url:
        parts = urlsplit(cfg.team_server_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(
                "team_server_url must be an http:// or https:// URL such as http://127.0.0.1:8787"
            )
        if parts.username or parts.password:
            raise ConfigError(
                "team_server_url must not carry credentials: put the API key in the variable"
                " named by team_api_key_env or in team_api_key_file"
            )
    if cfg.team_api_key_file:
        cfg.team_api_key_file = str(Path(cfg.team_api_key_file).expanduser())
        team_api_key(cfg)  # refused now, not at the first sync


def team_api_key(cfg: Config) -> str | None:
    """The team server's API key: from `team_api_key_file` (refused unless only its owner may
    read it: mode 0600) or else the environment variable named by `team_api_key_env`."""
    if cfg.team_api_key_file:
        path = Path(cfg.team_api_key_file)
        try:
            mode = path.stat().st_mode & 0o777
            if mode & 0o077:
                raise ConfigError(
                    f"team_api_key_file {path} has mode {mode:04o}: it holds a secret, so only"
                    f" its owner may read it (chmod 600 {path})"
                )
            key = path.read_text("utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read team_api_key_file {path}: {exc}") from exc
        return key or None
    return os.environ.get(cfg.team_api_key_env, "").strip() or None


def set_setting(path: str | Path, key: str, value: str) -> None:
    """Write `key = "value"` into a config file (created if missing), where `load_config` reads
    it (the `[server]` table when the file has one), keeping every other line; the result is
    validated before it replaces the file."""
    if key not in _ENV_FIELDS:
        raise ConfigError(f"unknown setting {key!r}")
    target = Path(path).expanduser()
    try:
        text = target.read_text("utf-8") if target.exists() else ""
        raw = msgspec.toml.decode(text.encode()) if text else {}
    except (OSError, UnicodeDecodeError, msgspec.DecodeError) as exc:
        raise ConfigError(f"cannot read config file {target}: {exc}") from exc
    line = f"{key} = {msgspec.json.encode(value).decode()}"  # a JSON string is a TOML string
    lines = text.splitlines()
    header = re.compile(r"^\s*\[")
    if isinstance(raw, dict) and isinstance(raw.get("server"), dict):
        start = next(i for i, ln in enumerate(lines) if re.match(r"^\s*\[\s*server\s*\]", ln))
        end = next((i for i in range(start + 1, len(lines)) if header.match(lines[i])), len(lines))
        insert_at = start + 1
    else:
        start, end = -1, next((i for i, ln in enumerate(lines) if header.match(ln)), len(lines))
        insert_at = end
    mine = re.compile(rf"^\s*{re.escape(key)}\s*=")
    at = next((i for i in range(start + 1, end) if mine.match(lines[i])), None)
    if at is not None:
        lines[at] = line
    else:
        lines.insert(insert_at, line)
    new = "\n".join(lines) + "\n"
    try:
        check = msgspec.toml.decode(new.encode())
        section = check.get("server", check) if isinstance(check, dict) else {}
        msgspec.convert({key: section.get(key)}, Config, strict=False)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise ConfigError(f"{target}: {key} = {value!r} would not be valid: {exc}") from exc
    if section.get(key) != value:
        raise ConfigError(f"{target}: {key} could not be set (edit the file by hand)")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    tmp.write_text(new, "utf-8")
    if target.exists():
        os.chmod(tmp, target.stat().st_mode & 0o7777)
    os.replace(tmp, target)
