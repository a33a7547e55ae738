"""The agent's kernellog under a workload that writes driver/config (bound writable into
every injected container): whatever is put at xid-events.yaml — a document with a count
where a list belongs, a last_seq past any number, a FIFO, a directory, a link to a secret —
is logged and replaced by Mokka's own; every later Xid is still announced, numbered past
every earlier one; a workload holding the directory's flock delays nothing; /readyz stays
200 and SIGTERM leaves the root as found."""

from __future__ import annotations

import os
import stat

import yaml

from helpers import AgentProcess, kernel_log_standin, profile_bytes
from test_kernellog_process import inject
from tests.locks import flock_held
from tests.waiting import wait_until
from treelist import diff, listing

from mokka.core import names
from mokka.core.overlay import host_overlay

SECRET = "s3cr3t-value-9f2c"


def attack_with(kind: str, path: str, secret: str) -> None:
    """Put ``kind`` at ``path`` as a workload in a container can: a new inode renamed in,
    or for a directory, the file removed first."""
    tmp = path + ".new"
    if kind == "directory":
        os.unlink(path)
        os.makedirs(os.path.join(path, "deep"))
        return
    if kind == "fifo":
        os.mkfifo(tmp)
    elif kind == "link":
        os.symlink(secret, tmp)
    else:
        with open(tmp, "wb") as f:
            f.write(kind.encode())
    os.replace(tmp, path)


ATTACKS = [
    ("events: 5", "version: 1\nlast_seq: 3\nevents: 5\n", "events is not a list"),
    ("last_seq 2^64-1", "version: 1\nlast_seq: 18446744073709551615\nevents: []\n",
     "last_seq is not an integer from 0 to 9007199254740991"),
    ("a FIFO", "fifo", "it is a FIFO, not a regular file"),
    ("a directory", "directory", "it is a directory, not a regular file"),
    ("a link to a secret", "link", "it is a symbolic link, not a regular file"),
]


def test_kernellog_replaces_a_hostile_events_file_and_keeps_announcing(scratch):
    root, outside, procs = scratch
    secret = os.path.join(outside, "secret.yaml")
    with open(secret, "w") as f:
        f.write(f"last_seq: 1\nevents: []\npassword: {SECRET}\n")
    os.chmod(secret, 0o600)
    kmsg = kernel_log_standin(root)
    before = listing(root)
    profile = os.path.join(outside, "profile.yaml")
    healthy = profile_bytes("t4", 2)
    with open(profile, "wb") as f:
        f.write(healthy)
    agent = AgentProcess(root, "--profile", profile, "--node-name", "node-h", "--resync-interval", "0",
                         log_dir=outside)
    procs.append(agent)
    events = os.path.join(host_overlay(root).driver_config, names.XID_EVENTS_FILE)
    agent.wait_staged()
    wait_until(lambda: os.path.exists(events), what="the events file")

    def announce(code: int, count: int) -> dict:
        """Inject Xid ``code`` on GPU 1; wait for the ``count``-th kernel log line."""
        with open(profile, "wb") as f:
            f.write(inject(healthy, 1, {"xid": {"code": code}}))
        wait_until(lambda: len(open(kmsg).read().splitlines()) == count, what=f"kernel log line {count}")
        assert open(kmsg).read().splitlines()[-1].startswith(f"<3>NVRM: Xid (PCI:")
        assert f"): {code}, pid=" in open(kmsg).read().splitlines()[-1]
        agent.assert_alive()
        wait_until(lambda: agent.probe("/readyz")[0] == 200, what="/readyz 200")   # 503 while a pass runs
        doc = wait_until(lambda: (lambda d: d if d["events"] and d["events"][0]["code"] == code else None)(
            yaml.safe_load(open(events))), what=f"Xid {code} in the events file")
        st = os.lstat(events)
        assert stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o644
        return doc

    seqs = [announce(13, 1)["events"][0]["seq"]]
    for n, (name, kind, reason) in enumerate(ATTACKS):
        attack_with(kind, events, secret)
        doc = announce(31 + n, n + 2)
        assert SECRET not in open(events).read(), name
        seqs.append(doc["events"][0]["seq"])
        assert seqs[-1] > seqs[-2], (name, seqs)
        assert doc["last_seq"] == seqs[-1], name
        assert any(line.get("msg") == "the Xid events file is not one Mokka wrote: replacing it"
                   and line.get("path") == events and str(line.get("reason", "")).startswith(reason)
                   for line in agent.log_lines()), name
        code, body = agent.probe("/healthz")
        assert code == 200 and body["notices"]["kernellog"] == {
            "file": events, "reason": f"{reason}; replaced by Mokka's own"}, (name, body)
    assert open(secret).read().endswith(f"password: {SECRET}\n")
    assert not any(SECRET in str(line) for line in agent.log_lines())

    with flock_held(os.path.dirname(events)) as holder:     # a workload's flock on driver/config
        announce(43, len(ATTACKS) + 2)
        assert any(line.get("msg", "").startswith("the config directory's lock is held")
                   and line.get("holder") == str(holder.pid) for line in agent.log_lines())
        notice = agent.probe("/healthz")[1]["notices"]["kernellog"]
        assert notice["file"] == os.path.dirname(events)
        assert notice["reason"].startswith(f"{os.path.dirname(events)} is locked by pid {holder.pid}, ")

    assert not any("crashed" in str(line.get("msg")) for line in agent.log_lines())
    assert agent.terminate() == 0
    after = listing(root)
    kmsg_line = [x for x in after if x.startswith("dev/kmsg ")]
    assert [x for x in after if x not in kmsg_line] == [x for x in before if not x.startswith("dev/kmsg ")], \
        diff(before, after)
