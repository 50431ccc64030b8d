"""The offline writer writes lessons, not chat (issue 31): sessions invented here, one per kind
of junk and miss found on real ones, in Claude Code's record format, in over real stdio with
the real model."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_offline_writer import CWD, bash, learn, result, say, user, write_log

pytestmark = [pytest.mark.e2e, pytest.mark.model]

NO_APP = (
    f"ImportError while loading conftest '{CWD}/tests/conftest.py'.\n"
    "tests/conftest.py:3: in <module>\n    from app.models import Cart\n"
    "E   ModuleNotFoundError: No module named 'app'"
)


def test_the_command_that_worked_is_remembered_not_the_one_that_failed(tmp_path: Path) -> None:
    """`pytest` fails three times on an import, `PYTHONPATH=. pytest` passes: the lesson names
    the variant that works, and the project's checks record it, not the failing form."""
    recs = [user("add a discount field to the cart and make sure the tests pass")]
    for i in range(3):
        recs += [bash(f"c{i}", "pytest"), result(f"c{i}", NO_APP, True)]
    recs += [
        bash("c9", "PYTHONPATH=. pytest"),
        result("c9", "============ 14 passed in 0.41s ============"),
        say("The tests pass when the repository root is on PYTHONPATH."),
    ]
    mems, _ = learn(tmp_path / "m.db", write_log(tmp_path / "s.jsonl", recs), "onnx")
    texts = [m["text"] for m in mems]
    lesson = [t for t in texts if "ModuleNotFoundError" in t]
    # the variant to run opens the lesson; the failure it avoids is its evidence, quote closed
    assert len(lesson) == 1 and lesson[0].startswith("Run `PYTHONPATH=. pytest` ("), texts
    assert "(`pytest` failed with ModuleNotFoundError: No module named 'app')" in lesson[0]
    (checks,) = [m for m in mems if m["key"] == "project.commands.checks"]
    assert checks["text"] == "Project checks: run the tests with `PYTHONPATH=. pytest`."
    # "make sure the tests pass" is how this task is done, not a rule
    assert not [t for t in texts if "discount" in t.lower()], texts


def test_a_checks_memory_drops_a_form_that_failed_where_a_variant_passed(tmp_path: Path) -> None:
    """A later session in which the stored `pytest` fails and `PYTHONPATH=. pytest` passes
    replaces the stored form; one where `pytest` passes keeps it."""
    db = tmp_path / "m.db"
    first = [user("run the tests"), bash("a1", "pytest"), result("a1", "3 passed in 0.1s")]
    mems, _ = learn(db, write_log(tmp_path / "a.jsonl", first), "onnx")
    (checks,) = [m for m in mems if m["key"] == "project.commands.checks"]
    assert checks["text"] == "Project checks: run the tests with `pytest`."
    second = [
        user("rebase on main and check the tests"),
        bash("b1", "pytest"),
        result("b1", NO_APP, True),
        bash("b2", "PYTHONPATH=. pytest"),
        result("b2", "14 passed in 0.4s"),
    ]
    mems, _ = learn(db, write_log(tmp_path / "b.jsonl", second), "onnx")
    live = [
        m for m in mems if m["key"] == "project.commands.checks" and m["status"] != "deprecated"
    ]
    assert [m["text"] for m in live] == [
        "Project checks: run the tests with `PYTHONPATH=. pytest`."
    ]


def test_no_memory_names_a_home_directory(tmp_path: Path) -> None:
    """A memory is read by other checkouts and, shared, by a team: the checkout's paths become
    project-relative and any other home path `~`, whichever rule found them (an agent's
    diagnosis, a user's rule)."""
    home_cfg = "/home/dev/.config/shop/settings.toml"
    found = [
        user("the price rounding is off"),
        bash("r1", "pytest"),
        result("r1", "E   KeyError: 'currency'", True),
        say(
            f"Found it: the currency is read from {home_cfg} instead of the project's"
            f" {CWD}/config/currency.toml, so a machine without that file fails."
        ),
        bash("r2", "pytest"),
        result("r2", "14 passed in 0.4s"),
    ]
    mems, _ = learn(tmp_path / "m.db", write_log(tmp_path / "a.jsonl", found), "onnx")
    (diagnosis,) = [m["text"] for m in mems if "currency" in m["text"]]
    assert "~/.config/shop/settings.toml" in diagnosis and " config/currency.toml" in diagnosis
    told = [user(f"never read settings from {home_cfg}, only from {CWD}/config")]
    mems, _ = learn(tmp_path / "m.db", write_log(tmp_path / "b.jsonl", told), "onnx")
    texts = [m["text"] for m in mems]
    assert not [t for t in texts if "/home/" in t], texts
    assert any(t.startswith("Never read settings from ~/.config/shop/settings.toml") for t in texts)


def test_a_proposal_is_written_as_what_was_decided(tmp_path: Path) -> None:
    """A proposal asked as a question becomes the rule when the agent takes it; one the agent
    argues against and the user drops is not written (it would be the reverse of what was
    decided), and is kept on the episode as a rejected candidate with the reason."""
    recs = [
        user("the login page is slow, find out why"),
        bash("a1", "npm run bench:login"),
        result("a1", "login p50 840ms"),
        say("The config is parsed on every request in `load_config()`."),
        user("Could we just cache the token inside `load_config()`?"),
        say(
            "Caching the token there would break the refresh: it expires hourly and"
            " `load_config()` lives for the whole process. I'd keep the token per request and"
            " cache only the parsed config."
        ),
        user("ok, fair, do that"),
        bash("a2", "npm run bench:login"),
        result("a2", "login p50 120ms"),
        user("can we use our logging framework for the timing lines? should be DEBUG"),
        say("Good idea, I'll use the project's logger at DEBUG level."),
        bash("a3", "npm test"),
        result("a3", "42 passed"),
    ]
    mems, eps = learn(tmp_path / "m.db", write_log(tmp_path / "s.jsonl", recs), "onnx")
    texts = [m["text"] for m in mems]
    assert not [t for t in texts if "?" in t], texts
    assert not [t for t in texts if "cache the token" in t.lower()], texts
    assert any(t.startswith("Use the project's logging framework") for t in texts), texts
    rejected = [r for e in eps for r in e["episode"]["ops"] or [] if r.get("action") == "rejected"]
    assert any(
        "cache the token" in r["text"] and r["reason"] == "a proposal the agent argued against"
        for r in rejected
    ), rejected


def test_a_doubt_that_something_is_needed_is_written_as_what_was_decided(
    tmp_path: Path,
) -> None:
    """ "Do we need X at all?" is a proposal to drop X: when the agent agrees, the memory says X
    is not needed (a statement tagged ", right?" after it is its reason, no question); when the
    agent answers "yes", X stays and nothing is written."""
    recs = [
        user("set up the dev shell so mise tools are on PATH in every hook"),
        say("I added a SessionStart hook and a note in `CLAUDE.md` telling you to run mise."),
        user(
            "Do we need the note in `CLAUDE.md` at all then? it should just work out of the box"
            " through the hook, right?"
        ),
        say("You're right, the hook already does it. Removing the note."),
        bash("a1", "git diff --stat"),
        result("a1", " CLAUDE.md | 3 ---"),
        user(
            "Do we need the retry wrapper in `deploy.sh` at all? the upload should just work"
            " the first time, right?"
        ),
        say("Yes, the registry drops uploads under load; without the retry the deploy fails."),
        user("ok"),
    ]
    mems, _ = learn(tmp_path / "m.db", write_log(tmp_path / "s.jsonl", recs), "onnx")
    texts = [m["text"] for m in mems]
    assert not [t for t in texts if "?" in t], texts
    assert (
        "The note in `CLAUDE.md` is not needed. It should just work out of the box through the"
        " hook." in texts
    ), texts
    assert not [t for t in texts if "retry" in t.lower()], texts


def test_chat_openers_and_the_moments_plans_are_not_memories(tmp_path: Path) -> None:
    """What the user says in passing is written without its opener, and "let's pause" or a bare
    request for the task is no memory at all."""
    recs = [
        user("add retries to the upload client"),
        bash("b1", "npm test"),
        result("b1", "12 passed"),
        user("Sure, but the client should never retry a 4xx response, only 5xx and timeouts."),
        say("Understood - only 5xx and timeouts are retried now."),
        user("Let's pause here, I want to look at the diff first."),
        say("Sure."),
        user("We need to update the changelog."),
        say("Done."),
        user("Please update the README for the current changes."),
        say("Done."),
        user("please don't mock the upload client in these tests, use the fake server"),
    ]
    mems, _ = learn(tmp_path / "m.db", write_log(tmp_path / "s.jsonl", recs), "onnx")
    texts = [m["text"] for m in mems]
    assert any(t.startswith("The client should never retry a 4xx response") for t in texts), texts
    starts = ("sure", "let's", "we need", "please update")
    assert not [t for t in texts if t.lower().startswith(starts)], texts
    # a request that says how, not only what, is a way of working
    assert any("mock the upload client" in t for t in texts), texts


def test_more_work_asked_for_is_no_memory(tmp_path: Path) -> None:
    """Replies that ask for more of this work (its acceptance, one more case, a thing to make,
    a change to a thing of it, a proposal about "this") are no memories; a rule said in the
    same session is one, and an approval before a correction is not written with it."""
    recs = [
        user("add a --json flag to the status command"),
        bash("b1", "go test ./..."),
        result("b1", "ok  \tgithub.com/acme/cli/cmd\t0.2s"),
        user("Make sure it works with worktrees as well."),
        say("It does: the flag reads the common git dir."),
        user("There should be a test for the rebase case."),
        say("Added TestStatusJSON_Rebase."),
        user("Make the function return an error instead of panicking."),
        say("Done."),
        user("I want the summary to show the token count."),
        say("Done."),
        user("How about we move this to the strategy package?"),
        say("Sure, moved it."),
        user("That looks good, but status output must never include absolute paths."),
        say("Understood: paths are now relative to the repository root."),
        user(
            "ok so the jest tests pass locally but fail in CI with `ReferenceError: TextEncoder"
            " is not defined`. jsdom thing probably"
        ),
        say("I'll add a TextEncoder polyfill to the jest setup."),
    ]
    mems, _ = learn(tmp_path / "m.db", write_log(tmp_path / "s.jsonl", recs), "onnx")
    texts = [m["text"] for m in mems]
    assert "Status output must never include absolute paths." in texts, texts
    asked = ("worktrees", "rebase case", "panicking", "token count", "strategy package", "jest")
    assert not [t for t in texts if any(a in t for a in asked)], texts


def test_a_fix_of_an_error_that_says_nothing_is_no_lesson(tmp_path: Path) -> None:
    """`npm run lint` fails twice with "2 errors", api.ts is edited, it passes: a reader of
    "failed with 2 errors: fixed by changing api.ts" learns nothing, so no pattern is written;
    the same loop with the error itself is one."""
    from tests.test_offline_writer import edit

    def loop(error: str) -> list[dict[str, object]]:
        return [
            user("tidy up the api module"),
            bash("l1", "npm run lint"),
            result("l1", f"src/api.ts:12:5 {error}", True),
            edit("e1", f"{CWD}/src/api.ts", "const a = 1"),
            bash("l2", "npm run lint"),
            result("l2", f"src/api.ts:12:5 {error}", True),
            edit("e2", f"{CWD}/src/util.ts", "export const b = 2"),
            bash("l3", "npm run lint"),
            result("l3", "no problems"),
        ]

    mems, _ = learn(
        tmp_path / "a.db", write_log(tmp_path / "a.jsonl", loop("✖ 2 problems")), "onnx"
    )
    assert not [m for m in mems if m["kind"] == "pattern"], [m["text"] for m in mems]
    specific = "error  'b' is not exported from './util'  import/named"
    mems, _ = learn(tmp_path / "b.db", write_log(tmp_path / "b.jsonl", loop(specific)), "onnx")
    (pattern,) = [m["text"] for m in mems if m["kind"] == "pattern"]
    assert "is not exported" in pattern and "util.ts" in pattern


def test_a_cause_the_user_reports_is_kept_when_the_agent_acts_on_it(tmp_path: Path) -> None:
    """A pasted report or review comment names the cause ("X breaks because Y"): kept, without
    its report label, when the agent goes on to work from it; not when the agent argues it away,
    and never the user repeating the agent's own words to dispute them."""
    from tests.test_offline_writer import edit

    acted = [
        user(
            "a reviewer left this on the PR:\n"
            "Checked the export job - The nightly export fails because `write_csv()` opens the"
            " file in text mode, so Windows line endings are doubled.\n"
            "please fix it"
        ),
        edit("e1", f"{CWD}/export/job.py", "open(path, 'w', newline='')"),
        bash("t1", "pytest tests/test_export.py"),
        result("t1", "6 passed in 0.2s"),
    ]
    mems, _ = learn(tmp_path / "a.db", write_log(tmp_path / "a.jsonl", acted), "onnx")
    texts = [m["text"] for m in mems]
    assert any(
        t.startswith("The nightly export fails because `write_csv()` opens the file in text mode")
        for t in texts
    ), texts
    argued = [
        user(
            "You also said above: the upload fails because `s3.put()` times out on large files."
            "\nThe nightly export fails because `write_csv()` is missing the header row."
        ),
        say(
            "However, that is not what happens: the header row is written by `open_writer()`;"
            " the failure is the expired credentials in the job's environment."
        ),
        user("ok, fair"),
    ]
    mems, _ = learn(tmp_path / "b.db", write_log(tmp_path / "b.jsonl", argued), "onnx")
    texts = [m["text"] for m in mems]
    assert not [t for t in texts if "header row" in t or "s3.put" in t], texts


def test_the_cause_under_a_write_ups_heading_is_kept(tmp_path: Path) -> None:
    """An agent's closing write-up puts the cause under a heading ("## Root cause") in words
    no cue phrase marks: the first sentence under it is the diagnosis; what a heading only
    announces ("the error was:") is not."""
    recs = [
        user("the staging deploy keeps timing out, look into it"),
        bash("d1", "make deploy-staging"),
        result("d1", "Error: timed out waiting for the condition", True),
        bash("d2", "make deploy-staging"),
        result("d2", "deployment ready"),
        say(
            "Deployed.\n\n## Root cause\n\nThe readiness probe in `chart/values.yaml` pointed at"
            " `/healthz` on port 8080 while the app listens on 8000, so no pod ever became ready."
            "\n\n## What was wrong\nThe error was:\n\n```\ntimed out\n```\n\n## Fix\nPort 8000."
        ),
    ]
    mems, _ = learn(tmp_path / "m.db", write_log(tmp_path / "s.jsonl", recs), "onnx")
    texts = [m["text"] for m in mems]
    assert any(
        t.startswith("The readiness probe in `chart/values.yaml` pointed at `/healthz`")
        for t in texts
    ), texts
    assert not [t for t in texts if t.rstrip(".").endswith(":")], texts


def test_a_short_reply_is_written_with_the_call_it_revised(tmp_path: Path) -> None:
    """ "remember to use pagination" names its subject only with the call it answers: the
    agent's last command, run again with an argument added. The memory says both."""
    recs = [
        user("which review comments on PR 7 are still open?"),
        bash("g1", "gh api repos/acme/shop/pulls/7/comments 2>&1"),
        result("g1", '[{"id": 1, "body": "rename this"}]'),
        user("and remember to use pagination"),
        bash("g2", "gh api repos/acme/shop/pulls/7/comments --paginate 2>&1 | jq length"),
        result("g2", "143"),
        say("There are 143 comments; 12 are still open."),
    ]
    mems, _ = learn(tmp_path / "m.db", write_log(tmp_path / "s.jsonl", recs), "onnx")
    texts = [m["text"] for m in mems]
    assert (
        "Use pagination: `--paginate` (`gh api repos/acme/shop/pulls/7/comments --paginate`)."
        in texts
    ), texts
    # the same reply before an unrelated command says nothing a later session could use
    other = [*recs[:4], bash("g3", "git status"), result("g3", "clean")]
    mems, _ = learn(tmp_path / "n.db", write_log(tmp_path / "t.jsonl", other), "onnx")
    assert not [m for m in mems if "pagination" in m["text"]], [m["text"] for m in mems]


def test_a_cause_the_agent_took_back_is_not_remembered(tmp_path: Path) -> None:
    """The agent's first guess (a DNS timeout), dropped two turns later for the real cause: only
    the cause it ended with is a memory."""
    recs = [
        user("the sync job hangs on startup"),
        bash("s1", "python -m sync --once"),
        result("s1", "TimeoutError: timed out after 30s", True),
        say(
            "Found it: the job hangs because `resolve_host()` waits on a DNS timeout for the"
            " `metrics.internal` host before it opens the queue."
        ),
        bash("s2", "python -m sync --once --no-metrics"),
        result("s2", "TimeoutError: timed out after 30s", True),
        say(
            "That wasn't the cause: with metrics off it still hangs. The real cause is that"
            " `open_queue()` takes the lock in `queue.lock` and never releases it after a crash."
        ),
        bash("s3", "rm queue.lock && python -m sync --once"),
        result("s3", "synced 120 items"),
    ]
    mems, _ = learn(tmp_path / "m.db", write_log(tmp_path / "s.jsonl", recs), "onnx")
    texts = [m["text"] for m in mems]
    assert not [t for t in texts if "DNS" in t], texts
    assert any("`open_queue()` takes the lock" in t for t in texts), texts


BARE_REJECTION = (
    "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it"
    " was a file edit, the new_string was NOT written to the file). STOP what you are doing and"
    " wait for the user to tell you how to proceed."
)


def test_a_destructive_step_rejected_without_a_word_is_a_guard(tmp_path: Path) -> None:
    """A rule shown by action alone: the agent prunes docker, its `docker volume rm` is rejected
    with no reason and the user fixes the database by hand. A rejected harmless call, or one
    whose reason says what to do, writes no such guard."""
    recs = [
        user("the integration db is in a weird state, clean it up"),
        bash("d1", "docker system prune -af"),
        result("d1", "Total reclaimed space: 2.1GB"),
        bash("d2", "docker volume rm shop_pgdata"),
        result("d2", BARE_REJECTION, True),
        user("I recreated the database myself, carry on with the migration"),
        bash("d3", "alembic upgrade head"),
        result("d3", "INFO  [alembic] Running upgrade -> 42"),
        bash("d4", "ls migrations"),
        result("d4", BARE_REJECTION, True),
    ]
    mems, _ = learn(tmp_path / "m.db", write_log(tmp_path / "s.jsonl", recs), "onnx")
    guards = [m["text"] for m in mems if m["kind"] == "guard"]
    assert guards == [
        "Ask before running `docker volume rm shop_pgdata` or a step like it:"
        " the user rejected it without a word."
    ], [m["text"] for m in mems]


def test_a_sentence_that_lost_its_subject_is_no_memory(tmp_path: Path) -> None:
    """A sentence whose subject was in the one before ("It must always run first.") or that
    has none ("Never executes the retry logic.") says nothing to a later reader: it is turned
    away with the reason; the same rule with its subject named is kept."""
    recs = [
        user("the hidden commands skip telemetry, check the tracking path"),
        bash("t1", "go test ./telemetry/..."),
        result("t1", "ok  telemetry 0.2s"),
        user("It must always run first. Never executes the retry logic."),
        say("Understood."),
        user("Move the tracking call into `track()`. Then I don't have to repeat it everywhere."),
        say("Done."),
        user("No, only if the file is tracked by git. Otherwise refuse with an error."),
        say("Understood."),
        user("The migration check must always run before the server starts."),
    ]
    mems, eps = learn(tmp_path / "m.db", write_log(tmp_path / "s.jsonl", recs), "onnx")
    texts = [m["text"] for m in mems]
    assert not [t for t in texts if t.startswith(("It ", "Never executes"))], texts
    # a consequence or a condition of the sentence before ("Then I ...", "only if ...")
    assert not [t for t in texts if "have to repeat" in t or "tracked by git" in t], texts
    assert any(t.startswith("The migration check must always run") for t in texts), texts
    rejected = [r for e in eps for r in e["episode"]["ops"] or [] if r.get("action") == "rejected"]
    assert any(r["reason"] == "its subject is in a sentence before it" for r in rejected), rejected


def test_a_summary_keeps_what_was_learned_not_the_story_of_the_session(tmp_path: Path) -> None:
    """Claude Code's compaction summary lists errors and fixes; an entry that tells how the
    conversation went ("I initially thought ...; the user pointed out ...; led to deeper
    investigation") teaches nothing, the entry with the cause and the fix does."""
    from tests.test_offline_writer import _rec

    summary = (
        "This session is being continued from a previous conversation.\n\n"
        "1. Primary Request and Intent:\n   Fix the export job.\n\n"
        "4. Errors and fixes:\n"
        "   - **Export theory**: I initially thought the CSV writer was never called; the user"
        " pointed out the log shows it ran; led to deeper investigation of the job runner.\n"
        "   - **Doubled line endings on Windows**: `write_csv()` opened the file in text mode,"
        " because of that every row ended in CRLF twice; fixed by passing `newline=''`.\n\n"
        "5. Pending Tasks:\n   - none\n"
    )
    recs = [
        user("the export still looks wrong on windows"),
        _rec("user", summary, isCompactSummary=True),
        bash("x1", "pytest tests/test_export.py"),
        result("x1", "6 passed in 0.2s"),
    ]
    mems, _ = learn(tmp_path / "m.db", write_log(tmp_path / "s.jsonl", recs), "onnx")
    texts = [m["text"] for m in mems]
    assert any(t.startswith("Doubled line endings on Windows: `write_csv()`") for t in texts), texts
    assert not [t for t in texts if "initially thought" in t], texts
    # the task's opening report of how things stand is no rule either
    assert not [t for t in texts if "looks wrong" in t], texts


def test_a_pasted_plan_leaves_no_plan_items_behind(tmp_path: Path) -> None:
    """A plan the user pastes for the agent to carry out is the task: its steps ("4. `router.ts`
    - add the retry") are no memories, while the cause its problem section states is one."""
    from tests.test_offline_writer import edit

    plan = (
        "Implement the following plan:\n\n# Retry uploads\n\n## Problem\n\n"
        "Uploads fail on flaky networks because `upload_part()` gives up after the first"
        " `ConnectionResetError`.\n\n## Steps\n\n"
        "1. `client.py` - wrap `upload_part()` in the retry helper\n"
        "2. `config.py` - add `UPLOAD_RETRIES = 3`\n"
        "3. Update the tests\n"
        "4. `router.ts` - add the retry\n"
    )
    recs = [
        user(plan),
        edit("p1", f"{CWD}/client.py", "retry(upload_part)"),
        edit("p2", f"{CWD}/config.py", "UPLOAD_RETRIES = 3"),
        bash("p3", "pytest"),
        result("p3", "20 passed in 1.1s"),
    ]
    mems, _ = learn(tmp_path / "m.db", write_log(tmp_path / "s.jsonl", recs), "onnx")
    texts = [m["text"] for m in mems]
    assert not [t for t in texts if t[:1].isdigit() or "add the retry" in t], texts
    assert not [t for t in texts if t.startswith(("Implement", "Update the tests"))], texts
    assert any(
        t.startswith("Uploads fail on flaky networks because `upload_part()`") for t in texts
    ), texts


def test_a_rejected_edit_is_remembered_with_what_it_added(tmp_path: Path) -> None:
    """ "no, a second function, don't overload this one" says what to do only with what was
    rejected: the memory names the line the rejected edit added."""
    from tests.test_offline_writer import _rec

    old = "def export(rows):\n    return render(rows)\n"
    new = (
        "def export(rows, as_csv=False):\n    return render_csv(rows) if as_csv else render(rows)\n"
    )
    recs = [
        user("the report needs a csv download too"),
        _rec(
            "assistant",
            [
                {
                    "type": "tool_use",
                    "id": "e1",
                    "name": "Edit",
                    "input": {
                        "file_path": f"{CWD}/report/export.py",
                        "old_string": old,
                        "new_string": new,
                    },
                }
            ],
        ),
        result(
            "e1",
            "The user doesn't want to proceed with this tool use. The tool use was rejected (eg."
            " if it was a file edit, the new_string was NOT written to the file). To tell you how"
            " to proceed, the user said:\nno, write a second function, don't overload this one"
            " with flags",
            True,
        ),
    ]
    mems, _ = learn(tmp_path / "m.db", write_log(tmp_path / "s.jsonl", recs), "onnx")
    texts = [m["text"] for m in mems]
    assert any(
        "second function" in t
        and "(on rejecting an edit of export.py that added `def export(rows, as_csv=False):`)" in t
        for t in texts
    ), texts


def test_a_rejected_edit_is_remembered_with_what_was_done_instead(tmp_path: Path) -> None:
    """A rejection followed to its outcome: the user refuses a hand-written list of known keys
    and asks for the decoder's own option; the agent answers "You're right. I can use `X`" and
    does it. The memory says what was refused and what was taken; when the answer names no
    code, what the next edit of the file added is taken instead."""
    from tests.test_offline_writer import edit

    load = f"{CWD}/config/load.go"

    def learned(recs: list[dict[str, object]], name: str) -> list[str]:
        mems, _ = learn(
            tmp_path / f"{name}.db", write_log(tmp_path / f"{name}.jsonl", recs), "onnx"
        )
        return [m["text"] for m in mems]

    def done_instead(texts: list[str]) -> bool:
        return any(
            "allowedConfigKeys" in t and "done instead: `dec.DisallowUnknownFields()`" in t
            for t in texts
        )

    refused = "The user doesn't want to proceed with this tool use. The tool use was rejected"
    recs = [
        user("unknown keys in config.json must be an error"),
        edit("e1", load, "var allowedConfigKeys = map[string]bool{"),
        result(
            "e1",
            refused + " (eg. if it was a file edit, the new_string was NOT written to the file)."
            " To tell you how to proceed, the user said:\nno, use the decoder's built-in strict"
            " option rather than a list of keys",
            True,
        ),
        say("You're right. I can use `dec.DisallowUnknownFields()` on the decoder."),
        edit("e2", load, "dec.DisallowUnknownFields()"),
        result("e2", "The file has been updated successfully."),
    ]
    texts = learned(recs, "taken")
    assert done_instead(texts), texts
    # the answer names no code: the next edit of the file says what was done
    recs[3] = say("You're right, let me change that.")
    texts = learned(recs, "edited")
    assert done_instead(texts), texts
    # the same edit made again after the reason is no "instead"
    recs[4] = edit("e2", load, "var allowedConfigKeys = map[string]bool{")
    texts = learned(recs, "again")
    assert not any("done instead" in t for t in texts), texts


def test_a_line_number_a_doubt_or_a_wish_is_no_memory(tmp_path: Path) -> None:
    """What points at one line of the code as it is now, voices a doubt with no rule in it, or
    wishes for something done in this task says nothing to a later session: turned away with
    its reason; a rule said beside them is kept."""
    recs = [
        user("clean up the retry loop in the sync worker"),
        bash("t1", "go test ./sync/..."),
        result("t1", "ok  sync 0.3s"),
        bash("d1", "deployctl check deploy.yaml"),
        result("d1", "error: deploy.yaml: unknown field retries", True),
        say("The issue is that `retries: 3` on line 31 isn't a valid field for the deploy config."),
        bash("d2", "deployctl check deploy.yaml"),
        result("d2", "deploy.yaml: ok"),
        user("I'm not sold this backoff works really."),
        say("It doubles up to 30 s."),
        user("The retry totals should be in the sync log, would be great if we can validate this."),
        say("They are: 7 retries, 7 log lines."),
        user("The sync worker must never retry a request that returned 409."),
    ]
    mems, eps = learn(tmp_path / "m.db", write_log(tmp_path / "s.jsonl", recs), "onnx")
    texts = [m["text"] for m in mems]
    assert not [t for t in texts if "line 31" in t or "not sold" in t or "great if" in t], texts
    assert any(t.startswith("The sync worker must never retry") for t in texts), texts
    rejected = [r for e in eps for r in e["episode"]["ops"] or [] if r.get("action") == "rejected"]
    reasons = {r["reason"] for r in rejected}
    assert {
        "about one line of the code as it is now, not a lasting rule",
        "a doubt, not a rule",
        "a wish for this task, not a rule",
    } <= reasons, rejected


def test_a_cause_said_in_passing_is_found_by_the_lesson_model(tmp_path: Path) -> None:
    """No cue word of the diagnosis rules, no error before it, no correction: the agent explains
    a cause in prose. The lesson model (`text.lesson_scorer`) finds that sentence; the task that
    opened the episode and the agent's narration stay out."""
    recs = [
        user("two users see each other's language on the product page, please look into it"),
        say("Let me look at the renderer first. Now I'll read the cache code."),
        bash("c1", "grep -n cache_key app/render.py"),
        result("c1", "41:    key = cache_key(page.id)"),
        say(
            "The page cache key in `render_page()` leaves out the locale, so two users with "
            "different languages get the same rendered page, and clearing `CACHE_DIR` only hides "
            "it until the next request."
        ),
        bash("c2", "pytest -q"),
        result("c2", "============ 12 passed in 0.30s ============"),
    ]
    mems, _ = learn(tmp_path / "m.db", write_log(tmp_path / "s.jsonl", recs), "onnx")
    texts = [m["text"] for m in mems]
    (cause,) = [t for t in texts if "leaves out the locale" in t]
    assert cause.startswith("The page cache key in `render_page()`"), texts
    assert not [t for t in texts if "each other" in t or "Let me" in t or "I'll" in t], texts


def test_the_story_of_an_edit_is_no_lesson(tmp_path: Path) -> None:
    """An agent that tells what its change does ("This change adds ...", "To fix this, we need
    to modify ...", "Let's modify the test to ...") says what the diff already holds: none of it
    is a memory (found in aider's own chat history, where nearly every reply ends so)."""
    recs = [
        user("add a paginate option to the diff command"),
        say(
            "This change adds the `paginate` parameter to the `cmd_diff` method with a default "
            "value of `False`, which keeps `cmd_web` from paging its output."
        ),
        bash("t1", "pytest -q tests/test_commands.py"),
        result(
            "t1", "E   TypeError: cmd_diff() got an unexpected keyword argument 'paginate'", True
        ),
        say(
            "To fix this, we need to modify the `Commands` class in `aider/commands.py` to accept"
            " and pass on the `paginate` parameter. Let's modify the test to remove the check for "
            "the `edit_format` attribute and focus on what `SwitchCoder` actually has."
        ),
        bash("t2", "pytest -q tests/test_commands.py"),
        result("t2", "============ 14 passed in 0.41s ============"),
        say(
            "These changes make `paginate` an optional parameter of `cmd_diff`, maintaining "
            "consistency with the `AutoCompleter` class."
        ),
    ]
    mems, _ = learn(tmp_path / "m.db", write_log(tmp_path / "s.jsonl", recs), "onnx")
    texts = [m["text"] for m in mems]
    told = ("This change", "we need to modify", "These changes", "the test to remove")
    assert not [t for t in texts if any(x.lower() in t.lower() for x in told)], texts


def test_the_opening_work_order_is_no_rule_but_the_review_pasted_with_it_is(
    tmp_path: Path,
) -> None:
    """The message that opens an episode orders the task ("please address ..."): not a rule. The
    review comment pasted into the same message states how the code must be: the lesson model
    keeps it."""
    recs = [
        user(
            "Please address the review comment below.\n\n"
            "Reviewer: Reading `settings.toml` in every request handler means a typo in it is "
            "only reported when the first request arrives, so the loader has to validate the "
            "whole file once at start-up instead."
        ),
        say("I'll move the validation to start-up."),
        bash("c1", "pytest -q"),
        result("c1", "============ 9 passed in 0.20s ============"),
    ]
    mems, _ = learn(tmp_path / "m.db", write_log(tmp_path / "s.jsonl", recs), "onnx")
    texts = [m["text"] for m in mems]
    assert [t for t in texts if "validate the whole file once at start-up" in t], texts
    assert not [t for t in texts if "address the review" in t], texts


def test_a_work_order_later_in_the_task_is_no_rule(tmp_path: Path) -> None:
    """Work orders typed after the task opened ("Fix this: <error>", "Finally do that to X too")
    order more of the same task: the held-out reader found them stored as preferences. Only what
    states how things are or must be stays."""
    recs = [
        user("rename the `total` helper to `cart_total` in the cart module"),
        bash("c1", "go build ./..."),
        result("c1", "./cart.go:14:2: undefined: total", True),
        user(
            "Fix this: cannot use total (variable of type func() int) as int value in argument "
            "to fmt.Sprintf in the checkout handler of cart.go."
        ),
        bash("c2", "go build ./..."),
        result("c2", "ok"),
        user(
            "Great, now finally do that to `TestCartTotal_WithDiscountAndRoundingRules` in cart_test.go "
            "too, since the test helper calls the old name in three of its table cases."
        ),
        bash("c3", "go test ./..."),
        result("c3", "ok  shop 0.3s"),
    ]
    mems, _ = learn(tmp_path / "m.db", write_log(tmp_path / "s.jsonl", recs), "onnx")
    texts = [m["text"] for m in mems]
    assert not [t for t in texts if t.startswith(("Fix this", "Finally", "Great"))], texts


def test_how_the_opening_request_wants_its_task_done_is_no_rule(tmp_path: Path) -> None:
    """The message that opens a task says how that task is to be done ("ensure that ... is
    strict", "use X instead of Y", "I want the errors to name the key"): the task, not a rule for
    the next sessions. A norm said to last in the same message ("always ...") is one."""
    recs = [
        user(
            "Refactor the settings loader in config.go. Ensure that parsing of settings.json is "
            "strict and fails on unknown keys. Use json.Decoder instead of unmarshalling into a "
            "map. I want the error to name the unknown key. And always run `make lint` before "
            "you commit anything in this repo."
        ),
        say("I'll switch the loader to json.Decoder with DisallowUnknownFields."),
        bash("c1", "go test ./..."),
        result("c1", "ok  app/config 0.2s"),
    ]
    mems, _ = learn(tmp_path / "m.db", write_log(tmp_path / "s.jsonl", recs), "onnx")
    texts = [m["text"] for m in mems]
    assert [t for t in texts if "always run `make lint`" in t.lower()], texts
    assert not [
        t for t in texts if "strict" in t or "instead of unmarshalling" in t or "I want" in t
    ], texts


def test_a_cause_taken_back_in_a_later_episode_is_deprecated(tmp_path: Path) -> None:
    """A cause written from one episode, which the agent takes back in a later one when the user
    quotes it ("You're right, I was wrong"), does not outlive the session: it is deprecated."""
    recs = [
        user("the nightly export job is slow on startup, find out why"),
        bash("s1", "python -m export --once --profile"),
        result("s1", "startup 31.8s, of which resolve_host 30.0s"),
        say(
            "Found it: startup is slow because `resolve_host()` waits on a DNS timeout for the"
            " `metrics.internal` host before the export opens its database connection."
        ),
        user("ok thanks. now please add a --dry-run flag to the export command"),
        bash("s2", "python -m export --dry-run"),
        result("s2", "dry run: 120 rows would be exported"),
        user(
            "You also said `resolve_host()` waits on a DNS timeout for the `metrics.internal`"
            " host. But metrics is disabled in this config, so there is no lookup at all, or"
            " what do I miss?"
        ),
        say(
            "You're right, I was wrong: with metrics disabled `resolve_host()` is never called,"
            " so the DNS timeout is not the cause of the slow startup."
        ),
    ]
    mems, eps = learn(tmp_path / "m.db", write_log(tmp_path / "s.jsonl", recs), "onnx")
    texts = [m["text"] for m in mems if m["status"] != "deprecated"]
    assert not [t for t in texts if "DNS timeout" in t], texts
    ops = [o for e in eps for o in e["episode"]["ops"] or []]
    assert len(eps) >= 2, eps
    assert [o for o in ops if o.get("action") not in ("rejected",) and "DEPRECATE" in str(o)], ops


def test_a_rule_that_points_back_is_written_from_the_pair(tmp_path: Path) -> None:
    """ "This should not be changed, only the `--local-dev` flag should ..." names its subject
    only with what it answers; the agent takes it and says the rule whole. The memory is the
    rule as the agent restated it, the user's words stay on the episode as its evidence; with
    an answer that restates nothing the user's words are the memory, as before."""
    said = (
        "`tool enable` now installs the wrapper script by default.\n\nThis should not be"
        " changed, only the `--local-dev` flag should install the wrapper script"
    )
    recs = [
        user("add a --local-dev flag to `tool enable` that installs hooks through a wrapper"),
        bash("a1", "go test ./cmd/tool/..."),
        result("a1", "ok  \texample.com/tool/cmd/tool\t0.4s"),
        say("Done: `tool enable` installs hooks through scripts/wrapper.sh."),
        user(said),
        say(
            "You're absolutely right! Let me fix that. The default `tool enable` should install"
            " hooks that call `tool` directly, and only `tool enable --local-dev` should install"
            " the wrapper script."
        ),
        bash("a2", "go test ./cmd/tool/..."),
        result("a2", "ok  \texample.com/tool/cmd/tool\t0.4s"),
    ]
    mems, eps = learn(tmp_path / "m.db", write_log(tmp_path / "s.jsonl", recs), "onnx")
    texts = [m["text"] for m in mems if m["key"] is None]
    restated = (
        "The default `tool enable` should install hooks that call `tool` directly, and only"
        " `tool enable --local-dev` should install the wrapper script."
    )
    assert restated in texts, texts
    assert not [t for t in texts if t.startswith("This ")], texts
    assert any(
        "This should not be changed" in (ev.get("text") or "")
        for e in eps
        for ev in e["episode"]["events"]
    )
    # the same words answered by the agent's next step alone are written as they were said
    plain = [*recs[:5], say("Let me fix that."), *recs[6:]]
    mems, _ = learn(tmp_path / "n.db", write_log(tmp_path / "t.jsonl", plain), "onnx")
    texts = [m["text"] for m in mems if m["key"] is None]
    assert not [t for t in texts if t.startswith("The default")], texts


def test_a_fact_of_the_project_said_in_passing_is_kept(tmp_path: Path) -> None:
    """A user's reply that states how the project is ("the e2e tests run against the preview
    deploy, not localhost") is a fact a later session needs, kept as an invariant; a pick among
    options and the state of the work said the same way are not."""
    recs = [
        user("add a v2 of the orders endpoint with an e2e test"),
        say("Should the e2e test start a local server on port 8000?"),
        user("the e2e tests run against the preview deploy, not localhost"),
        say("Understood, I'll point the test at the preview URL."),
        bash("o1", "pytest tests/test_orders.py"),
        result("o1", "5 passed in 0.3s"),
        say("Two options: a new router module, or a prefix on the existing one."),
        user("the second one is better, not the first"),
        say("Done. The route is registered."),
        user("the router is done, not the docs"),
    ]
    mems, _ = learn(tmp_path / "m.db", write_log(tmp_path / "s.jsonl", recs), "onnx")
    facts = [(m["kind"], m["text"]) for m in mems if "preview deploy" in m["text"]]
    assert facts == [
        ("invariant", "The e2e tests run against the preview deploy, not localhost.")
    ], mems
    texts = [m["text"] for m in mems]
    assert not [t for t in texts if "second one" in t or "router is done" in t], texts
