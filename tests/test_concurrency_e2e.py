"""Four server processes and the `sqrl` command line writing to one file at once: blocks,
relationships, index runs, memories, episodes and feedback (harness/concurrency.py). Every
acknowledged write is there, the counts are exact, and no lock error ever reaches a client.
`tools/concurrency.py` runs the same with long budgets."""

from __future__ import annotations

import pytest

from harness.concurrency import Load, run

pytestmark = pytest.mark.e2e


def test_four_servers_and_the_cli_lose_nothing(tmp_path):
    load = Load()
    out = run(tmp_path, load)
    assert out.errors == []
    assert out.integrity == "ok"
    assert out.stored["blocks"] == out.expected["blocks"] == out.stored["rows_blocks"]
    assert out.stored["edges"] == out.expected["edges"] == out.stored["rows_edges"]
    assert out.stored["rows_embeddings"] == out.expected["blocks"] and out.index_failed == 0
    assert out.stored["memories"] == out.expected["memories"]
    assert out.stored["cli_memories"] == load.cli_memories == len(out.acked["cli_memories"])
    assert out.stored["contexts"] == out.expected["contexts"]
    assert out.stored["rows_episodes"] >= load.servers
    assert out.feedback_counted == load.servers
    assert out.lost == 0
