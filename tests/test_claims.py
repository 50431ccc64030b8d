"""Which episode claims belong to a process that is gone (and may be taken over at once)."""

from __future__ import annotations

import subprocess
import sys
import time

from reos_memory.squirrel.writer import claims


def test_a_claim_is_free_only_when_its_process_of_this_host_and_namespace_is_gone():
    me = claims.claimant()
    host, ns, _pid, _start = me.split("/")
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        live = f"2026-11-22T10:00:00Z claim_x {host}/{ns}/{proc.pid}/{claims.started(proc.pid)}"
        assert not claims.claimant_died(live)
        # the same pid started at another time: the claim's process is gone, the pid reused
        assert claims.claimant_died(f"2026 claim_x {host}/{ns}/{proc.pid}/1")
        # another pid namespace or host cannot be told from here: wait for the stale timeout
        assert not claims.claimant_died(f"2026 claim_x {host}/1/{proc.pid}/1")
        assert not claims.claimant_died(f"2026 claim_x other-host/{ns}/{proc.pid}/1")
        proc.kill()
        for _ in range(500):  # killed, not yet reaped (a zombie): its claims are free already
            if claims.process_stat(proc.pid)[:1] == [b"Z"]:
                break
            time.sleep(0.01)
        assert claims.claimant_died(live)
    finally:
        proc.kill()
        proc.wait()
    assert claims.claimant_died(live)
    assert not claims.claimant_died(f"2026 claim_x {me}")  # this very process
    assert not claims.claimant_died("2026-11-22T10:00:00Z claim_0123")  # older claims
