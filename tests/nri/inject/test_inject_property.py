"""Properties over thousands of generated pods and containers.

adjust is total (never raises), never widens an allocation, emits each env
key once and only when it changes the container's effective value, and a
container carrying the adjustment's overlay is never adjusted again.
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings

from mokka.core import names
from mokka.nri.inject import (Adjustment, Config, Container, Decision, DeviceRule, NodeView, Pod,
                              adjust, gpu, skip, skip_reason)
from mokka.nri.inject.env import EnvSet
from tests.nri.inject.builders import control_nodes, gpu_node, imex_channel
from tests.nri.inject.strategies import (EXAMPLES, SETTINGS, allocated_containers, configs,
                                         containers, pods, views)


@SETTINGS
@given(configs, pods, containers, views)
def test_adjust_is_total_and_well_formed(config, pod, container, view):
    decision = adjust(config, pod, container, view)
    assert isinstance(decision, Decision) and isinstance(decision.reason, str) and decision.reason
    assert all(isinstance(w, str) for w in decision.warnings)
    reason = skip_reason(config, pod, container)
    if reason is not None:
        assert decision.adjustment is None and decision.reason == reason
    if decision.adjustment is None:
        return
    adjustment = decision.adjustment
    assert isinstance(adjustment, Adjustment) and adjustment != Adjustment()
    keys = [key for key, _ in adjustment.env]
    assert len(keys) == len(set(keys)), "each env key emitted once"
    effective = EnvSet(container.env)
    for key, value in adjustment.env:
        assert effective.get(key) != value, f"{key} emitted without a change"
    assert len({d.path for d in adjustment.devices}) == len(adjustment.devices)


@SETTINGS
@given(configs, pods, allocated_containers, views)
def test_an_allocation_is_never_widened(config, pod, container, view):
    config = replace(config, toolkit_cdi_annotations=False)
    assert gpu.allocated(container)
    decision = adjust(config, pod, container, view)
    if decision.adjustment is None:
        return
    # Only IMEX channels, which sit outside the allocation rule, may be added.
    assert set(decision.adjustment.devices) <= set(view.imex_channels)
    assert decision.adjustment.cdi_devices == ()


@settings(SETTINGS, max_examples=max(1, EXAMPLES // 3))
@given(configs, pods, containers | allocated_containers, views)
def test_readjusting_an_adjusted_container_is_a_no_op(config, pod, container, view):
    first = adjust(config, pod, container, view).adjustment
    if first is None or not first.mounts:
        return
    again = container._replace(mount_destinations=container.mount_destinations
                    + tuple(m.destination for m in first.mounts))
    assert adjust(config, pod, again, view).reason == skip.ALREADY_MOUNTED


def test_generators_reach_the_interesting_cases():
    # Positive control for the properties above: the strategies' building
    # blocks can produce an allocated container and a devices-annotated pod.
    allocated = Container(devices=(gpu_node(0),) + control_nodes(),
                          device_rules=(DeviceRule(True, "c", names.NVIDIA_MAJOR, 0, "rwm"),))
    assert gpu.allocated(allocated)
    decision = adjust(Config(), Pod(annotations={names.ANNOTATION_IMEX_CHANNELS: "true"}), allocated,
                      NodeView(imex_channels=(imex_channel(0),)))
    assert decision.adjustment.devices == (imex_channel(0),)
