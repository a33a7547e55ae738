"""The reply bytes of every case of the varied mix (tests/nri/workload.py MIX),
pinned: whatever the hot path does to go faster, each container gets the same
bytes, the same count on /metrics and the same warnings, first decided and
then remembered.

The literals were produced by the code before the request path was made
faster (issue 34); the InfiniBand-only case's with its reply preloading no
libmockfs, which does nothing without MOCK_PCI_ROOT (issue 35). A reply is pinned by its length and SHA-256 (the bytes
themselves are 0-3 KB each); ``tests/nri/test_convert.py`` pins the encoding.
"""

from __future__ import annotations

import hashlib
import logging
import random

import pytest

from mokka.nri import pipeline
from mokka.nri.gate import StagingGate
from mokka.nri.inject import model
from mokka.nri.proto import nri_pb2
from mokka.nri.runtime_info import RuntimeInfo
from tests.nri.inject.builders import full_view
from tests.nri.test_pipeline import Counted, Views
from tests.nri.workload import MIX, request

#: (config, node view, runtime takes CDI) by name.
SETUPS = {
    "nothing staged": (model.Config(), model.NodeView(), False),
    "everything staged, v0.6.1 runtime": (model.Config(node_name="node-1"), full_view(), False),
    "everything staged, CDI runtime": (model.Config(node_name="node-1", device_injection_mode="cdi",
                                                    toolkit_cdi_annotations=True),
                                       full_view(), True),
}


def mix_request(index: int) -> bytes:
    """MIX case ``index`` as the bench builds it: a 4-12 KB request."""
    kw = MIX[index][1]
    rnd = random.Random(index)
    return request(index, rnd.randint(4096, 12288), rnd, **(kw(index) if callable(kw) else kw))


def reply_of(handle, payload: bytes, runtime: RuntimeInfo) -> bytes:
    req = nri_pb2.CreateContainerRequest.FromString(payload)
    return handle(req.pod, req.container, runtime)


def outcomes(setup: str, caplog) -> dict[str, tuple[int, str, str, tuple[str, ...]]]:
    """Per MIX case: (reply length, reply SHA-256 (first 16 hex digits), the
    count it made, the warnings logged), asking twice: the second answer is
    the remembered one and must be the same."""
    config, view, accepts_cdi = SETUPS[setup]
    counted = Counted()
    handle = pipeline.handler(config, Views(view), StagingGate(), counted)
    runtime = RuntimeInfo(accepts_cdi=accepts_cdi)
    out = {}
    for index, (name, _) in enumerate(MIX):
        payload = mix_request(index)
        answers = []
        for _ in range(2):
            caplog.clear()
            del counted.seen[:]
            with caplog.at_level(logging.WARNING, logger="mokka.nri"):
                reply = reply_of(handle, payload, runtime)
            answers.append((len(reply), hashlib.sha256(reply).hexdigest()[:16], *counted.seen,
                            tuple(r.getMessage() for r in caplog.records)))
        assert answers[0] == answers[1], name
        out[name] = answers[0]
    return out


#: Per setup and MIX case: (reply length, SHA-256 prefix, count, warnings by WARNINGS key).
PINNED = {
    'nothing staged': {
        'devices annotation': (518, '6b73b61f2ee950e1', 'injected', ('W0',)),
        'nothing selected': (0, 'e3b0c44298fc1c14', 'nothing_selected', ()),
        'raw allocation': (518, '6b73b61f2ee950e1', 'injected', ()),
        'CDI allocation (device plugin)': (518, '6b73b61f2ee950e1', 'injected', ()),
        'CDI allocation (DRA claim)': (518, '6b73b61f2ee950e1', 'injected', ()),
        'MIG allocation': (657, '9aa6540429d57e1e', 'injected', ()),
        'infiniband': (482, '4ec5ec2e6d0dd2f2', 'injected', ('W1',)),
        'imex channels': (0, 'e3b0c44298fc1c14', 'nothing_to_add', ('W2',)),
        'devices + infiniband + imex': (610, '4890e7b8e33e9765', 'injected', ('W1', 'W0', 'W2')),
        'allocation and devices annotation': (518, '6b73b61f2ee950e1', 'injected', ()),
        'excluded namespace': (0, 'e3b0c44298fc1c14', 'excluded_namespace', ()),
        'opt-out': (0, 'e3b0c44298fc1c14', 'opt_out', ()),
        'privileged, no allocation': (0, 'e3b0c44298fc1c14', 'nothing_selected', ()),
        'image with its own PATH and LD_PRELOAD': (486, '82fd353ac16699bb', 'injected', ('W0',)),
        'overlay already mounted': (0, 'e3b0c44298fc1c14', 'already_mounted', ()),
        'one pod: container app': (518, '6b73b61f2ee950e1', 'injected', ('W0',)),
        'one pod: container sidecar': (462, '189d21837cb804d5', 'injected', ('W0',)),
        'one pod: init container': (518, '6b73b61f2ee950e1', 'injected', ('W0',)),
    },
    'everything staged, v0.6.1 runtime': {
        'devices annotation': (1212, 'fd6639f1cf808204', 'injected', ()),
        'nothing selected': (0, 'e3b0c44298fc1c14', 'nothing_selected', ()),
        'raw allocation': (835, '836e73caef9c8d48', 'injected', ()),
        'CDI allocation (device plugin)': (835, '836e73caef9c8d48', 'injected', ()),
        'CDI allocation (DRA claim)': (835, '836e73caef9c8d48', 'injected', ()),
        'MIG allocation': (974, 'ec8bba09af565346', 'injected', ()),
        'infiniband': (664, '28c23625a8f32585', 'injected', ()),
        'imex channels': (244, '5295e3727f3e693e', 'injected', ()),
        'devices + infiniband + imex': (1542, '1529ac20bfdce110', 'injected', ()),
        'allocation and devices annotation': (835, '836e73caef9c8d48', 'injected', ()),
        'excluded namespace': (0, 'e3b0c44298fc1c14', 'excluded_namespace', ()),
        'opt-out': (0, 'e3b0c44298fc1c14', 'opt_out', ()),
        'privileged, no allocation': (0, 'e3b0c44298fc1c14', 'nothing_selected', ()),
        'image with its own PATH and LD_PRELOAD': (1204, '2f0a7fa05c421be7', 'injected', ()),
        'overlay already mounted': (0, 'e3b0c44298fc1c14', 'already_mounted', ()),
        'one pod: container app': (1212, 'fd6639f1cf808204', 'injected', ()),
        'one pod: container sidecar': (1156, 'd07ccef85623ea02', 'injected', ()),
        'one pod: init container': (1212, 'fd6639f1cf808204', 'injected', ()),
    },
    'everything staged, CDI runtime': {
        'devices annotation': (867, '456fd09d14f4944f', 'injected', ()),
        'nothing selected': (0, 'e3b0c44298fc1c14', 'nothing_selected', ()),
        'raw allocation': (835, '836e73caef9c8d48', 'injected', ()),
        'CDI allocation (device plugin)': (835, '836e73caef9c8d48', 'injected', ()),
        'CDI allocation (DRA claim)': (835, '836e73caef9c8d48', 'injected', ()),
        'MIG allocation': (974, 'ec8bba09af565346', 'injected', ()),
        'infiniband': (664, '28c23625a8f32585', 'injected', ()),
        'imex channels': (244, '5295e3727f3e693e', 'injected', ()),
        'devices + infiniband + imex': (1200, '3c8ff720237f7fa9', 'injected', ()),
        'allocation and devices annotation': (835, '836e73caef9c8d48', 'injected', ()),
        'excluded namespace': (0, 'e3b0c44298fc1c14', 'excluded_namespace', ()),
        'opt-out': (0, 'e3b0c44298fc1c14', 'opt_out', ()),
        'privileged, no allocation': (0, 'e3b0c44298fc1c14', 'nothing_selected', ()),
        'image with its own PATH and LD_PRELOAD': (859, '238dff33c4882bb6', 'injected', ()),
        'overlay already mounted': (0, 'e3b0c44298fc1c14', 'already_mounted', ()),
        'one pod: container app': (867, '456fd09d14f4944f', 'injected', ()),
        'one pod: container sidecar': (811, 'fd08f8aed4b2aadd', 'injected', ()),
        'one pod: init container': (867, '456fd09d14f4944f', 'injected', ()),
    },
}
WARNINGS = {
    'W0': (
        'device injection requested but the device tree holds no device nodes; injecting overlay only '
        '(has the node agent staged this node?)'),
    'W1': (
        'infiniband requested but the staged profile has no HCA; the tools will find nothing'),
    'W2': (
        'imex channels requested but none are staged'),
}


@pytest.mark.parametrize("setup", list(SETUPS))
def test_every_mix_case_gets_the_pinned_reply_decided_and_remembered(setup, caplog):
    want = {name: (n, digest, count, tuple(WARNINGS[w] for w in warnings))
            for name, (n, digest, count, warnings) in PINNED[setup].items()}
    assert outcomes(setup, caplog) == want
