"""A long-running agent given hostile profiles keeps the last good state: /healthz stays 200 and
names the file and the reason, memory stays bounded, and the next good profile converges."""

from __future__ import annotations

import os

from helpers import AgentProcess, profile_bytes
from tests.waiting import wait_until

from mokka.agent import desired as ds
from tests.core.test_profile_errors import HOSTILE_CASES

#: Resident memory, KiB, the agent may reach after refusing all of them (it idles near 60 MiB).
CEILING_KIB = 250 * 1024

# (name, how to put it at the watched path, words in the reason, the field it starts with)
HOSTILE = [
    ("a FIFO", "fifo", "it is a FIFO, not a regular file", ""),
    ("a link to /dev/zero", "/dev/zero", "it is a character device", ""),
] + [(name, text.encode(), words, field) for name, text, field, words in HOSTILE_CASES]


def put(path: str, what) -> None:
    """Replace ``path`` the way an editor's save does (a new inode renamed over it)."""
    tmp = path + ".new"
    if what == "fifo":
        os.mkfifo(tmp)
    elif isinstance(what, str):
        os.symlink(what, tmp)
    else:
        with open(tmp, "wb") as f:
            f.write(what)
    os.replace(tmp, path)


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return int(next(line for line in f if line.startswith("VmRSS:")).split()[1])


def test_hostile_profiles_keep_the_last_good_state(scratch):
    root, outside, procs = scratch
    path = os.path.join(outside, "profile.yaml")
    good_a, good_b = profile_bytes("t4", 2), profile_bytes("t4", 3)
    put(path, good_a)
    agent = AgentProcess(root, "--profile", path, "--resync-interval", "0", log_dir=outside)
    procs.append(agent)
    digest_a = ds.build(0, path, path, good_a, node_name=os.uname().nodename).digest
    agent.wait_staged(digest_a)
    for name, what, words, field in HOSTILE:
        put(path, what)

        def rejected():
            agent.assert_alive()
            code, body = agent.probe("/healthz")
            reason = (body.get("rejected") or {}).get("reason", "")
            return (code, body) if words in reason and reason.startswith(field) else None
        code, body = wait_until(rejected, what=f"/healthz naming {name}")
        assert code == 200, name
        assert body["rejected"]["file"] == path, name
        assert agent.probe("/stagedz") == (200, {"staged": True, "generation": 1,
                                                 "digest": digest_a}), name
        assert rss_kib(agent.proc.pid) < CEILING_KIB, name
        put(path, good_a)                    # back to the good bytes: accepted again, no new pass
        wait_until(lambda: "rejected" not in agent.probe("/healthz")[1], what="accepted again")
    put(path, good_b)
    agent.wait_staged(ds.build(0, path, path, good_b, node_name=os.uname().nodename).digest)
    assert agent.probe("/healthz")[0] == 200
    assert not any("crashed" in str(line.get("msg")) for line in agent.log_lines())
    assert agent.terminate() == 0
