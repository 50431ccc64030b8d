"""SIGKILL at random points of each long operation (harness/crash.py): memory/index/batch,
documents/insert, the Memory Writer's commits, `sqrl ingest` with its cursor, CR-Memory and a
migration. After every kill the database passes integrity_check, holds all or none of the
operation (whole units of work made of many), and finishing the work afterwards - the same
request again, resuming from the cursor or the dead process's claim - gives exactly the state
of a run that was never killed. Short budgets here; `tools/crash.py` runs long ones."""

from __future__ import annotations

import pytest

from harness import crash

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("name", list(crash.SCENARIOS))
def test_killed_operation_is_all_or_nothing_and_resumes(tmp_path, name):
    report = crash.run(name, tmp_path, trials=3, seed=11, scale=0.5)
    assert len(report.trials) == 3
    # the kills land while the operation runs (a trial killed after the reply proves less)
    assert report.count("killed", True) >= 1, report.trials
