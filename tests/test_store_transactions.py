"""Transactions of the store: the error that ended one is the error the caller sees, and a read
that runs again (the database was busy) does not trip over its own first run."""

from __future__ import annotations

import pytest

from reos_memory.store import keywords as kw


class Boom(Exception):
    pass


def test_a_write_whose_transaction_sqlite_already_ended_raises_the_original_error(db):
    def fn(conn):  # as after SQLITE_FULL or an I/O error: the transaction is gone
        conn.execute("ROLLBACK")
        raise Boom

    with pytest.raises(Boom):
        db.write(fn)
    assert db.write(lambda c: c.execute("SELECT 1").fetchall()) == [(1,)]  # still usable


def test_a_failing_write_rolls_back_everything(db):
    def fn(conn):
        conn.execute("INSERT INTO embedding_meta(key, value) VALUES ('probe', 'x')")
        raise Boom

    with pytest.raises(Boom):
        db.write(fn)
    probe = "SELECT 1 FROM embedding_meta WHERE key = 'probe'"
    assert db.read(lambda c: c.execute(probe).fetchall()) == []


def test_a_read_whose_transaction_was_ended_raises_the_original_error(db):
    def fn(conn):
        conn.execute("COMMIT")
        raise Boom

    with pytest.raises(Boom):
        db.read(fn)
    assert db.read(lambda c: c.execute("SELECT 2").fetchall()) == [(2,)]


def test_keyword_pruning_runs_again_after_a_run_cut_short(db):
    def cut_short_then_again(conn):
        kw.ensure_temp_tables(conn)  # what a first run leaves when the database was busy
        conn.execute("INSERT INTO temp.query_stems(rowid, w) VALUES (0, 'left over')")
        return kw.prune_words(conn, ["zebra", "crossing"], 100)

    assert db.read(cut_short_then_again) == ([], [])  # no block has the words; no error
