"""A memory is written as a lesson, not as a line of chat (`squirrel/text/lesson_form.py`)."""

from __future__ import annotations

import pytest

from reos_memory.squirrel.text.lesson_form import (
    cause_before,
    consequence_of_before,
    from_lets,
    impersonal,
    is_question,
    is_request,
    lost_subject,
    one_off,
    outcome,
    plain,
    proposed_rule,
    restated,
    taken_code,
    tells_an_edit,
    third_person,
    unanchored,
)


@pytest.mark.parametrize(
    ("said", "lesson"),
    [
        (
            "Uh oh! Both hooks fired - they MERGE, not override!",
            "Both hooks fired - they MERGE, not override.",
        ),
        (
            "Sure, but the cli should create the folder itself.",
            "The cli should create the folder itself.",
        ),
        ("OK so the config is read twice at start.", "The config is read twice at start."),
        # said trailing off, or exclaimed: a lesson ends with a period (code keeps its "!")
        (
            "Don't leave all the tests to the very end...",
            "Don't leave all the tests to the very end.",
        ),
        ("Wow, `x != y` holds here!", "`x != y` holds here."),
        ("Found it: the cache key leaves out the locale.", "The cache key leaves out the locale."),
        (
            "Looking at the code, I found an issue. The loader drops unknown keys.",
            "The loader drops unknown keys.",
        ),
        ("Yes, but we don't need to commit.", "We don't need to commit."),
        ("No", "No"),  # nothing would remain: unchanged (the junk gate judges it)
        (
            "The issue is that `os.OpenFile` with `O_CREATE` won't create parent directories.",
            "`os.OpenFile` with `O_CREATE` won't create parent directories.",
        ),
        (
            "The real problem was that the cache key leaves out the locale.",
            "The cache key leaves out the locale.",
        ),
        ("The issue is that it fails.", "The issue is that it fails."),  # too little would remain
        # politeness is no part of the rule
        ("Please use the project's logger.", "Use the project's logger."),
        (
            "Keep each commit with working code please (no broken state)",
            "Keep each commit with working code (no broken state)",
        ),
        ("Use the logger, please.", "Use the logger."),
        ("The please-wait screen must stay.", "The please-wait screen must stay."),
        # discourse markers before the statement
        (
            "Taking a step back: the retry loop hides the real timeout.",
            "The retry loop hides the real timeout.",
        ),
        (
            "To be clear, the staging cluster is eu-west.",
            "The staging cluster is eu-west.",
        ),
        (
            "In other words, the parser keeps unknown keys.",
            "The parser keeps unknown keys.",
        ),
        ("Of course, the cache must be warmed first.", "The cache must be warmed first."),
        # code keeps its case where the sentence starts with it
        (
            "The root cause is that git.PlainOpen swallows the error.",
            "git.PlainOpen swallows the error.",
        ),
        (
            "Found it: openRepo() returns nil outside a repository.",
            "openRepo() returns nil outside a repository.",
        ),
        # an approval before what is corrected
        (
            "That looks good, but the flag must stay off by default.",
            "The flag must stay off by default.",
        ),
        ("Looks fine, the retries need a jitter.", "The retries need a jitter."),
        (
            "The module looks good but use `for_each` for these buckets.",
            "Use `for_each` for these buckets.",
        ),
        ("lol no, never force push to main", "Never force push to main"),
        ("ehh, the cache key must include the locale", "The cache key must include the locale"),
        ("thats wrong, the header row is data", "The header row is data"),
        # a marker's words with no comma or colon after them are the sentence's own
        (
            "In short mode the CLI must never print secrets.",
            "In short mode the CLI must never print secrets.",
        ),
        ("That said function must stay pure.", "That said function must stay pure."),
        ("Obviously not.", "Obviously not."),  # nothing would remain: unchanged
        # a tracker's id the note was filed under
        ("gqc.4: Added `:state` before the attribute.", "Added `:state` before the attribute."),
        ("ABC-123: never log tokens in the handler", "Never log tokens in the handler"),
        ("v1.2: the API moved to /v2", "v1.2: the API moved to /v2"),
    ],
)
def test_openers_of_conversation_go(said: str, lesson: str) -> None:
    assert plain(said) == lesson


def test_lets_is_an_order_or_the_moments_plan() -> None:
    assert (
        from_lets("Let's not mock the database in these tests")
        == "Do not mock the database in these tests"
    )
    assert from_lets("let's use pnpm in every package") == "Use pnpm in every package"
    assert from_lets("Let's pause, if the settings overwrite all hooks we can change it") is None
    assert from_lets("let's see what fails first") is None
    assert from_lets("Keep the cache per request.") == "Keep the cache per request."


@pytest.mark.parametrize(
    ("question", "rule"),
    [
        (
            "Can we use our logging framework? should be WARN",
            "Use the project's logging framework. Should be WARN.",
        ),
        ("why not adding .entire/.gitignore?", "Add .entire/.gitignore."),
        (
            "why are we not just using the `entire enable` command?",
            "Use the `entire enable` command.",
        ),
        (
            "Can't we make parsing strict? (on rejecting Edit settings.go)",
            "Make parsing strict. (on rejecting Edit settings.go)",
        ),
        ("is there no library to do UUID validation??", "Use a library to do UUID validation."),
        # asking whether one exists is a question, not a proposal
        ("Is there any way to tell if a restart is pending?", None),
        ("Is there a flag to skip the hooks?", None),
        ("what does upper bound mean here?", None),
        ("Do we need this at all?", None),
        (
            "Do we need the change in CLAUDE.md at all then? it should just work, right?",
            "The change in CLAUDE.md is not needed. It should just work.",
        ),
        ("do we even need our wrapper script?", "The project's wrapper script is not needed."),
        ("Do we really need to call flush() here?", "There is no need to call flush()."),
        ("Do we need a migration?", None),  # a real question: nothing doubted
        (
            "wouldn't it be better to keep the parser in its own package?",
            "Keep the parser in its own package.",
        ),
        ("Isn't it simpler to pass the config as an argument?", "Pass the config as an argument."),
        ("what if we cache the parsed config per request?", "Cache the parsed config per request."),
        ("what if we just drop it?", None),  # what it proposes is in the turn before
        ("How about we move this to the strategy package?", None),  # (this: the turn before)
        ("how about we cache the parsed config?", "Cache the parsed config."),
        ("Can we use our logger? what do you think?", None),  # a second question after it
        ("why not wondering about it?", None),
        ("Shouldn't it be called, since it's in finally: ?", None),  # (it: the turn before)
    ],
)
def test_a_proposal_asked_as_a_question_has_a_rule(question: str, rule: str | None) -> None:
    assert proposed_rule(question) == rule


def test_what_became_of_a_proposal() -> None:
    assert outcome("Good idea - I'll switch to it.", None) == "taken"
    assert (
        outcome("It's already there. Let me check for import cycles.\nSafe. Let me use it.", None)
        == "taken"
    )
    assert outcome(None, "thanks", acted=True) == "taken"  # it went on and did it
    assert (
        outcome("Caching it there would break the refresh: the token expires.", "ok, fair")
        == "argued"
    )
    assert (
        outcome("However, the token expires hourly, so a cache would serve stale ones.", None)
        == "argued"
    )
    assert outcome(None, None) == "unknown"  # the session ends there
    assert outcome("Let me look at the file.", None) == "unknown"


def test_questions_are_recognised() -> None:
    assert is_question("Can we use X? should be WARN")
    assert is_question("Why not Y?? (on rejecting Edit a.go)")
    assert not is_question("Use X (why? it is faster).") and not is_question("Use a?b syntax.")
    # typed without its mark
    assert is_question("Can we use prompt toolkits filesystem autocompleter for completions_read.")
    assert is_question("shouldn't we cache the token in load_config")
    assert not is_question("Cannot use the shared runner for release builds.")


@pytest.mark.parametrize(
    ("said", "rule"),
    [
        ("I think we should separate the hook types.", "Separate the hook types."),
        ("We should never log tokens.", "Never log tokens."),
        ("you must not push to main", "Do not push to main"),
        (
            "We don't want call-site branching on the agent if we can help it",
            "Avoid call-site branching on the agent where possible",
        ),
        ("I don't want to modify the shared config.", "Do not modify the shared config."),
        ("I don't want to be asked every time.", "I don't want to be asked every time."),
        ("I don't want to have to restart it.", "I don't want to have to restart it."),
        (
            "I want the formula to be called tap-cli (on rejecting the plan)",
            "The formula should be called tap-cli (on rejecting the plan)",
        ),
        (
            "I did not say commit anything (on rejecting `git add x`)",
            "Do not commit anything unless asked (on rejecting `git add x`)",
        ),
        ("I'd like the formula to be called tap-cli.", "The formula should be called tap-cli."),
        (
            "For every test in parser_test.go i'd like to see literal expectations instead of"
            " substring checks.",
            "For every test in parser_test.go, prefer literal expectations instead of substring"
            " checks.",
        ),
        (
            "I would like to have integration tests for the queue.",
            "Prefer integration tests for the queue.",
        ),
        ("I'd like to know why it fails.", "I'd like to know why it fails."),  # a question
        ("The cache is per request.", "The cache is per request."),
    ],
)
def test_the_people_leave_the_rule(said: str, rule: str) -> None:
    assert impersonal(said) == rule


TAKEN = (
    "You're absolutely right! Let me fix that. The default `tool enable` should install the"
    " binary's hooks, and only `tool enable --local-dev` should install the wrapper script."
    " Now let me update the docs:"
)


def test_a_rule_that_points_back_is_written_as_the_agent_restated_it() -> None:
    rule = (
        "This should not be changed, only the `--local-dev` flag should install the wrapper script."
    )
    assert restated(rule, TAKEN) == (
        "The default `tool enable` should install the binary's hooks, and only"
        " `tool enable --local-dev` should install the wrapper script."
    )
    # what was rejected stays the caller's (the note is not read as the rule's words)
    assert restated(rule + " (on rejecting an edit of enable.go)", TAKEN) is not None
    # a rule that reads alone keeps its words; an answer that does not take it, or restates
    # nothing of it, or only narrates its next step, gives nothing
    assert restated("Only `--local-dev` installs the wrapper script.", TAKEN) is None
    assert restated(rule, "Hmm. " + TAKEN) is None
    assert restated(rule, "You're right! The release notes should mention the date.") is None
    assert (
        restated(rule, "Good idea. I'll make only the `--local-dev` flag install the wrapper.")
        is None
    )
    assert restated(rule, None) is None


@pytest.mark.parametrize(
    ("text", "lost"),
    [
        ("Never executes the defaulting logic.", True),
        ("Uses the cache for every call.", True),
        ("It must happen in flush.", True),
        ("This breaks the build on every machine.", True),
        ("It must happen in `flush()`.", False),  # names what it is about
        ("Tests fail when the cache is cold.", False),
        ("Sometimes the build fails on CI.", False),
        ("Use the project logger.", False),
        ("Process the queue before the cache.", False),
        ("Focus the tests on the parser.", False),
    ],
)
def test_lost_subject(text: str, lost: bool) -> None:
    assert lost_subject(text) is lost


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("Unused variable retryCount at line 212 - set but never read.", "one line of the code"),
        ("The `timeout: 5` on line 14 is not a field the deploy config knows.", "one line"),
        ("See lines 40-52 of the parser for the fallback.", "one line"),
        ("I'm not sold this approach works.", "a doubt"),
        ("Not sure this is the right place for the cache.", "a doubt"),
        ("It would be great if we can check the totals add up.", "a wish"),
        ("The export should keep the ids, it'd be nice to see them in the report.", "a wish"),
        ("The test is failing because the session path isn't being stored.", "a failure now"),
        ("This integration test keeps failing since the fixture changed.", "a failure now"),
        # lasting rules stay
        ("Lines longer than 100 characters fail the lint step.", None),
        ("I'm not sure why, but the tests must run with TZ=UTC.", None),
        ("Always pass --frozen-lockfile to pnpm install in CI.", None),
        ("A test that writes to $HOME fails in CI: point HOME at a temp dir.", None),
    ],
)
def test_what_is_about_the_moment(text: str, why: str | None) -> None:
    got = one_off(text)
    assert (got is None) if why is None else (got is not None and why in got), got


@pytest.mark.parametrize(
    ("text", "order"),
    [
        ("add a discount field to the cart and make sure the tests pass", True),
        ("Please fix the failing test in `cart_test.py`.", True),
        ("can you update the changelog", True),
        ("ok, now refactor the loader", True),
        ("Great, now finally do that to `test_totals` too", True),  # the same work, once more
        ("and then do the same for the exporter", True),
        ("Fix this: cannot use err (variable of type error) as string value", True),
        ("add a test for every bug fix, always", False),  # a rule word: a standing rule
        ("never run the migrations against production", False),
        ("Update the docs whenever the CLI flags change; they must match.", False),
        ("The loader drops unknown keys silently.", False),
        ("the staging deploy reads `deploy/staging.env`, not `.env`", False),
        # a turn typed in lowercase: what follows the order is its spec, unless said to last
        ("Make a CachedLoader subclass of Loader. it should override fetch as async.", True),
        ("Refactor `render` into methods. the main one should call each of them.", True),
        ("Add a retry to the uploader. it must always back off.", False),
        ("add tests for the parser. they must not hit the network.", False),
    ],
)
def test_a_work_order_is_the_task_not_a_rule(text: str, order: bool) -> None:
    assert is_request(text) is order


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("I need to check where the registry is defined.", "the speaker's next step, not a lesson"),
        (
            "Looking at the test file, I can see the mock is reused.",
            "the speaker's next step, not a lesson",
        ),
        (
            "One concern: I'll verify the handler is registered.",
            "the speaker's next step, not a lesson",
        ),
        (
            "However, that is not what happens: the header is written later.",
            "an answer to the sentence before it",
        ),
        ("\u2705 All unit tests pass \u2705 Lint is clean", "a checklist of results, not a lesson"),
        (
            "\u2502 line 31: field retry not found Error: the process failed with exit code 1.",
            "a line of a tool's output, not a lesson",
        ),
        (
            "The old `stage()` helper still exists in `common.go` but is now only called from the"
            " manual path.",
            "the state of the work at the moment, not a lesson",
        ),
        (
            "The issue is now that the remote branches are not fetched.",
            "the state of the work at the moment, not a lesson",
        ),
        ("The loader drops unknown keys silently, so typos go unreported.", None),
        ("Now that the cache is keyed by locale, each user gets their own page.", None),
        # the story of an edit (aider's replies end with one)
        *[
            (told, "the story of an edit, not a lesson")
            for told in (
                "This change adds the `paginate` parameter to `cmd_diff` with a default of `False`.",
                "These changes will add the `--beta` flag to the argument parser.",
                "The new implementation creates a `Spinner` and calls `end()` when done.",
                "To fix this, we need to modify the `RepoMap` class to accept the `repo` parameter.",
                "To address the issue with YAML files, we need to modify `main()` in `cli.py`.",
                "First, we need to import `all_fences` at the top of the file.",
                "In `test_map_tokens`, we've added a return value for `max_map_tokens`.",
                "You're right, we need to modify the test to use `os.path.samefile`.",
                "Let's modify the test to remove the check for the `edit_format` attribute.",
                "This test will create a temporary file and read it back with `--read`.",
                "If the class needs the repo, you may need to modify `RepoMap` to accept it.",
                "In this case, we don't need to make any further modifications to `test_add`.",
                "We removed the `content = None` assignments, as they're now unnecessary.",
                "The `get_head()` method we added to `GitRepo` will handle an empty repository.",
                "The changes in the REPLACE section address the issue with `confirm()`.",
                "This test ensures that the `--read` files end up in `read_only`.",
                "Both tests mock the `fetch_page` method to return a fixed body.",
                "The new test `TestExport_KeepsUserRows` verifies that rows a user added stay.",
                "The new test test_read_only checks that `--read` files are never edited.",
                "In the `blame` function, instead of the current files, we should get the files"
                " at the `end_tag`.",
                "Finally, it asserts that `refresh` was called once with `files`.",
                "In this corrected version, the wrapper is returned directly from the factory.",
                "The functionality remains the same, but it now lives on the `Exporter` class.",
                "To make this test pass, you'll need to implement the `--apply` option.",
                "This should resolve the `TypeError`, as the method now returns a tuple.",
                "If a `KeyError` is raised, we catch it and add a note to the results.",
                "The method takes a path as an argument and adds it to `read_only` if missing.",
            )
        ],
        (
            "Based on the error message, it appears there's a conflict with the `tokenizers` "
            "package version.",
            "a guess, not a cause found",
        ),
        (
            "The error message suggests that the test fails because the paths differ.",
            "a guess, not a cause found",
        ),
        (
            "Temporarily simplify the `send` method to raise a known exception.",
            "the state of the work at the moment, not a lesson",
        ),
        (
            "Module not found: Error: Can't resolve './settings/page' (anonymous) @ polyfills.js:12",
            "a line of a tool's output, not a lesson",
        ),
        (
            "TypeError: x is undefined at render (app.js:41:7)",
            "a line of a tool's output, not a lesson",
        ),
        # a cause said with a change in it is no story
        ("The change to `flush()` broke the ordering of the batches.", None),
        ("The flag we added in 2.0 is read before the config file.", None),
        ("We need to check where the registry is defined first, it moved in 2.0.", None),
        ("This test fails because the fixture leaks the database between cases.", None),
        ("The test suite checks the schema of every fixture on each push.", None),
        # (said to hold at that place, it is a rule of the place)
        ("In `routes.py`, we must always check the token before reading the body.", None),
        ("The `Cache` class overrides `__eq__` but not `__hash__`, so sets lose entries.", None),
        # a team's practice and a fact of the tests are no story ("we" with a thing named)
        ("We store the secrets in Vault, not in env files.", None),
        ("When the token expires we call the refresh endpoint.", None),
        ("The deploy script takes the tag as its only argument.", None),
        ("The tests mock the network, so never call real APIs in them.", None),
        ("Each test verifies one endpoint against the OpenAPI schema.", None),
        ("The behaviour stays the same when the flag is unset.", None),
        ("If the lock is held, we return early, so the second writer's rows are lost.", None),
    ],
)
def test_a_sentence_picked_alone_must_stand_alone(text: str, why: str | None) -> None:
    assert unanchored(text) == why


@pytest.mark.parametrize(
    ("answer", "code"),
    [
        (
            "You're right. I can use `json.Decoder.DisallowUnknownFields()`.",
            "json.Decoder.DisallowUnknownFields()",
        ),
        ("Good idea, let me switch to `httpx.AsyncClient`.", "httpx.AsyncClient"),
        ("However, `DisallowUnknownFields` would break old configs.", None),  # argued against
        ("Let me look at `settings.go` first.", None),  # a next step, not an agreement
        ("You're right, let me change that.", None),  # agrees, names no code
        ("Sure. Let me read `tests/test_api.py` first.", None),  # a file it reads, no use
        ("You're right. I won't use `requests` here.", None),  # negated
        (
            "You're right, `rm -rf build` is too destructive. I'll use `make clean` instead.",
            "make clean",
        ),
        (None, None),
    ],
)
def test_the_code_an_agreeing_answer_takes_up(answer: str | None, code: str | None) -> None:
    assert taken_code(answer) == code


def test_an_effect_whose_cause_is_the_sentence_before() -> None:
    assert cause_before("This is why the test fails only on CI.")
    assert cause_before("That's why `settings.local.json` is gitignored.")
    assert not cause_before("The cache is why the test fails only on CI.")
    # an order about what the turn before showed, unless it carries its own reason
    assert cause_before("Avoid that in a useEffect.")
    assert cause_before("Set that up on the base model.")
    assert not cause_before(
        "Change that to not be strict, we do not want to play catch up and add new hook types."
    )
    # what it is about is in the sentence before
    assert cause_before("Ensure that coder.main_model.info agrees with that.")
    assert cause_before("That you'll need to pass the flag from the main script.")
    assert cause_before("Be called, since it's in finally.")
    assert not cause_before("Be explicit about the timezone in every timestamp.")
    assert not cause_before("Never compare floats with ==, compare them within a tolerance.")
    # a way whose alternative was in the sentence before
    assert cause_before("Instead, accumulate `cost` in self.message_cost.")
    assert cause_before("But instead check each opening fence from `all_fences`.")
    assert not cause_before("Instead of mocking the client, mock the HTTP transport.")
    # a condition or a consequence of the sentence before, with no rule of its own
    assert cause_before("Only if it is tracked by git. Otherwise refuse with an error.")
    assert cause_before("But unless that is cached.")
    assert cause_before("Only if the file is tracked by git.")
    assert not cause_before("Only in production do we use the real payment gateway.")
    assert cause_before("Then I don't have to repeat the check everywhere.")
    assert cause_before("So then we won't need the wrapper.")
    assert not cause_before("Only if the flag is set, run the migration.")
    assert not cause_before("Unless asked, never push to main.")
    assert not cause_before("Unless asked never push to main.")
    assert not cause_before("Except in tests never call the network.")
    assert not cause_before("Only for Python files run black before committing.")
    assert not cause_before("Then run the tests.")
    # the consequence is read on the words as said (the writer's cleaning drops the "then"),
    # and only it: the rest of the readings go on the cleaned text
    assert consequence_of_before("Then I don't have to repeat the check everywhere.")
    assert consequence_of_before("so then we won't need the wrapper.")
    assert not consequence_of_before("Then run the tests.")
    assert not consequence_of_before("Instead, accumulate `cost` in self.message_cost.")
    # a short order on something only pointed at names nothing a later session could find
    assert cause_before("Do not mess with its border.")
    assert cause_before("Don't change it (on rejecting an edit of io.py)")
    assert not cause_before("Rewrite its parser, the old one leaks memory on every call.")
    assert not cause_before("Always run them in CI.")
    assert not cause_before("Never log it: the token is a secret of the user's.")


def test_the_sittings_readings_keep_what_a_review_found_they_took():
    """A review of the new readings wrote rules and findings they wrongly took; each stays."""
    # asking for a view before a proposal keeps it a question; a list after "Any ideas," keeps
    # its first item
    assert plain("Thoughts? We could cache the parsed AST per file.").startswith("Thoughts?")
    assert plain("Any ideas, suggestions or feedback must go through the feedback form.") == (
        "Any ideas, suggestions or feedback must go through the feedback form."
    )
    assert plain("Any ideas: the hook runs in its own shell.") == (
        "The hook runs in its own shell."
    )
    assert consequence_of_before("Any ideas: then we can drop the shim.")
    # a test's word that is no name ("never", "must", "incorrectly") is what the tests do
    for finding in (
        "These tests never mock the database; they run against a real Postgres in Docker.",
        "These tests must verify the error path as well as the happy path.",
        "The new tests should mock the clock with freezegun, not with sleep.",
        "This test incorrectly asserts that None is returned; the function raises instead.",
        # a rule of one place of the code is no plan of an edit
        "In `settings.py`, we should keep secrets out of the file and read them from the env.",
        "In the `Makefile`, we have to use tabs, not spaces.",
        "In the `api` module, we should only return DTOs, not ORM objects.",
        "In `app.py`, instead of env vars, we should read `settings.toml`, and never env vars.",
    ):
        assert not tells_an_edit(finding), finding
    # "that" and "this" that name their thing are no pointers back
    for rule in (
        "Never edit files that are generated.",
        "Do not squash commits that touch migrations.",
        "Use pnpm in this project.",
        "Never force push in this repo.",
        "Always check that the lockfile is committed.",
        "Keep in mind that ids are strings.",
    ):
        assert not cause_before(rule), rule
    assert cause_before("Never do that.")


@pytest.mark.parametrize(
    ("said", "named"),
    [
        (
            "Avoid tokens under my account that are used by the org.",
            "Avoid tokens under the user's account that are used by the org.",
        ),
        (
            "The cli should handle that for the user, not you adding that to this repo.",
            "The cli should handle that for the user, not the agent adding that to this repo.",
        ),
        (
            "We don't want to play catch up, so I would like something more flexible.",
            "The team does not want to play catch up, so the user would like something more flexible.",
        ),
        # (US is no pronoun; code, quoted words and the writer's note stay as written)
        ("We're using US English.", "The team is using US English."),
        (
            'Keep `my_var` and "your call" (on rejecting an edit of my.go)',
            'Keep `my_var` and "your call" (on rejecting an edit of my.go)',
        ),
        ("Let me know if we should wait.", "Let me know if the team should wait."),
    ],
)
def test_a_users_rule_names_its_people(said: str, named: str) -> None:
    """A memory is read by a future session: the user's "I"/"my", the agent's "you" and the
    team's "we" are named, where no verb has to change its form beyond the common ones."""
    assert third_person(said) == named
