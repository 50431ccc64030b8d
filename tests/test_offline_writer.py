"""The offline writer on how people really work: corrections in natural language, rejected tool
calls with the user's reason, messages typed while the agent worked, the agent's diagnoses,
compaction summaries, the project's commands, failure -> fix per distinct error, and the junk
gate. Logs are written here in Claude Code's real record format and go in over real stdio."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

from harness.rpc_client import Server
from reos_memory.squirrel.ingest.base import ParseState
from reos_memory.squirrel.ingest.claude_code import ClaudeCode
from reos_memory.squirrel.text import commands, diagnosis, instructions, summaries

SID = "5f0c1e7a-2b1d-4c7e-9a51-0f3b2d6c8e11"
CWD = "/home/dev/shop"
_ids = itertools.count(1)


def _rec(kind: str, content: Any, **extra: Any) -> dict[str, Any]:
    n = next(_ids)
    return {
        "type": kind,
        "sessionId": SID,
        "cwd": CWD,
        "uuid": f"u-{n}",
        "timestamp": f"2026-03-01T10:{n // 60:02d}:{n % 60:02d}.000Z",
        "message": {"role": kind, "content": content},
        **extra,
    }


def user(text: str) -> dict[str, Any]:
    return _rec("user", text)


def say(text: str) -> dict[str, Any]:
    return _rec("assistant", [{"type": "text", "text": text}])


def bash(cid: str, command: str) -> dict[str, Any]:
    return _rec(
        "assistant",
        [{"type": "tool_use", "id": cid, "name": "Bash", "input": {"command": command}}],
    )


def edit(cid: str, path: str, new: str) -> dict[str, Any]:
    return _rec(
        "assistant",
        [
            {
                "type": "tool_use",
                "id": cid,
                "name": "Edit",
                "input": {"file_path": path, "old_string": "x", "new_string": new},
            }
        ],
    )


def result(cid: str, body: str, error: bool = False, extra: Any = None) -> dict[str, Any]:
    block = {"type": "tool_result", "tool_use_id": cid, "content": body, "is_error": error}
    rec = _rec("user", [block])
    if extra is not None:
        rec["toolUseResult"] = extra
    return rec


REJECTED = (
    "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it"
    " was a file edit, the new_string was NOT written to the file). To tell you how to proceed,"
    " the user said:\n"
)


def write_log(path: Path, records: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def learn(
    db: Path, log: Path, embedder: str = "hash"
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Ingest one log with its session ended; every memory, and every episode with its ops."""
    with Server(db, embedder=embedder) as srv:
        res = srv.call("squirrel/ingest_transcript", {"path": str(log), "session_end": True})
        pid = res["project_id"]
        mems = srv.call("squirrel/memories/list", {"project_id": pid})["memories"]
        eps = [
            srv.call("squirrel/episodes/get", {"episode_id": e["id"]})
            for e in srv.call("squirrel/episodes/list", {"project_id": pid})["episodes"]
        ]
    return mems, eps


# -- the rules, one by one --------------------------------------------------------------------


def test_natural_corrections_and_proposals_are_recognised() -> None:
    said = {
        "that is not correct, we don't gitignore the whole entire folder, especially"
        " .entire/settings.json should be commited": "reply",
        "why not adding .entire/.gitignore?": "rejection",
        "why are we not just using the `entire enable` command?": "rejection",
        "fix the test, the code is right": "rejection",
        # each of a kind, all of a kind, what the team does to everything
        "every new dbt model needs a schema.yml entry, the CI check enforces it": "reply",
        "all user facing strings go through the i18n files": "reply",
        "we squash merge everything, so the history of a branch does not matter": "reply",
        "Sure, but the cli should handle that automatically for the user, not you adding that"
        " for the current repo now.": "reply",
        "can we use our logging framework? should be WARN": "rejection",
    }
    for text, situation in said.items():
        found = instructions.find(text, situation)
        assert found, text
        assert found[0].text.split()[0].lower() in text.lower()  # the user's own words
    # asking, agreeing, thinking aloud or the task itself are not instructions
    for text, situation in {
        "what does upper bound mean here?": "reply",
        "yes, that was it": "reply",
        "Did we end up putting in a specific test for bad ids?": "rejection",
        "I wonder now if we should add this somewhere": "reply",
        "add a --json flag to the status command": "request",
        "I'll take it from here.": "rejection",
        # work asked for now, in a reply as in a request: the work's acceptance, one more case
        # of it, something to be made, a change to a thing of this work
        "Make sure it works with worktrees as well.": "reply",
        "We should also add the flag to the list command too.": "reply",
        "There should be a test for the rebase case.": "reply",
        "Make the function return an error instead of panicking.": "reply",
        "I want the summary to show the token count.": "queued",
        "I want the formula to be called homebrew-tab instead.": "reply",
        "make sure the tests cover the timeout path in fetchUser": "reply",
        "the retry count in this PR should be 5 instead of 3": "reply",
        "ok, don't worry about the docs, I'll do them": "reply",
        "no no, revert that. i wanted the error mapped to a 404": "reply",
        "I dont want any new dependencies for this, its like 10 lines": "reply",
        "can you use table-driven tests for that, its the same thing 6 times": "reply",
        "why does this function take a `&String` instead of `&str`": "reply",
        "don't change anything yet": "reply",
        "i wanted the error mapped to a 404 not swallowed": "reply",
        # trouble of the moment reported: the task
        "hmm pytest is picking up the wrong settings, its hitting the dev db": "reply",
        "thats wrong, the CSV has a header row, you're skipping the first data row now": "reply",
        # the work done, pointed at: its acceptance
        "Mock RepoMap and ensure it is not called.": "reply",
        "Make sure they exist, print an error and skip any that dont.": "reply",
        # what the user sees now, pointed at; what the last request meant
        "Notice it got the filename wrong, use the full path instead.": "reply",
        "Same problem if the app runs as an API rather than in a terminal.": "reply",
        "This happens even on wide desktop browsers.": "rejection",
        "no, this happens even on wide desktop browsers. it's not just a small screen issue": (
            "rejection"
        ),
        "I mean for the processes that run inside the image, not the host.": "reply",
        # an order at one named place of the code is this work's detail
        "No, in cmd_export catch `ValueError` when you set `current_head`": "reply",
        "in `test_cache_options` make sure Loader() is called with refresh=True": "rejection",
        "no, i mean for processing that run inside the image": "reply",
        # a document pasted into the turn
        'Use "/help" to [ask for help about using aider](/docs/support.html), always. --- parent:'
        " Troubleshooting": "reply",
    }.items():
        assert instructions.find(text, situation) == [], text
    # the same reading for the user's sentences the lesson model picks
    assert instructions.asked_now("Make sure they exist before the copy.")
    assert not instructions.asked_now("Always make sure they exist before the copy.")
    assert instructions.asked_now("in load_config() close the file when you return early")
    assert not instructions.asked_now("in load_config() never leave the file open")
    assert instructions.find("in tests, never call the network", "reply")
    # a folder, a file, a flag or a norm word is a rule's scope, not one place of this work
    for text in (
        "in `routes/` every endpoint needs an auth decorator",
        "in `--json` mode output must be machine-readable",
        "in unit_tests use the fake clock",
    ):
        assert instructions.find(text, "reply"), text
    for text in (
        "in `*.tsx` files, use named exports",
        "in `package.json` pin exact versions",
        "in load_config() close the file, the handle leaks otherwise",  # a reason
        "in load_config() only close the file once",  # a way chosen
    ):
        assert not instructions.asked_now(text), text
    assert instructions.pasted_doc("see [the guide](https://example.com/guide) for more")
    assert not instructions.pasted_doc("never link [x] items to the tracker")
    # on a rejected call (an undo too), the next piece of work ordered with no choice between
    # ways, no reason and nothing said to last is the task again (aider's users work so)
    for text in (
        "Add a paginate param to cmd_diff",
        "Add a bar graph at the top which plots the pass rate for each model.",
        "Make the x-axis be the version number",
        "Mock RepoMap and ensure it is not called",
        "Change the name of the menu item from Parameters to Settings, and link it to the page",
    ):
        assert instructions.find(text, "rejection") == [], text
    # in any situation, a norm word only in the description of the thing an order makes is its
    # spec or its acceptance
    for text in (
        "add a committer param, which makes every commit message start with `bot:`",
        "Add another case with --fast and make sure the cache header is false.",
    ):
        for situation in ("request", "reply", "rejection"):
            assert instructions.find(text, situation) == [], (text, situation)
    # ... but a way chosen in that description is a rule
    for text in (
        "Write tests that should never hit the network.",
        "Make the CLI print JSON and make sure it never prints colors when piped.",
    ):
        assert instructions.find(text, "reply"), text
    assert instructions.find("add the header to every commit message, which we always do", "reply")
    # a fact of the project said outright in a reply: a thing of the project, how it is, and a
    # word of scope or contrast; not a pick among options, the state of this work or trouble
    for text in (
        "the API is versioned in the URL, not a header",
        "all timestamps are stored in UTC, convert only at the display layer",
        "fyi the e2e tests run against the preview deploy, not localhost",
        "the billing service only reads from the replica",
        # a norm of a kind of thing: a bare plural with "need to", "have to", "can't"
        "base images have to come from the internal registry, docker hub is blocked",
        "commits need to follow conventional commits, the hook rejects anything else",
        "integration tests need docker running locally, they start postgres in a container",
        # what the team does, said of itself, with a word of scope
        "we keep components dumb here; data fetching lives in hooks, not in the JSX files",
        "in this crate we avoid async in the core",
        "we usually keep components dumb here",
        "we tag releases here, i.e. semver",
    ):
        found = instructions.find(text, "reply")
        assert [(f.cue, f.kind) for f in found] == [("fact", "invariant")], text
    for text in (
        "the second one is better, not the first",
        "the migration is done, not the seeding",
        "the export is still failing, not only for admins",
        "make /drop work with read only files too",
        "it is only used in tests",
        "the leaderboard is wider than the page, so users scroll to see it all",
        "the tests have to pass before merging",
        "tests need to be updated for the new flag",
        "users need to scroll to see the whole table",
        "these tests use the old fixture",
        # the state of one thing now, said with "not", "only" or "here"
        "the file is not in the repo",
        "the output is truncated here",
        "the button is not a link",
        "the branch is only a draft",
        "the build is red only on mac",
        "my name is Bob, not Robert",
        "we run it here",
        "the migration is applied, not the seed",
        "the PR is merged, only the docs are left",
        # a pick, a plan, trouble, a question, a pointer or a person
        "option B uses redis, not memcached, let's go with that",
        "the second approach uses less memory, not the first",
        "we release tomorrow, not today",
        "the api can't handle that payload, only small ones",
        "the function is called twice, not once",
        "the button is hidden only on mobile, is that expected",
        "all of them use the same fixture, not a fresh one",
        "the ticket is assigned to Maria, not me",
        "we build the image here on my laptop",
    ):
        assert instructions.find(text, "reply") == [], text
    # a tool put to one use in the short request that opens a task is how the task is done
    assert instructions.find("use rich to make the prompt the input color", "request") == []
    assert instructions.find("use cog to emit the pattern list into the toml", "request") == []
    assert instructions.find("always use cog to emit generated lists into the toml", "request")
    assert instructions.find("use cog to emit the list, not a hand-written copy", "request")
    assert instructions.find("use pnpm to install packages, npm breaks the lockfile", "request")
    # ... unless said to last; and on a rejected call, an order says what the user chose
    for text, situation in {
        "There should always be a test for every new hook.": "reply",
        "Make sure every command works from a subdirectory as well, always.": "reply",
        "fix the test, the code is right": "rejection",
        "no, add a second function, don't overload this one": "rejection",
        "Keep the backticks for other completions, just not for file names": "rejection",
        "Add the flag to every subcommand, not only to status": "rejection",
        # a constraint to hold, a statement with a prohibition after it, a scope named
        "the CLI has to keep working on Go 1.21, so don't use newer stdlib APIs": "reply",
        "we pin every provider version in Terraform, don't leave it as >=": "reply",
        # (in a task's long request, a way said to last for a named scope)
        "Please add the retry helper to the client module and wire it into the sync command so"
        " that it retries twice. In this crate we use thiserror instead of anyhow for errors.": (
            "request"
        ),
    }.items():
        assert instructions.find(text, situation), text
    # a prohibition said as one is a guard
    (guard,) = instructions.find("no, I did not say commit anything", "rejection")
    assert guard.kind == "guard" and guard.polarity == -1


def test_diagnoses_name_something_and_are_not_hedged() -> None:
    text = (
        "Let me look at the test output. Found the bug! The `sessionStateFromStrategy` function"
        " is missing the `TranscriptPath` field. I think it might also be the cache."
    )
    (found,) = diagnosis.find(text)
    assert found == "The `sessionStateFromStrategy` function is missing the `TranscriptPath` field."
    assert diagnosis.find("I found and fixed the root cause of the issue.") == []
    assert diagnosis.find("The problem might be that the cache is stale somewhere.") == []
    # a reading of an error message is a guess, not a cause found
    assert (
        diagnosis.find("The error message suggests that the test fails because `path` differs.")
        == []
    )
    assert (
        diagnosis.find("It appears the build fails because `gcc` is missing the -m32 libs.") == []
    )
    assert diagnosis.find("A `.env` file alone won't work because: 1.") == []


def test_compaction_summary_errors_and_fixes_become_notes() -> None:
    summary = (
        "This session is being continued from a previous conversation.\n"
        "1. Primary Request and Intent:\n   - Fix the importer\n"
        "4. Errors and fixes:\n"
        "   - **Migration fails on SQLite**:\n"
        "     - `ALTER TABLE ... modify` is not supported by SQLite\n"
        "     - Fixed by rewriting the migration as a table rewrite because SQLite cannot alter columns\n"
        "   - **Unused variable `runner`**:\n     - Fixed by removing it\n"
        "5. Problem Solving:\n   - Solved: the importer now works\n"
        '6. All user messages:\n   - "please never use ALTER TABLE modify"\n'
    )
    notes = summaries.find(summary)
    assert len(notes) == 1 and notes[0].startswith("Migration fails on SQLite: ")
    assert "table rewrite" in notes[0]


def test_project_commands_are_the_projects_checks_not_task_details() -> None:
    seen = [
        commands.classify(p)
        for c in (
            "mise run fmt && mise run lint 2>&1 | head -50",
            "go test ./pkg/settings/... -run TestStrict -v",
            "mise run test -- ./redact/...",
            "cd web && npx tsc --noEmit",
            "mix test test/shop/cart_test.exs",
            "pnpm dev --port 3001",
        )
        for p in commands.split(c)
    ]
    assert seen == [
        ("format", "mise run fmt"),
        ("lint", "mise run lint"),
        None,
        ("test", "mise run test"),
        ("typecheck", "npx tsc --noEmit"),
        None,
        None,
    ]
    text = commands.text_of({"lint": ["mise run lint"], "test": ["mise run test"]})
    assert text == "Project checks: lint with `mise run lint`; run the tests with `mise run test`."
    assert commands.parse_text(text) == {"lint": ["mise run lint"], "test": ["mise run test"]}


def test_claude_code_rejection_reasons_queued_messages_and_summaries_are_read() -> None:
    parser = ClaudeCode()
    state = ParseState()
    recs = [
        edit("t1", f"{CWD}/.gitignore", ".entire/\n"),
        result(
            "t1", REJECTED + "why not adding .entire/.gitignore?", True, "User rejected tool use"
        ),
        result(
            "t2",
            REJECTED + "The user wants to clarify these questions.\n  Take their response",
            True,
        ),
        {
            "type": "queue-operation",
            "operation": "enqueue",
            "timestamp": "2026-03-01T10:00:00Z",
            "sessionId": SID,
            "content": "could we put the shim in a gitutil package?",
        },
        {
            "type": "queue-operation",
            "operation": "remove",
            "timestamp": "2026-03-01T10:00:01Z",
            "sessionId": SID,
        },
        _rec(
            "user",
            "This session is being continued ... 4. Errors and fixes: ...",
            isCompactSummary=True,
        ),
    ]
    events = [p.event for r in recs for p in parser.parse(r, state)]
    said = [(e.origin, e.text) for e in events if e.role == "user" and e.kind == "message"]
    assert said == [
        ("rejection", "why not adding .entire/.gitignore?"),
        ("queued", "could we put the shim in a gitutil package?"),
    ]
    (compaction,) = [e for e in events if e.origin == "compaction"]
    assert compaction.role == "system" and "Errors and fixes" in (compaction.text or "")


# -- end to end, over stdio ---------------------------------------------------------------------


def test_a_session_teaches_what_a_developer_would_write_down(tmp_path: Path) -> None:
    log = write_log(
        tmp_path / "logs" / f"{SID}.jsonl",
        [
            user("add a retry to the payment client"),
            bash("c1", "pytest tests/test_payment.py"),
            result(
                "c1",
                "Exit code 1\nE   KeyError: 'timeout'\nFAILED tests/test_payment.py::test_retry",
                True,
            ),
            say(
                "Found the bug! The `load_settings` function in settings.py is missing the"
                " `timeout` key, so the client never sees it."
            ),
            edit("c2", f"{CWD}/shop/settings.py", "timeout = 30"),
            result("c2", "The file was updated"),
            bash("c3", "pytest tests/test_payment.py"),
            result("c3", "1 passed in 0.2s"),
            edit("c4", f"{CWD}/.gitignore", ".cache/\n"),
            result(
                "c4",
                REJECTED + "why not adding .cache/.gitignore instead?",
                True,
                "User rejected tool use",
            ),
            user(
                "that is not correct, we don't gitignore generated folders from the root gitignore"
            ),
            user("again: we don't gitignore generated folders from the root gitignore, ok"),
            bash("c5", "mise run lint 2>&1 | tail -5"),
            result("c5", "0 issues."),
            bash("c6", "mise run test"),
            result("c6", "ok  shop 0.4s"),
        ],
    )
    mems, eps = learn(tmp_path / "m.db", log)
    texts = {m["text"]: m for m in mems}
    # the reason typed on rejecting the edit decides, and is written as the rule it proposes
    assert any(t.startswith("Add .cache/.gitignore instead.") for t in texts), texts
    assert any(
        "the team does not gitignore generated folders" in t.lower() for t in texts
    )  # (named)
    # the cause opens the pattern; the failure that showed it and the fix are its evidence
    (pattern,) = [t for t in texts if "(`pytest tests/test_payment.py` failed" in t]
    assert "missing the `timeout` key" in pattern.split("(")[0] and "settings.py" in pattern, (
        pattern
    )
    assert texts["Project checks: lint with `mise run lint`; run the tests with `mise run test`."][
        "key"
    ] == ("project.commands.checks")
    # the repeated correction was turned away, and the episode says why
    turned = [o for ep in eps for o in ep["episode"]["ops"] or [] if o.get("stage") == "writer"]
    assert any(o["reason"].startswith("near-duplicate") for o in turned), turned
    assert not any(m["tier"] == "emergency" for m in mems)


def test_repetition_alone_never_makes_a_guard_and_a_test_files_own_edit_is_no_fix(
    tmp_path: Path,
) -> None:
    records = [user("make the cart total test pass")]
    for i in range(3):
        records += [
            bash(f"f{i}", "pytest tests/test_cart.py"),
            result(f"f{i}", "Exit code 1\nE   AssertionError: assert 10 == 12", True),
            edit(f"e{i}", f"{CWD}/tests/test_cart.py", f"assert total == {10 + i}"),
            result(f"e{i}", "The file was updated"),
        ]
    records += [bash("ok", "pytest tests/test_cart.py"), result("ok", "1 passed in 0.1s")]
    mems, _ = learn(tmp_path / "m.db", write_log(tmp_path / "logs" / f"{SID}.jsonl", records))
    assert mems == []


def test_project_commands_are_updated_never_duplicated(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    first = write_log(
        tmp_path / "a" / f"{SID}.jsonl",
        [user("tidy the cart module"), bash("l", "mise run lint"), result("l", "0 issues.")],
    )
    learn(db, first)
    other = "7a0c1e7a-2b1d-4c7e-9a51-0f3b2d6c8e12"
    second = write_log(
        tmp_path / "b" / f"{other}.jsonl",
        [
            {**r, "sessionId": other}
            for r in [
                user("fix the coupon rounding"),
                bash("t", "mise run test"),
                result("t", "ok shop 0.3s"),
                bash("g", "go test ./..."),
                result("g", "ok shop 0.2s"),
            ]
        ],
    )
    mems, _ = learn(db, second)
    checks = [m for m in mems if m["key"] == "project.commands.checks"]
    assert [m["text"] for m in checks] == [
        "Project checks: lint with `mise run lint`; run the tests with `mise run test`, `go test ./...`."
    ]
    # the same commands again, in another order: nothing is written
    third_id = "8b0c1e7a-2b1d-4c7e-9a51-0f3b2d6c8e13"
    third = write_log(
        tmp_path / "c" / f"{third_id}.jsonl",
        [
            {**r, "sessionId": third_id}
            for r in [
                user("rename the coupon field"),
                bash("g", "go test ./..."),
                result("g", "ok shop 0.2s"),
                bash("t", "mise run test"),
                result("t", "ok shop 0.3s"),
                bash("l", "mise run lint"),
                result("l", "0 issues."),
            ]
        ],
    )
    again, _ = learn(db, third)
    assert [m["id"] for m in again if m["key"] == "project.commands.checks"] == [checks[0]["id"]]


def test_a_turn_typed_in_lowercase_is_read_sentence_by_sentence() -> None:
    """People type to an agent as they chat: "yep refunds. ok so revenue is always net of
    refunds" holds a rule after a reply, which is read on its own; after a "?" the lowercase
    words stay with the question ("can we use our logger? should be WARN")."""
    (rule,) = instructions.find(
        "yep refunds. ok so revenue is always net of refunds in every report", "reply"
    )
    assert rule.text.startswith("ok so revenue is always net"), rule
    (asked,) = instructions.find("can we use our logging framework? should be WARN", "rejection")
    assert asked.text.endswith("should be WARN"), asked
    # (an abbreviation's full stop is no end: "e.g. the parser")
    (eg,) = instructions.find("always log through slog, e.g. the parser uses it", "reply")
    assert "e.g. the parser" in eg.text


def test_a_statement_the_gate_turns_away_covers_no_instruction(tmp_path: Path) -> None:
    """ "State management is riverpod." is too short to stand alone; the user's whole sentence,
    which says it is so everywhere and what not to bring in, is the memory."""
    recs = [
        user("add a settings screen"),
        say("Added the settings screen with a local ChangeNotifier."),
        user("state management is riverpod everywhere, dont introduce provider or bloc"),
        say("Understood, switched the screen to a riverpod provider."),
    ]
    mems, _ = learn(tmp_path / "m.db", write_log(tmp_path / "s.jsonl", recs))
    texts = [m["text"] for m in mems]
    assert any("riverpod everywhere" in t for t in texts), texts


def test_the_invented_talk_tool_reads_every_file() -> None:
    """`tools/eval_invented.py` over `harness/invented_talk/`: every case is read, and a rule
    said plainly is written where work asked for now is not."""
    from tools import eval_invented

    turns = eval_invented.TALK / "user_turns.jsonl"
    counts = eval_invented.users(turns, show=False)
    assert counts["rules"] == sum(
        len(json.loads(x)["rules"]) for x in turns.read_text().split("\n") if x
    )
    assert counts["memories holding a rule"] + counts["rules missed"] >= counts["rules"]
    assert eval_invented.user_says("never push to main directly, always open a PR") != []
    assert eval_invented.user_says("we need to update the changelog") == []
    found = eval_invented.agent_says(
        "The crash happens because `openRepo()` returns a nil repository without an error when"
        " no .git directory is found, and `status` dereferences it."
    )
    assert found and "openRepo()" in found[0]


def test_an_agents_report_of_its_work_writes_nothing() -> None:
    """The agent's narration, status, summaries, plans, offers and apologies of the invented
    talk (`finding: false`), each the agent's whole message after a failure and before the fix:
    no memory."""
    from tools import eval_invented

    cases = [
        json.loads(x)
        for x in (eval_invented.TALK / "agent_sentences.jsonl").read_text().split("\n")
        if x
    ]
    others = [c["text"] for c in cases if not c["finding"]]
    assert len(others) >= 150
    written = {t: w for t in others if (w := eval_invented.agent_says(t))}
    assert written == {}


def test_typographic_quotes_read_as_typed_ones(tmp_path: Path) -> None:
    """A review comment pasted from a web page, or a reply typed with smart punctuation, holds
    U+2019 for the apostrophe of "won't": every reading takes it as the typed one (before, the
    pasted comment's cause was read only when its apostrophe was typed)."""

    def session(q: str) -> list[dict[str, Any]]:
        return [
            user(
                f"any ideas: This script{q}s PATH changes won{q}t affect later hooks because"
                " .claude/settings.json runs it as a separate command."
            ),
            say("Right, each hook runs in its own shell. I will write the exports to a file."),
            edit("c1", f"{CWD}/scripts/setup.sh", "echo export PATH >> $ENV_FILE"),
            result("c1", "The file was updated"),
            edit("c2", f"{CWD}/scripts/hooks.go", "os.Setenv"),
            result("c2", REJECTED + f"no, don{q}t touch the Go hooks, only the script", True),
            user(f"we don{q}t edit generated files in this repo, never"),
        ]

    typed = learn(tmp_path / "a.db", write_log(tmp_path / "a" / f"{SID}.jsonl", session("'")))
    smart = learn(tmp_path / "b.db", write_log(tmp_path / "b" / f"{SID}.jsonl", session("\u2019")))
    want = sorted(m["text"] for m in typed[0])
    assert any("won't affect later hooks" in t for t in want), want
    assert any("generated files" in t for t in want), want
    assert sorted(m["text"] for m in smart[0]) == want
    # the opener asking for the agent's view is not part of the memory
    assert not any(t.lower().startswith("any ideas") for t in want), want
