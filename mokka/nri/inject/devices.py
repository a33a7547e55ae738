"""Every mock GPU, for a devices-annotated container with no allocation.

This is the management path: a monitoring agent gets the whole node without
scheduler accounting. An allocated container never comes here (MEP-0002:
whatever the scheduler allocated is never widened).

deviceInjectionMode changes how, never whether:

* raw: the staged /dev/nvidia* char nodes go straight into the adjustment, with
  the MIG config and monitor capability nodes (every MIG device of the node);
* cdi: a reference to the configured CDI device, only while its spec is staged
  (containerd fails creation on an unresolvable name, so an unstaged spec falls
  back to raw); a runtime that cannot take CDI references gets the device's
  edits applied directly instead, and raw if the spec has none for the name.

Never both a CDI reference and raw nodes: they describe the same GPUs.
A missing or empty device tree degrades to overlay only, with a warning.
"""

from __future__ import annotations

from mokka.core import names
from mokka.nri.inject import cdi, switch
from mokka.nri.inject.draft import Draft
from mokka.nri.inject.model import Config, NodeView, Pod

MODE_RAW, MODE_CDI = names.DEVICE_INJECTION_MODES

SPEC_NOT_STAGED = "cdi device injection requested but no spec is staged; falling back to raw device nodes"
NO_EDITS = ("runtime cannot take CDI devices and the staged spec has no edits for {name}; "
            "falling back to raw device nodes")
UNKNOWN_MODE = "unknown device injection mode {mode!r}; using raw device nodes"
NO_DEVICE_NODES = ("device injection requested but the device tree holds no device nodes; "
                   "injecting overlay only (has the node agent staged this node?)")


def requested(config: Config, pod: Pod) -> bool:
    return switch.is_true(pod.annotations, config.device_annotation)


def attach_all(config: Config, view: NodeView, draft: Draft) -> None:
    mode = config.device_injection_mode
    if mode == MODE_CDI:
        if not view.cdi_spec_staged:
            draft.warn(SPEC_NOT_STAGED)
        elif cdi.deliver(draft, view, config.cdi_device_name):
            return
        else:
            draft.warn(NO_EDITS.format(name=config.cdi_device_name))
    elif mode != MODE_RAW:
        # Startup rejects unknown modes; this keeps the decision total anyway.
        draft.warn(UNKNOWN_MODE.format(mode=mode))
    _attach_raw(view, draft)


def _attach_raw(view: NodeView, draft: Draft) -> None:
    if not view.dev_nodes:
        draft.warn(NO_DEVICE_NODES)
        return
    draft.add_devices(view.dev_nodes)
    # The whole node's MIG devices too: the config and monitor capabilities.
    draft.add_devices(view.mig_caps)
