"""Which kernel log ``mokka ctl xid`` may append to (pure): the one named, else the one the
node's agent recorded, as this process sees it, else none."""

from __future__ import annotations

import pytest

from mokka.core import kmsg

NODE = kmsg.Record(kmsg="/dev/kmsg", overlay="/var/lib/nvml-mock")
CHART = "/var/lib/nvml-mock/driver/config/xid-events.yaml"


@pytest.mark.parametrize("named, record, node_file, path, why", [
    (None, NODE, "/tmp/r/var/lib/nvml-mock/driver/config/xid-events.yaml", "/tmp/r/dev/kmsg",
     "the node's, as its agent recorded it in /tmp/r/var/lib/nvml-mock/driver/kernel-log"),
    (None, NODE, CHART, "/dev/kmsg",
     "the node's, as its agent recorded it in /var/lib/nvml-mock/driver/kernel-log"),
    (None, NODE, "/tmp/r/var/lib/nvml-mock/config/xid-events.yaml", "/tmp/r/dev/kmsg",
     "the node's, as its agent recorded it in /tmp/r/var/lib/nvml-mock/driver/kernel-log"),
    (None, kmsg.Record("/var/log/kern.fifo", "/srv/mock"), "/x/srv/mock/driver/config/config.yaml",
     "/x/var/log/kern.fifo", "the node's, as its agent recorded it in /x/srv/mock/driver/kernel-log"),
    (None, NODE, "/opt/nvml-mock/driver/config/xid-events.yaml", None,
     "the node's kernel log is not visible from here: this process sees its tree at /opt/nvml-mock, "
     "its agent staged it at /var/lib/nvml-mock under its host root; name one with --kmsg-path"),
    (None, NODE, "/tmp/r/elsewhere/xid-events.yaml", None,
     "the node's kernel log is not visible from here: this process sees its tree at /tmp/r/elsewhere, "
     "its agent staged it at /var/lib/nvml-mock under its host root; name one with --kmsg-path"),
    (None, None, CHART, None,
     "no node agent recorded a kernel log in /var/lib/nvml-mock/driver/kernel-log; "
     "name one with --kmsg-path"),
    ("/dev/kmsg", None, "/tmp/r/var/lib/nvml-mock/driver/config/x", "/dev/kmsg", "named by --kmsg-path"),
    ("/tmp/k", NODE, "/opt/nvml-mock/driver/config/x", "/tmp/k", "named by --kmsg-path"),
    ("", None, CHART, None,
     "no node agent recorded a kernel log in /var/lib/nvml-mock/driver/kernel-log; "
     "name one with --kmsg-path"),
], ids=["a scratch root: its own dev/kmsg, never the host's",
        "a real node, or the host of a pod with --host-root=/host: the host's",
        "found through the Go layout's config/",
        "the agent's own --kmsg-path and --overlay-host-path",
        "a container sees the tree at its mount path: none",
        "not a staged layout: none",
        "no record (not staged by an agent): none",
        "a named path wins, even the host's",
        "a named path wins in a container",
        "an empty name names nothing"])
def test_which_kernel_log_a_commands_line_may_go_to(named, record, node_file, path, why):
    assert kmsg.target(named, record, node_file) == kmsg.Target(path, why)


@pytest.mark.parametrize("data, record", [
    (b'{"kmsg": "/dev/kmsg", "overlay": "/var/lib/nvml-mock"}\n', NODE),
    (kmsg.render_record("/dev/kmsg", "/var/lib/nvml-mock/"), NODE),
    (None, None),
    (b"", None),
    (b"/dev/kmsg\n", None),
    (b'{"kmsg": "dev/kmsg", "overlay": "/var/lib/nvml-mock"}', None),
    (b'{"kmsg": "/dev/kmsg"}', None),
    (b'{"kmsg": "/dev/kmsg\\n/etc/passwd", "overlay": "/var/lib/nvml-mock"}', None),
    (b'["/dev/kmsg"]', None),
    (b'{"kmsg": "/' + b"a" * 9000 + b'", "overlay": "/o"}', None),
], ids=["as the agent writes it", "rendered, normalised", "no record", "an empty record",
        "a bare path is no record", "a relative path is no record", "a missing key is no record",
        "a control character is no record", "not an object is no record", "over the limit is no record"])
def test_a_record_names_two_absolute_host_paths(data, record):
    assert kmsg.parse_record(data) == record
