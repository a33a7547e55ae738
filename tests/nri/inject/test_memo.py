"""The driver's decision memo (mokka.nri.memo) against the decision itself:
whatever it has remembered, it answers exactly what ``adjust`` answers."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from mokka.core import names
from mokka.nri import memo as memomod
from mokka.nri.inject import Config, Container, Pod, adjust, plan
from tests.nri.inject.builders import MOUNT, full_view
from tests.nri.inject.strategies import (EXAMPLES, SETTINGS, configs, containers, env_entries, pods,
                                         views)

#: A quarter of the decision's own examples: each runs several decisions.
FEWER = settings(parent=SETTINGS, max_examples=max(50, EXAMPLES // 4))


@FEWER
@given(configs, pods, st.lists(containers, min_size=2, max_size=6), views)
def test_the_memo_answers_what_adjust_answers(config, pod, batch, view):
    memo = memomod.DecisionMemo(config)
    for container in batch:
        reason, selection = plan(config, pod, container)
        if selection is None:
            continue
        assert memo.decide(pod, container, view, selection) == adjust(
            config, pod, container, view, selection)


@FEWER
@given(configs, pods, containers, st.lists(env_entries, max_size=8), views)
def test_a_container_differing_only_in_env_gets_its_own_decision(config, pod, container, env, view):
    memo = memomod.DecisionMemo(config)
    other = replace(container, env=tuple(env))
    for one in (container, other, container):
        reason, selection = plan(config, pod, one)
        if selection is not None:
            assert memo.decide(pod, one, view, selection) == adjust(config, pod, one, view, selection)


def test_an_equal_environment_is_answered_from_memory_and_a_new_view_forgets():
    import mokka.nri.inject as inject
    config, view = Config(), full_view()
    pod = Pod(annotations={names.ANNOTATION_DEVICES: "true"})
    calls = []
    memo = memomod.DecisionMemo(config)
    real = inject.adjust

    def counting(*args):
        calls.append(args)
        return real(*args)
    inject.adjust = counting
    try:
        def decide(env, v=view):
            ctr = Container(name="app", env=env)
            return memo.decide(pod, ctr, v, plan(config, pod, ctr)[1])
        first = decide(("PATH=/bin", "HOSTNAME=a"))
        assert decide(("HOSTNAME=b", "PATH=/bin")) is first           # PATH read, HOSTNAME not
        assert len(calls) == 1
        moved = decide(("PATH=/usr/bin",))
        assert len(calls) == 2 and dict(moved.adjustment.env)["PATH"] == f"{MOUNT.bin}:/usr/bin"
        assert decide(("PATH=/bin",), replace(view, hca_count=5)) is not first   # new view
        assert len(calls) == 3
    finally:
        inject.adjust = real


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
