"""robohal's Franka HIL suites (the contract suite and the Franka family's) against
franky-sim, a third-party FCI simulator (MuJoCo) whose arm tracks its commands
imperfectly, as a real one does. The tests that need the bundled simulator (fault
injection) skip themselves on this foreign target.
"""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from robohal.sim.process import free_loopback_host

HIL_TIMEOUT = 600.0  # s: the whole run; about a minute here, so this only stops a hang
HOST_ATTEMPTS = 20


@pytest.fixture
def franky_sim(third_party):
    reason = third_party.missing_reason("franky_sim")
    if reason:
        pytest.skip(reason)
    for _ in range(HOST_ATTEMPTS):  # franky-sim binds 1338 too; free_loopback_host checks 1337 only
        host = free_loopback_host(1337)
        if third_party.ports_free(host):
            break
    else:
        raise RuntimeError("no loopback address with TCP 1337 and 1338 free")
    server = third_party.FrankySim(host)
    yield server
    server.stop()
    server.remove_log()


def failures(junit: Path) -> list[str]:
    """``test id: first line of its message`` for every failed or erroring test case."""
    found = []
    for case in ET.parse(junit).iter("testcase"):
        for bad in (*case.findall("failure"), *case.findall("error")):
            message = (bad.get("message") or bad.text or "").strip().splitlines()
            found.append(f"{case.get('classname')}::{case.get('name')}: {message[0] if message else ''}")
    return found


@pytest.mark.slow
def test_franka_hil_suites_pass_on_franky_sim(franky_sim, tmp_path):
    target = f"franka://{franky_sim.host}?model=franka.fr3&realtime=ignore"
    robohal = Path(sys.executable).with_name("robohal")
    done = subprocess.run(
        [str(robohal), "hil", "--target", target, "--yes", "--report", str(tmp_path)],
        capture_output=True, text=True, timeout=HIL_TIMEOUT,
    )
    summary = done.stdout.strip().splitlines()[-1:] or ["(no output)"]
    print(f"robohal hil on franky-sim: {summary[0]}")  # shown with -s or -rA
    junit = tmp_path / "junit.xml"
    failed = failures(junit) if junit.exists() else []
    assert done.returncode == 0, (
        f"robohal hil --target {target} exited {done.returncode}: {summary[0]}\n" + "\n".join(failed)
        + f"\n--- output tail ---\n{done.stdout[-4000:]}\n{done.stderr[-2000:]}"
        + f"\n--- franky-sim log ---\n{franky_sim.log_tail()}"
    )
    # Passing means something ran: the contract and Franka tests, not a run that skipped them all.
    cases = list(ET.parse(junit).iter("testcase"))
    ran = [case for case in cases if case.find("skipped") is None]
    assert any("contract" in (case.get("classname") or "") for case in ran), summary
    assert any("franka_hil" in (case.get("classname") or "") for case in ran), summary
