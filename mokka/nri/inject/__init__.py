"""The NRI decision: which containers get what.

No containerd, protobuf or socket type crosses into this package: the driver
converts the runtime's messages into the plain values of ``model`` and the
adjustment back. The host facts a decision needs arrive as a ``NodeView``
(built by ``mokka.nri.nodeview``), so nothing here touches the disk.

``adjust`` is a fixed list of steps, one rule per module, and is total: no
step can fail. Surfaces that are not staged degrade the injection (with a
warning in the decision) instead of blocking container creation; failing
open on an unexpected error is the driver's job, not a rule's.
"""

from __future__ import annotations

from mokka.nri.inject import devices, env, ib, imex, management, overlay, prochook, skip
from mokka.nri.inject.draft import Draft
from mokka.nri.inject.model import (Adjustment, CDIEdits, Config, Container, Decision, Device,
                                    DeviceRule, Hook, Mount, NodeView, Pod)
from mokka.nri.inject.selection import Selection, select

__all__ = ["adjust", "plan", "skip_reason", "Adjustment", "CDIEdits", "Config", "Container", "Decision",
           "Device", "DeviceRule", "Hook", "Mount", "NodeView", "Pod", "Selection"]


def plan(config: Config, pod: Pod, container: Container) -> tuple[str | None, Selection | None]:
    """(why ``adjust`` would leave the container as authored whatever is staged,
    or None; the selection, once it is read).

    Needs no node view, so the driver can ask before the staging gate and keep
    containers it skips anyway out of its "left unmodified" warnings, then hand
    the selection to ``adjust`` instead of reading it twice.
    """
    reason = skip.authored_reason(config, pod, container)
    if reason is not None:
        return reason, None
    selection = select(config, pod, container)
    return (None if selection.any else skip.NOTHING_SELECTED), selection


def skip_reason(config: Config, pod: Pod, container: Container) -> str | None:
    """Why ``adjust`` would leave the container as authored whatever is staged."""
    return plan(config, pod, container)[0]


def adjust(config: Config, pod: Pod, container: Container, view: NodeView,
           selection: Selection | None = None) -> Decision:
    """What to add to ``container``; ``Decision.adjustment`` None leaves it as authored.

    ``selection`` is ``plan``'s for the same config, pod and container (it
    depends on nothing else); without it, it is read here.
    """
    if selection is None:
        reason, selection = plan(config, pod, container)
        if selection is None:
            return Decision(None, reason)
    if not selection.any:
        return Decision(None, skip.NOTHING_SELECTED, selection.warnings)

    draft = Draft(container, selection.warnings)
    # The proc hook gives a GPU container's /sys its own GPUs' PCI tree (and, with
    # InfiniBand, its HCAs), whatever program reads it. libmockfs and MOCK_PCI_ROOT
    # would show a dynamically linked reader the node's whole staged tree instead:
    # only a GPU container no staged hook serves gets them.
    pci_tree = selection.gpu and not view.proc_hook_staged
    if selection.overlay:
        overlay.attach(config, view, draft, pci_tree=pci_tree)
        env.apply_table(draft.env, config, view, gpu=selection.gpu,
                        infiniband=selection.infiniband, pci_tree=pci_tree)
    if selection.gpu:
        env.name_allocated(draft.env, selection.allocated_ids)
        prochook.attach(config, view, draft)
    if selection.infiniband:
        ib.check_hcas(view, draft)
    if selection.all_gpus:
        devices.attach_all(config, view, draft)
    if selection.imex:
        imex.attach(view, draft)
    if selection.management:
        management.attach(selection.management, view, draft)

    adjustment = draft.freeze()
    env_read = draft.env.reads()
    if adjustment is None:
        return Decision(None, skip.NOTHING_TO_ADD, tuple(draft.warnings), env_read)
    return Decision(adjustment, selection.describe(), tuple(draft.warnings), env_read)
