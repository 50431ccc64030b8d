"""The offline writer's lesson model (`squirrel/text/lesson_scorer.py`): language cues only, its
weights the reproducible fit of `tools/train_lesson_scorer.py` on part 1 of the development set."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from reos_memory.squirrel.text import lesson_scorer, lesson_weights
from reos_memory.squirrel.text.lesson_scorer import Said, best, features, score

ROOT = Path(__file__).resolve().parents[1]
DATASET = ROOT.parent / "shared" / "datasets" / "agent-sessions"


def said(text: str, role: str = "assistant", origin: str | None = None) -> Said:
    return Said(text, role, origin, 0, 1, len(text))


def test_the_weights_name_every_feature_and_nothing_else() -> None:
    assert list(lesson_weights.WEIGHTS) == list(features(said("x")))
    assert all(isinstance(v, float) for v in lesson_weights.WEIGHTS.values())
    assert 0.5 <= lesson_weights.THRESHOLD < 1.0


def test_the_weights_file_holds_numbers_not_text_of_the_data() -> None:
    """Apart from its docstring, the generated file is feature names and numbers."""
    body = (ROOT / "reos_memory/squirrel/text/lesson_weights.py").read_text().split('"""')[2]
    strings = set(re.findall(r'"([^"]*)"', body))
    assert strings == set(lesson_weights.WEIGHTS)
    assert all(re.fullmatch(r"[a-z_0-9]+", s) for s in strings)


def test_a_cause_outranks_narration_status_and_chat() -> None:
    cause = said(
        "The page cache key in `render_page()` leaves out the locale, so two users with "
        "different languages get the same rendered page."
    )
    for other in (
        "Let me check the renderer first.",
        "Now I'll run the tests again.",
        "All tests pass now.",
        "Great, thanks!",
        "Could you look at the logs?",
    ):
        assert score(cause) > score(said(other)) + 0.3, other


def test_a_rule_the_user_states_outranks_the_same_words_asked() -> None:
    rule = "we never mock the database in the integration tests, they run against a real one"
    asked = "do we mock the database in the integration tests or run against a real one?"
    assert score(said(rule, "user")) > score(said(asked, "user"))


def test_best_keeps_at_most_two_sentences_over_the_threshold_best_first() -> None:
    """(A threshold of 0.5 here: three findings in one message each read as less sure.)"""
    text = " ".join(
        [
            "Let me look.",
            "The loader in `config/load.py` silently drops keys it does not know, so a typo in "
            "`settings.toml` is never reported to anyone.",
            "The retry loop in `fetch_page()` never sees the timeout because `requests` raises "
            "`ConnectTimeout`, which is not the `ReadTimeout` that the loop catches.",
            "The importer in `jobs/nightly.py` runs with a read-only database user, so it cannot "
            "create its temporary tables and must write them to `/tmp` instead.",
        ]
    )
    kept = best(text, "assistant", threshold=0.5)
    assert len(kept) == lesson_scorer.MAX_PER_MESSAGE == 2
    assert [p for _, p in kept] == sorted((p for _, p in kept), reverse=True)
    assert all(p >= 0.5 for _, p in kept)
    assert not [s for s, _ in kept if s.startswith("Let me")]
    assert best(text, "assistant", threshold=1.01) == []


def test_code_and_pasted_output_are_not_sentences() -> None:
    text = '```\nTraceback (most recent call last):\n  File "a.py", line 3\n```\nok'
    assert lesson_scorer.said(text, "user") == []


@pytest.mark.skipif(not DATASET.exists(), reason="the development set is not beside the project")
def test_the_shipped_weights_are_the_tools_fit_on_part_1() -> None:
    """Reproducible: fitting again on part 1 gives the weights in the package."""
    run = subprocess.run(
        [sys.executable, "tools/train_lesson_scorer.py", str(DATASET), "--part", "1", "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "the shipped weights are this fit" in run.stdout


@pytest.mark.parametrize("threshold", [0.0, 0.3, 0.5, 0.8, 0.93, 0.99])
def test_best_reads_the_costly_cues_only_when_they_could_matter_and_gives_the_same_answer(
    threshold: float,
) -> None:
    """`best` skips the costlier cues where even their best values cannot reach the threshold:
    what it keeps, and each score, are those of the whole model."""
    messages = [
        ("user", "no, don't mock the database here; the tests must run against a real one"),
        ("user", "why not use `orjson`? it is faster"),
        ("user", "Found the bug: the loader drops unknown keys, so typos are never reported."),
        ("assistant", "Let me check the loader. Now I'll run the tests."),
        (
            "assistant",
            "The retry loop in `fetch_page()` never sees the timeout because `requests` raises "
            "`ConnectTimeout`. I'll catch both.",
        ),
    ]
    for role, text in messages:
        whole = sorted(
            ((score(s), s.sentence) for s in lesson_scorer.said(text, role)),
            key=lambda t: -t[0],
        )
        expected = [(x, round(p, 3)) for p, x in whole if p >= threshold][:2]
        assert best(text, role, threshold=threshold) == expected
