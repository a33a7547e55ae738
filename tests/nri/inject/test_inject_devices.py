"""Every mock GPU for a devices-annotated container, and an allocation is never widened.

The device injection modes, raw and cdi (MEP-0002).
"""

from __future__ import annotations

import pytest

from mokka.core import names
from mokka.nri.inject import adjust, devices
from tests.nri.inject.builders import (MOCK_DEVICE_EDITS, allocated, config, device_paths, env_of,
                                       full_view, gpu_node, plain, pod)

DEVICES = names.ANNOTATION_DEVICES
VIEW = full_view()
ALL_NODES = [d.path for d in VIEW.dev_nodes]
CDI_NAME = names.CDI_MOCK_DEVICE_ALL

CASES = [
    # id, config, container, view, expected devices, expected cdi devices, warning(s) or None
    ("raw: every staged node, in view order", config(), plain(), VIEW, ALL_NODES, (), None),
    ("raw: allocation wins, nothing added", config(), allocated(2), VIEW, [], (), None),
    ("raw: cdi-evidence allocation wins",
     config(), plain(cdi_devices=(f"{names.CDI_KIND_DEVICE_PLUGIN}=1",)), VIEW, [], (), None),
    ("raw: empty device tree -> overlay only, warned",
     config(), plain(), full_view(dev_nodes=()), [], (), devices.NO_DEVICE_NODES),
    ("raw: ignores a staged CDI spec", config(), plain(), full_view(runtime_accepts_cdi=True),
     ALL_NODES, (), None),
    ("cdi: runtime takes the reference, no raw nodes", config(device_injection_mode="cdi"), plain(),
     full_view(runtime_accepts_cdi=True), [], (CDI_NAME,), None),
    ("cdi: allocation wins, no reference",
     config(device_injection_mode="cdi"), allocated(), full_view(runtime_accepts_cdi=True), [], (), None),
    ("cdi: custom device name", config(device_injection_mode="cdi", cdi_device_name="example.com/gpu=all"),
     plain(), full_view(runtime_accepts_cdi=True), [], ("example.com/gpu=all",), None),
    ("cdi: spec not staged -> raw, warned", config(device_injection_mode="cdi"), plain(),
     full_view(runtime_accepts_cdi=True, cdi_spec_staged=False), ALL_NODES, (), devices.SPEC_NOT_STAGED),
    ("cdi: spec not staged and empty tree -> overlay only",
     config(device_injection_mode="cdi"), plain(),
     full_view(cdi_spec_staged=False, dev_nodes=()), [], (),
     (devices.SPEC_NOT_STAGED, devices.NO_DEVICE_NODES)),
    ("cdi: runtime without CDI gets the device's edits applied",
     config(device_injection_mode="cdi"), plain(), full_view(runtime_accepts_cdi=False),
     [d.path for d in MOCK_DEVICE_EDITS[1].devices], (), None),
    ("cdi: runtime without CDI and no edits for the name -> raw, warned",
     config(device_injection_mode="cdi"), plain(), full_view(runtime_accepts_cdi=False, cdi_edits={}),
     ALL_NODES, (), devices.NO_EDITS.format(name=CDI_NAME)),
    ("unknown mode -> raw, warned", config(device_injection_mode="CDI"), plain(), VIEW, ALL_NODES, (),
     devices.UNKNOWN_MODE.format(mode="CDI")),
]


@pytest.mark.parametrize("cfg, container, view, want_devices, want_cdi, warning",
                         [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_device_delivery(cfg, container, view, want_devices, want_cdi, warning):
    decision = adjust(cfg, pod(DEVICES), container, view)
    assert decision.adjustment is not None
    assert device_paths(decision) == want_devices
    assert decision.adjustment.cdi_devices == want_cdi
    want_warnings = warning if isinstance(warning, tuple) else (warning,) if warning else ()
    assert decision.warnings == want_warnings
    # Every GPU delivery keeps the overlay and mock NVML on.
    assert len(decision.adjustment.mounts) >= 2
    assert names.ENV_NVML_CONFIG in env_of(decision)


def test_cdi_edits_env_is_applied_over_the_container():
    cfg = config(device_injection_mode="cdi")
    container = plain(env=(f"{names.ENV_CDI_DEVICE_SOURCE}=raw",))
    env = env_of(adjust(cfg, pod(DEVICES), container, full_view()))
    assert env[names.ENV_CDI_DEVICE_SOURCE] == "cdi"


def test_raw_nodes_carry_numbers_and_mode():
    decision = adjust(config(), pod(DEVICES), plain(), VIEW)
    assert decision.adjustment.devices[0] == gpu_node(0)


def test_inherited_privileged_nodes_are_not_duplicated():
    # A privileged, devices-annotated pod already has /dev/nvidia0: the node is
    # still delivered once (the runtime replaces by path), never twice.
    decision = adjust(config(), pod(DEVICES), plain(devices=(gpu_node(0),)), VIEW)
    assert device_paths(decision).count("/dev/nvidia0") == 1
