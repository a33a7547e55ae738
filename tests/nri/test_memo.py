"""The driver's reply memo (mokka.nri.memo) against the decision itself:
whatever it has remembered, it answers what ``adjust`` would, encoded."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from mokka.core import names
from mokka.nri import convert, pipeline
from mokka.nri.gate import StagingGate
from mokka.nri.inject import Config, adjust, plan
from mokka.nri.inject.env import EnvSet
from mokka.nri.memo import Reply, ReplyMemo
from mokka.nri.proto import nri_pb2
from mokka.nri.runtime_info import RuntimeInfo
from tests.nri.inject.builders import MOUNT, full_view
from tests.nri.inject.strategies import (EXAMPLES, SETTINGS, configs, containers, env_entries, pods,
                                         views)

#: A quarter of the decision's own examples: each runs several decisions.
FEWER = settings(parent=SETTINGS, max_examples=max(50, EXAMPLES // 4))


def fresh(config, pod, container, view, selection) -> tuple[Reply, tuple]:
    decision = adjust(config, pod, container, view, selection)
    return Reply(convert.response_bytes(decision.adjustment, view.runtime_accepts_cdi),
                 decision.adjustment is not None, decision.reason, decision.warnings), decision.env_read


def remembered_or_fresh(memo, config, pod, container, view) -> Reply | None:
    selection = plan(config, pod, container)[1]
    if selection is None:
        return None
    reply = memo.get(view.generation, selection, EnvSet(container.env))
    if reply is None:
        reply, env_read = fresh(config, pod, container, view, selection)
        memo.put(view.generation, selection, env_read, reply)
    return reply


@FEWER
@given(configs, pods, st.lists(containers, min_size=2, max_size=6), views)
def test_the_memo_answers_what_adjust_answers(config, pod, batch, view):
    memo = ReplyMemo()
    for container in batch:
        got = remembered_or_fresh(memo, config, pod, container, view)
        if got is not None:
            assert got == fresh(config, pod, container, view, plan(config, pod, container)[1])[0]


@FEWER
@given(configs, pods, containers, st.lists(env_entries, max_size=8), views)
def test_a_container_differing_only_in_env_gets_its_own_reply(config, pod, container, env, view):
    memo = ReplyMemo()
    other = container._replace(env=tuple(env))
    for one in (container, other, container):
        got = remembered_or_fresh(memo, config, pod, one, view)
        if got is not None:
            assert got == fresh(config, pod, one, view, plan(config, pod, one)[1])[0]


class Views:
    """The node view builder's one method, handing out a view set by the test."""

    def __init__(self, view):
        self.view = view

    def build(self, runtime_accepts_cdi=False):
        return replace(self.view, runtime_accepts_cdi=runtime_accepts_cdi)


def test_an_equal_environment_is_answered_from_memory_and_a_new_generation_forgets(monkeypatch):
    import mokka.nri.inject as inject
    calls = []
    real = inject.adjust

    def counting(*args):
        calls.append(args)
        return real(*args)
    monkeypatch.setattr(inject, "adjust", counting)
    views = Views(full_view())
    handle = pipeline.handler(Config(), views, StagingGate())
    pod = nri_pb2.PodSandbox(namespace="default", annotations={names.ANNOTATION_DEVICES: "true"})

    def reply(*env):
        return nri_pb2.CreateContainerResponse.FromString(
            handle(pod, nri_pb2.Container(name="app", env=env), RuntimeInfo())).adjust

    def env_of(*env):
        return {kv.key: kv.value for kv in reply(*env).env}
    first = env_of("PATH=/bin", "HOSTNAME=a")
    gpus = [d.path for d in reply("PATH=/bin").linux.devices if d.path.startswith("/dev/nvidia")]
    assert len(gpus) > 1
    assert env_of("HOSTNAME=b", "PATH=/bin") == first           # PATH read, HOSTNAME not
    assert len(calls) == 1
    assert env_of("PATH=/usr/bin")["PATH"] == f"{MOUNT.bin}:/usr/bin"
    assert len(calls) == 2
    # The agent restaged a smaller node: the new generation is decided afresh.
    views.view = replace(views.view, dev_nodes=views.view.dev_nodes[:1],
                         generation=views.view.generation + 1)
    assert [d.path for d in reply("PATH=/bin").linux.devices if d.path in gpus] == gpus[:1]
    assert len(calls) == 3


@FEWER
@given(st.lists(env_entries | st.just("A=x\0B=y") | st.just("B=y"), max_size=8),
       st.lists(st.sampled_from(["A", "B", "", "A=", "B\0", names.ENV_PATH, names.ENV_IB])
                | env_entries, max_size=6),
       st.lists(env_entries, max_size=8))
def test_the_memo_s_env_check_agrees_with_the_decision_s_own_reads(env, keys, other):
    # What the memo compares (EnvSet.agrees) is what the decision would have
    # read (EnvSet.authored), NULs inside entries and odd keys included.
    from mokka.nri.inject.env import EnvSet, probes_for
    seen = EnvSet(env)
    for key in keys:
        seen.authored(key)
    probes = probes_for(seen.reads())
    assert EnvSet(env).agrees(probes)
    candidate = EnvSet(other)
    same = all(candidate.authored(key) == value for key, value in seen.reads())
    assert EnvSet(other).agrees(probes) == same
