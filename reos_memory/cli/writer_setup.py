"""`sqrl hooks install --writer claude-code|codex`: what the agent-CLI Memory Writer will cost,
said before it is switched on, and the setting written into the user's config file."""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from reos_memory.config import Config, default_config_path, set_setting

HISTORY_DAYS = 14
ASSUMED_EPISODES_PER_DAY = 10  # when the database has no history yet


@dataclass(frozen=True)
class Estimate:
    """The most one episode's call may cost and how many such episodes a day to expect."""

    writer: str
    command: str
    executable_found: str | None
    tokens_per_episode: int  # input cap + output cap
    episodes_per_day: float
    from_history: bool
    active_days: int
    daily_cap: int

    @property
    def tokens_per_day(self) -> int:
        return round(self.tokens_per_episode * self.episodes_per_day)

    @property
    def episodes_under_cap(self) -> int:
        return self.daily_cap // max(1, self.tokens_per_episode)


def config_file(config_arg: str | None) -> Path:
    """The file the writer setting goes into: `--config`, `$REOS_MEMORY_CONFIG`, else the
    default `config.toml` (read by every command when it exists)."""
    named = config_arg or os.environ.get("REOS_MEMORY_CONFIG")
    return Path(named).expanduser().resolve() if named else default_config_path()


def estimate(config: Config, writer: str) -> Estimate:
    """The cost of `writer` at the configured caps, from this database's recent episodes."""
    from reos_memory.squirrel.writer.agent_cli import AgentCLIClient, CLISettings

    client = AgentCLIClient(
        CLISettings(
            provider=writer,  # type: ignore[arg-type]
            path=config.writer_cli_path,
            model=config.writer_cli_model,
            timeout_s=config.writer_cli_timeout_s,
        )
    )
    s = client.settings
    model = s.effective_model
    if writer == "claude-code":
        command = f"claude -p --model {model}"
    else:
        command = "codex exec" + (f" --model {model}" if model else "")
    by_day = _history(config)
    days = len(by_day)
    per_day = sum(by_day.values()) / days if days else float(ASSUMED_EPISODES_PER_DAY)
    return Estimate(
        writer=writer,
        command=command,
        executable_found=client.found(),
        tokens_per_episode=config.writer_max_input_tokens + config.writer_max_output_tokens,
        episodes_per_day=per_day,
        from_history=bool(days),
        active_days=days,
        daily_cap=config.writer_daily_token_budget,
    )


def _history(config: Config) -> dict[str, int]:
    """Writer-worthy episodes per active day over the last two weeks (none without a database)."""
    if config.db == ":memory:" or not os.path.exists(config.db):
        return {}
    from reos_memory.store import Database
    from reos_memory.store import writer_calls as call_sql

    since = (datetime.now(UTC) - timedelta(days=HISTORY_DAYS)).strftime("%Y-%m-%d")
    db = Database(config.db)
    try:
        return db.read(lambda c: call_sql.writer_episodes_by_day(c, since))
    except Exception:  # an old or foreign file: no history to go by
        return {}
    finally:
        db.close()


def describe(est: Estimate) -> str:
    """What the user is told before the writer is switched on."""
    found = (
        f"found at {est.executable_found}"
        if est.executable_found
        else "NOT found on PATH: install it or set writer_cli_path"
    )
    if est.from_history:
        seen = (
            f"this database saw {est.episodes_per_day:.1f} episodes worth a writer call per"
            f" active day ({est.active_days} active days in the last {HISTORY_DAYS})"
        )
    else:
        seen = (
            f"no episodes in this database yet; at {ASSUMED_EPISODES_PER_DAY} episodes worth a"
            " writer call a day"
        )
    account = (
        "a Claude subscription counts them against its usage limits; an API key is billed"
        " for them (claude reports total_cost_usd per run)"
        if est.writer == "claude-code"
        else "a ChatGPT plan counts them against its usage limits; an API key is billed for them"
    )
    return (
        f"Memory Writer: `{est.command}` ({found}), one run per episode worth learning from.\n"
        f"Cost: at most {est.tokens_per_episode:,} tokens per episode (writer_max_input_tokens"
        f" + writer_max_output_tokens; the CLI adds its own few hundred); {seen}, that is about"
        f" {est.tokens_per_day:,} tokens a day.\n"
        f"Cap: writer_daily_token_budget = {est.daily_cap:,} tokens a day (about"
        f" {est.episodes_under_cap:,} episodes at the caps); past it episodes wait for the next"
        f" day. {account[0].upper() + account[1:]}.\n"
    )


def switch_on(config_arg: str | None, writer: str) -> Path:
    """Write `writer = ...` into the user's config file; returns the file."""
    path = config_file(config_arg)
    set_setting(path, "writer", writer)
    return path
