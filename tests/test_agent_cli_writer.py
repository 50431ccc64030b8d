"""The Memory Writer through the agent's own CLI (`writer = "claude-code" | "codex"`), against
fake `claude` / `codex` executables that speak their documented output formats: good answers,
errors, garbage, a flood, a hang; bounded, never recursive, nothing lost."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from harness.agent_homes import ClaudeSession, CodexSession
from harness.commands import agent_env, sqrl
from harness.rpc_client import ROOT, Server
from reos_memory.llm import LLMError
from reos_memory.squirrel.writer import agent_cli
from reos_memory.squirrel.writer.agent_cli import AgentCLIClient, CLISettings
from tests.fake_llm import failing_episode, settle

FAKES = Path(__file__).resolve().parent / "fakes"
EXE = {"claude-code": "claude", "codex": "codex"}


def make_fake(
    bin_dir: Path, agent: str, behaviour: str = "good", record: Path | None = None
) -> Path:
    """An executable named `claude` or `codex` in `bin_dir` that behaves as asked."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    path = bin_dir / EXE[agent]
    path.write_text(
        f"#!{sys.executable}\n"
        "import sys\n"
        f"sys.path.insert(0, {str(FAKES)!r})\n"
        "from fake_agent import main\n"
        f"main({agent!r}, {behaviour!r}, {str(record) if record else None!r})\n"
    )
    path.chmod(0o755)
    return path


def repo(tmp_path: Path) -> Path:
    p = tmp_path / "repo"
    (p / ".git").mkdir(parents=True, exist_ok=True)
    return p


def writer_env(agent: str, bin_dir: Path, **extra: str) -> dict[str, str]:
    """A server environment with the CLI writer on PATH, and everything a Claude Code session
    (and our own config) would put there that must never reach the child."""
    return {
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "REOS_MEMORY_WRITER": agent,
        "REOS_MEMORY_WRITER_MAX_CONCURRENT_CALLS": "1",
        "CLAUDECODE": "1",
        "CLAUDE_CODE_ENTRYPOINT": "cli",
        "REOS_MEMORY_LLM_API_KEY_ENV": "MY_WRITER_KEY",
        "MY_WRITER_KEY": "sk-our-own-secret-0000000000000000",
        "ANTHROPIC_API_KEY": "sk-ant-for-claude-itself",
        "OPENAI_API_KEY": "sk-for-codex-itself",
        **extra,
    }


def ingest(srv: Server, root: Path, sid: str, tag: str = "") -> str:
    r = srv.call(
        "squirrel/ingest",
        {
            "project_root": str(root),
            "session_id": sid,
            "events": failing_episode(tag),
            "session_end": True,
        },
    )
    assert r["episodes"][0]["outcome"] == "queued"
    return r["episodes"][0]["episode_id"]


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


# -- over real stdio: the writer learns, the child sees only what it should ----------------------


@pytest.mark.e2e
def test_claude_code_writer_learns_and_the_child_gets_a_clean_run(tmp_path: Path) -> None:
    root = repo(tmp_path)
    rec = tmp_path / "argv.jsonl"
    make_fake(tmp_path / "bin", "claude-code", "good", rec)
    with Server(tmp_path / "m.db", env=writer_env("claude-code", tmp_path / "bin")) as srv:
        srv.wait_ready()
        eid = ingest(srv, root, "s1")
        [ep] = settle(srv, str(root))
        assert ep["outcome"] == "written", ep["outcome_reason"]
        got = srv.call("squirrel/episodes/get", {"episode_id": eid})["episode"]
        assert got["ops"][0]["action"] == "added"
        mems = srv.call("squirrel/memories/list", {"project_root": str(root)})["memories"]
        assert [m["text"] for m in mems] == ["The user asked: run the test suite"]
        status = srv.call("squirrel/status")
        assert status["writer"] == "claude-code"
        cfg = status["writer_config"]
        assert cfg["executable_found"] == str(tmp_path / "bin" / "claude")
        assert cfg["model"] == "haiku"
        day = status["writer_calls_by_day"][0]
        # the tokens claude reported: input + cache creation + cache reads, and its output
        assert (day["writer"], day["input_tokens"], day["output_tokens"]) == (
            "claude-code",
            1312,
            40,
        )
    [run] = records(rec)
    argv, env = run["argv"], run["env"]
    assert argv[:3] == ["-p", "--output-format", "json"]
    assert argv[argv.index("--model") + 1] == "haiku"
    assert argv[argv.index("--tools") + 1] == ""  # every tool off
    assert argv[argv.index("--max-turns") + 1] == "1"
    assert "--no-session-persistence" in argv and "--strict-mcp-config" in argv
    assert json.loads(argv[argv.index("--settings") + 1]) == {"disableAllHooks": True}
    system = argv[argv.index("--system-prompt") + 1]
    assert "Memory Writer of Squirrel" in system and "memory policy" in system
    assert json.loads(run["stdin"])["events"][0]["text"] == "run the test suite"
    # the child's environment: the minimum and claude's own credentials, nothing of ours
    assert "CLAUDECODE" not in env and "CLAUDE_CODE_ENTRYPOINT" not in env
    assert "MY_WRITER_KEY" not in env and "OPENAI_API_KEY" not in env
    assert not [k for k in env if k.startswith("REOS_MEMORY_") and k != "REOS_MEMORY_WRITER_RUN"]
    assert env["REOS_MEMORY_WRITER_RUN"] == "1" and env["ANTHROPIC_API_KEY"]
    assert env["CLAUDE_CODE_MAX_OUTPUT_TOKENS"] == "1200"
    assert "sk-our-own-secret" not in json.dumps(run)
    # it ran in a scratch directory of its own, gone afterwards
    assert Path(run["cwd"]).name.startswith("reos-memory-writer-")
    assert not Path(run["cwd"]).exists()


@pytest.mark.e2e
def test_codex_writer_learns_over_stdio(tmp_path: Path) -> None:
    root = repo(tmp_path)
    rec = tmp_path / "argv.jsonl"
    make_fake(tmp_path / "bin", "codex", "good", rec)
    env = writer_env("codex", tmp_path / "bin", REOS_MEMORY_WRITER_CLI_MODEL="gpt-5-mini")
    with Server(tmp_path / "m.db", env=env) as srv:
        srv.wait_ready()
        ingest(srv, root, "s1")
        [ep] = settle(srv, str(root))
        assert ep["outcome"] == "written", ep["outcome_reason"]
        mems = srv.call("squirrel/memories/list", {"project_root": str(root)})["memories"]
        assert [m["text"] for m in mems] == ["The user asked: run the test suite"]
        day = srv.call("squirrel/status")["writer_calls_by_day"][0]
        assert (day["writer"], day["input_tokens"], day["output_tokens"]) == ("codex", 1500, 60)
    [run] = records(rec)
    argv, env_seen = run["argv"], run["env"]
    assert argv[:2] == ["exec", "--json"]
    assert "--skip-git-repo-check" in argv and "--ephemeral" in argv
    assert argv[argv.index("--sandbox") + 1] == "read-only"
    assert argv[argv.index("--model") + 1] == "gpt-5-mini"
    assert run["stdin"].startswith("<instructions>\nYou are the Memory Writer")
    assert "CLAUDECODE" not in env_seen and "ANTHROPIC_API_KEY" not in env_seen
    assert env_seen["OPENAI_API_KEY"] and "MY_WRITER_KEY" not in env_seen


FAILURES = [
    ("claude-code", "is_error", "reported an error"),
    ("claude-code", "exit", "exited with status 2: Error: not logged in"),
    ("claude-code", "garbage", "did not print its JSON result"),
    ("claude-code", "bad_ops", "op schema"),
    ("claude-code", "huge", "printed more than"),
    ("claude-code", "sleep", "did not answer within writer_cli_timeout_s=3"),
    ("codex", "is_error", "usage limit"),
    ("codex", "exit", "exited with status 2"),
    ("codex", "garbage", "gave no agent message"),
    ("codex", "bad_ops", "op schema"),
]


@pytest.mark.e2e
@pytest.mark.parametrize(("agent", "behaviour", "reason"), FAILURES)
def test_a_failed_run_leaves_the_episode_for_retry(
    tmp_path: Path, agent: str, behaviour: str, reason: str
) -> None:
    root = repo(tmp_path)
    make_fake(tmp_path / "bin", agent, behaviour)
    env = writer_env(agent, tmp_path / "bin", REOS_MEMORY_WRITER_CLI_TIMEOUT_S="3")
    with Server(tmp_path / "m.db", env=env) as srv:
        srv.wait_ready()
        eid = ingest(srv, root, "s1")
        [ep] = settle(srv, str(root), timeout=60)
        assert ep["outcome"] == "failed" and ep["processed"] == 0
        assert reason in ep["outcome_reason"], ep["outcome_reason"]
        assert srv.call("squirrel/memories/list", {"project_root": str(root)})["memories"] == []
        # nothing is lost: once the CLI works again, a retry writes the memory
        make_fake(tmp_path / "bin", agent, "good")
        out = srv.call("squirrel/episodes/retry", {"episode_id": eid, "wait": True}, timeout=60)
        assert out["episodes"][0]["outcome"] == "written", out["episodes"][0].get("reason")
        day = srv.call("squirrel/status")["writer_calls_by_day"][0]
        assert day["calls"] == 2 and day["ok"] == 1


@pytest.mark.e2e
def test_a_missing_cli_says_so_and_the_daily_budget_holds(tmp_path: Path) -> None:
    root = repo(tmp_path)
    env = writer_env(
        "claude-code",
        tmp_path / "empty-bin",
        REOS_MEMORY_WRITER_CLI_PATH=str(tmp_path / "no" / "claude"),
    )
    with Server(tmp_path / "m.db", env=env) as srv:
        srv.wait_ready()
        ingest(srv, root, "s1")
        [ep] = settle(srv, str(root))
        assert ep["outcome"] == "failed" and "not on PATH" in ep["outcome_reason"]
        assert srv.call("squirrel/status")["writer_config"]["executable_found"] is None
    rec = tmp_path / "argv.jsonl"
    make_fake(tmp_path / "bin", "claude-code", "good", rec)
    env = writer_env("claude-code", tmp_path / "bin", REOS_MEMORY_WRITER_DAILY_TOKEN_BUDGET="100")
    with Server(tmp_path / "m2.db", env=env) as srv:
        srv.wait_ready()
        ingest(srv, root, "s1")
        deadline = time.monotonic() + 30
        while True:
            [ep] = srv.call("squirrel/episodes/list", {"project_root": str(root)})["episodes"]
            if "budget" in (ep["outcome_reason"] or "") or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert ep["outcome"] == "pending" and "daily writer token budget" in ep["outcome_reason"]
    assert not rec.exists()  # the CLI was never run


# -- the process bounds, in process ----------------------------------------------------------


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().split(b") ", 1)[1][:1] != b"Z"
    except (FileNotFoundError, IndexError):
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_timeout_ends_the_cli_and_every_process_it_started(tmp_path: Path) -> None:
    rec = tmp_path / "rec.jsonl"
    fake = make_fake(tmp_path / "bin", "claude-code", "sleep", rec)
    client = AgentCLIClient(CLISettings(provider="claude-code", path=str(fake), timeout_s=2))
    with pytest.raises(LLMError, match="did not answer within"):
        client.complete_full("system", '{"episode_id": "e"}')
    leader, child = map(int, Path(str(rec) + ".pids").read_text().split())
    deadline = time.monotonic() + 10  # the orphaned child is reaped by init
    while (_alive(leader) or _alive(child)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(leader) and not _alive(child)


def test_a_flood_of_output_is_cut_off_at_the_cap(tmp_path: Path) -> None:
    fake = make_fake(tmp_path / "bin", "claude-code", "huge")
    client = AgentCLIClient(
        CLISettings(provider="claude-code", path=str(fake), max_output_bytes=1 << 20)
    )
    with pytest.raises(LLMError, match="printed more than 1048576 bytes"):
        client.complete_full("system", '{"episode_id": "e"}')


def test_an_old_build_gets_the_options_it_knows(tmp_path: Path) -> None:
    rec = tmp_path / "rec.jsonl"
    fake = make_fake(tmp_path / "bin", "claude-code", "old", rec)
    client = AgentCLIClient(CLISettings(provider="claude-code", path=str(fake)))
    out = client.complete_full("the policy", '{"episode_id": "e", "events": []}')
    assert json.loads(out.text) == {"ops": []}
    [run] = records(rec)
    argv = run["argv"]
    assert "--tools" not in argv and "--no-session-persistence" not in argv
    assert argv[argv.index("--append-system-prompt") + 1] == "the policy"
    assert "Bash" in argv[argv.index("--disallowedTools") + 1].split()


def test_usage_absent_is_none_so_the_service_estimates() -> None:
    res = agent_cli.RunResult(
        0, b'{"type":"result","subtype":"success","is_error":false,"result":"{}"}', b""
    )
    c = agent_cli.parse_claude(res)
    assert (c.text, c.input_tokens, c.output_tokens) == ("{}", None, None)
    noisy = agent_cli.RunResult(0, b'warming up\n{"type":"result","result":"{}"}\n', b"")
    assert agent_cli.parse_claude(noisy).text == "{}"


# -- the input cap keeps the user's words ------------------------------------------------------


def test_the_input_cap_keeps_corrections_and_drops_ordinary_events_first() -> None:
    from reos_memory.squirrel.token_count import count_tokens
    from reos_memory.squirrel.writer.llm import build_prompt

    events: list[dict[str, Any]] = [
        {"role": "user", "kind": "message", "text": "set up the payment service"}
    ]
    for i in range(300):
        events.append(
            {
                "role": "assistant",
                "kind": "tool_call",
                "summary": f"make step{i}",
                "raw_snippet": "lorem ipsum " * 40,
            }
        )
        if i == 150:
            events.append(
                {
                    "role": "user",
                    "kind": "message",
                    "correction": True,
                    "text": "no, we never call the payment API from tests; use the stub server",
                }
            )
    ep = {"id": "ep", "project_id": "p", "events": events, "stats": {}}
    system, user, report = build_prompt(ep, [], ("user", "dev"), "", 2500)
    assert count_tokens(system) + count_tokens(user) <= 2500
    assert report["summarised"] and report["omitted_events"] > 200
    sent = json.loads(user)["events"]
    texts = [e.get("text") for e in sent]
    assert "set up the payment service" in texts
    assert "no, we never call the payment API from tests; use the stub server" in texts
    assert any("omitted" in e for e in sent)


def test_the_rules_reading_goes_with_the_events_and_outlives_their_cut() -> None:
    """The LLM writer's input holds the offline writer's reading of the same episode (what it
    would write, with each candidate's source), and the reading stays while ordinary events are
    cut to fit the cap."""
    from reos_memory.squirrel.token_count import count_tokens
    from reos_memory.squirrel.writer import offline
    from reos_memory.squirrel.writer.llm import build_prompt

    events: list[dict[str, Any]] = [
        {"role": "user", "kind": "message", "text": "add a retry to the upload client"},
        {"role": "assistant", "kind": "message", "text": "I will add it to upload()."},
        {
            "role": "user",
            "kind": "message",
            "correction": True,
            "text": "From now on, never call the payment API from tests; use the stub server.",
        },
    ]
    events += [
        {
            "role": "assistant",
            "kind": "tool_call",
            "summary": f"make {i}",
            "raw_snippet": "x " * 200,
        }
        for i in range(200)
    ]
    reading = offline.reading(offline.write("ep", events, {}, []))
    assert [(c["source"], c["text"]) for c in reading["candidates"]] == [
        ("explicit_statement", "Never call the payment API from tests.")
    ], reading
    ep = {"id": "ep", "project_id": "p", "events": events, "stats": {}}
    system, user, report = build_prompt(ep, [], ("user", "dev"), "", 3000, reading=reading)
    assert count_tokens(system) + count_tokens(user) <= 3000 and report["summarised"]
    assert json.loads(user)["reading"] == reading
    assert "`reading`" in system


def test_a_large_reading_never_pushes_the_users_words_out() -> None:
    """The reading takes at most a quarter of the input budget (what it turned away goes first,
    then its last candidates): the user's messages that fit without it still fit."""
    from reos_memory.squirrel.token_count import count_tokens
    from reos_memory.squirrel.writer.llm import READING_SHARE, build_prompt

    events: list[dict[str, Any]] = [
        {"role": "user", "kind": "message", "text": f"rule {i}: keep the cache warm on deploy"}
        for i in range(40)
    ]
    reading = {
        "candidates": [
            {"op": "ADD", "kind": "pattern", "text": "word " * 60, "source": "agent_diagnosis"}
            for _ in range(20)
        ],
        "turned_away": [{"text": "x " * 100, "reason": "fragment"} for _ in range(10)],
    }
    ep = {"id": "ep", "project_id": "p", "events": events, "stats": {}}
    _, alone, _ = build_prompt(ep, [], ("user", "dev"), "", 3000)
    assert len(json.loads(alone)["events"]) == 40
    system, user, _ = build_prompt(ep, [], ("user", "dev"), "", 3000, reading=reading)
    sent = json.loads(user)
    assert [e["text"] for e in sent["events"]] == [e["text"] for e in events]
    assert sent["reading"]["turned_away"] == [] and 0 < len(sent["reading"]["candidates"]) < 20
    budget = 3000 - count_tokens(system)
    assert count_tokens(json.dumps(sent["reading"])) <= budget // READING_SHARE + 50


def test_the_input_cap_keeps_the_agents_key_sentences_before_ordinary_events() -> None:
    """The lesson model's picks (`key_sentences`, kept at ingest) reach the LLM writer too: an
    agent message holding one outlives the cut of ordinary events, its sentence with it."""
    from reos_memory.squirrel.writer.llm import build_prompt

    events: list[dict[str, Any]] = [
        {"role": "user", "kind": "message", "text": "two users see each other's language"}
    ]
    for i in range(300):
        events.append(
            {
                "role": "assistant",
                "kind": "message",
                "summary": f"step {i}",
                "raw_snippet": "lorem ipsum " * 40,
            }
        )
        if i == 150:
            events[-1]["key_sentences"] = [
                ["The page cache key in `render_page()` leaves out the locale.", 0.97]
            ]
    ep = {"id": "ep", "project_id": "p", "events": events, "stats": {}}
    system, user, report = build_prompt(ep, [], ("user", "dev"), "", 2500)
    assert report["summarised"] and "key_sentences" in system
    sent = json.loads(user)["events"]
    assert [e["key_sentences"] for e in sent if e.get("key_sentences")] == [
        [["The page cache key in `render_page()` leaves out the locale.", 0.97]]
    ]


# -- never recursive: the hook and ingestion pass the writer's own runs by ---------------------


@pytest.mark.e2e
def test_sqrl_ingest_learns_through_claude_and_never_from_its_own_runs(tmp_path: Path) -> None:
    home = tmp_path / "home"
    root = repo(tmp_path)
    rec = tmp_path / "argv.jsonl"
    make_fake(tmp_path / "bin", "claude-code", "good", rec)
    env = agent_env(
        home,
        tmp_path / "m.db",
        PATH=f"{tmp_path / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        REOS_MEMORY_WRITER="claude-code",
        CLAUDECODE="1",
    )
    start = datetime.now(UTC) - timedelta(hours=3)
    s = ClaudeSession(root, start)
    s.user("Add a retry to the checkout client; we use tenacity for retries here")
    s.bash("pytest tests/test_checkout.py", "E   AssertionError: expected 3 calls", exit_code=1)
    s.bash("pytest tests/test_checkout.py", "1 passed")
    s.say("Done.")
    real = s.write(home / ".claude")
    # a transcript that a writer run of ours left (an older claude without
    # --no-session-persistence): its cwd is the scratch directory
    w = ClaudeSession(Path("/tmp/reos-memory-writer-abc123"), start)
    w.user('{"episode_id": "ep-x", "events": [{"role": "user", "text": "never learn me"}]}')
    w.say('{"ops": [{"op": "ADD", "kind": "note", "text": "never learn me"}]}')
    own = w.write(home / ".claude")
    x = CodexSession(Path("/tmp/reos-memory-writer-def456"), start)  # a codex run, likewise
    x.user("<instructions>\nYou are the Memory Writer\n</instructions>\n\nnever learn me")
    x.say('{"ops": [{"op": "ADD", "kind": "note", "text": "never learn me"}]}')
    own_codex = x.write(home / ".codex")
    out = sqrl(env, "ingest", str(real), str(own), str(own_codex), "--end", "--json")
    assert out.returncode == 0, out.stderr
    reps = {r["path"]: r for r in json.loads(out.stdout)}
    for path in (own, own_codex):
        assert reps[str(path)]["skipped_reason"].startswith("a Memory Writer run")
        assert reps[str(path)]["episodes"] == []
    assert reps[str(real)]["episodes"]
    mems = json.loads(sqrl(env, "memories", "--json", "--project-root", str(root)).stdout)
    texts = [m["text"] for m in mems["memories"]]
    assert texts == [
        "The user asked: Add a retry to the checkout client; we use tenacity for retries here"
    ]
    assert len(records(rec)) == 1  # one episode, one run; the writer's own log taught nothing
    assert "never learn me" not in json.dumps(
        json.loads(sqrl(env, "memories", "--json", "--all-projects").stdout)
    )


def test_the_hook_exits_at_once_inside_a_writer_run(tmp_path: Path) -> None:
    home = tmp_path / "home"
    db = tmp_path / "m.db"
    payload = json.dumps(
        {
            "hook_event_name": "Stop",
            "session_id": "6a7c5a52-4f2e-4a43-9d7b-6a1f0c3b2e11",
            "transcript_path": str(tmp_path / "t.jsonl"),
            "cwd": str(tmp_path),
        }
    )
    queue = tmp_path / "m.db.hook-queue"

    def hook(**extra: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "reos_memory", "hook", "claude-code"],
            input=payload,
            env=agent_env(home, db, **extra),
            capture_output=True,
            text=True,
            timeout=60,
            cwd=ROOT,
        )

    r = hook(REOS_MEMORY_WRITER_RUN="1")
    assert r.returncode == 0 and r.stdout == ""
    assert not queue.exists()
    r = hook()  # the same call from an ordinary session is queued
    assert r.returncode == 0
    assert queue.exists() and list(queue.iterdir())


# -- sqrl hooks install --writer ----------------------------------------------------------------


@pytest.mark.e2e
def test_hooks_install_writer_says_the_cost_and_writes_the_config(tmp_path: Path) -> None:
    home = tmp_path / "home"
    root = repo(tmp_path)
    make_fake(tmp_path / "bin", "claude-code", "good")
    env = agent_env(
        home,
        tmp_path / "m.db",
        PATH=f"{tmp_path / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        REOS_MEMORY_HOME=str(tmp_path / "rh"),
        REOS_MEMORY_WRITER_MAX_INPUT_TOKENS="3000",
    )
    # two days of sessions learned offline: the history the estimate goes by
    for age in (timedelta(days=2), timedelta(days=1)):
        s = ClaudeSession(root, datetime.now(UTC) - age)
        s.user("Always run the linters with `make lint` before committing.")
        s.bash("make lint", "ok")
        assert sqrl(env, "ingest", str(s.write(home / ".claude")), "--end").returncode == 0
    text = sqrl(env, "hooks", "install", "--writer", "claude-code")
    assert text.returncode == 0, text.stderr
    out = text.stdout
    assert "`claude -p --model haiku` (found at " in out
    assert "at most 4,200 tokens per episode" in out  # 3000 in + 1200 out
    assert "1.0 episodes worth a writer call per active day (2 active days" in out
    assert "writer_daily_token_budget = 1,000,000 tokens a day" in out
    cfg = tmp_path / "rh" / "config.toml"
    assert cfg.read_text() == 'writer = "claude-code"\n'
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    cmd = settings["hooks"]["Stop"][0]["hooks"][0]["command"]
    assert f"REOS_MEMORY_CONFIG={cfg}" in cmd
    # every command now reads it: sqrl status shows the writer and where its CLI is
    st = json.loads(sqrl(env, "status", "--json").stdout)
    assert st["writer"] == "claude-code"
    assert st["writer_config"]["executable_found"] == str(tmp_path / "bin" / "claude")
    # codex, in JSON, into a named config file that keeps what it held
    mine = tmp_path / "mine.toml"
    mine.write_text('[server]\nembedder = "hash"\nwriter = "rules"\n')
    j = sqrl(env, "hooks", "install", "--writer", "codex", "--config", str(mine), "--json")
    assert j.returncode == 0, j.stderr
    got = json.loads(j.stdout)["writer"]
    assert got["config_file"] == str(mine)
    assert got["estimate"]["executable_found"] is None  # no codex on this PATH
    assert got["estimate"]["tokens_per_day"] == 4200
    assert mine.read_text() == '[server]\nembedder = "hash"\nwriter = "codex"\n'


def test_set_setting_keeps_the_file_and_refuses_what_would_break_it(tmp_path: Path) -> None:
    from reos_memory.config import ConfigError, load_config, set_setting

    cfg = tmp_path / "c.toml"
    cfg.write_text('# my settings\nembedder = "hash"\nwriter = "rules"  # offline for now\n')
    set_setting(cfg, "writer", "claude-code")
    assert cfg.read_text() == '# my settings\nembedder = "hash"\nwriter = "claude-code"\n'
    assert load_config(str(cfg)).writer == "claude-code"
    with pytest.raises(ConfigError, match="Invalid enum value 'gpt'"):
        set_setting(cfg, "writer", "gpt")
    broken = tmp_path / "broken.toml"
    broken.write_text("writer = \n")
    with pytest.raises(ConfigError, match="cannot read"):
        set_setting(broken, "writer", "codex")
    assert broken.read_text() == "writer = \n"  # untouched


def test_the_default_config_file_is_read_when_no_other_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from reos_memory.config import load_config

    monkeypatch.setenv("REOS_MEMORY_HOME", str(tmp_path))
    monkeypatch.delenv("REOS_MEMORY_CONFIG", raising=False)
    monkeypatch.delenv("REOS_MEMORY_WRITER", raising=False)
    assert load_config().writer == "auto"
    (tmp_path / "config.toml").write_text('writer = "codex"\nwriter_cli_model = "gpt-5-mini"\n')
    cfg = load_config()
    assert (cfg.writer, cfg.writer_cli_model) == ("codex", "gpt-5-mini")
    named = tmp_path / "other.toml"
    named.write_text('writer = "rules"\n')
    assert load_config(str(named)).writer == "rules"  # a named file wins
