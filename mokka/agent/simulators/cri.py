"""cri: the toolkit, NRI and management CDI specs in --cdi-spec-dir, and containerd.

Stage withdraws the NRI plugin's spec first, so a container created while the
tree changes gets raw device nodes rather than a spec naming nodes a smaller
profile removed; Apply (re)publishes all three once every surface staged, then
sets up the node's containerd (``mokka.agent.containerd.setup``: CDI and NRI on,
the ``nvidia`` handler when the image carries a toolkit, restarts) unless
--container-runtime=none. Revoke withdraws both halves.
"""

from __future__ import annotations

import os

from mokka.agent.containerd.setup import ContainerdSetup
from mokka.agent.desired import Desired
from mokka.agent.hostfs import Entry, File
from mokka.agent.simulators import Host, Readiness
from mokka.core import cdi, names

OWNER = "cri"


def toolkit_options(host: Host) -> dict:
    """The toolkit spec's edits as this node has them (cdi.toolkit_edits' options)."""
    # The toolkit spec mounts config.yaml's directory alone (at /etc/nvml-mock), so the
    # fabricmanager state dir is not beside it there: the spec mounts it and names it,
    # while the fabricmanager daemon has it (Apply runs after the daemons start).
    # Checked where the agent sees it, named where the runtime finds it.
    fabric = host.runtime_view.fabric_state if os.path.isdir(host.overlay.fabric_state) else None
    return {"nvml_library_staged": host.native.nvml_library is not None,
            "cuda_library_staged": host.native.cuda_library is not None,
            "proc_hook_staged": host.native.proc_hook is not None,
            "fabricmanager_state_dir": fabric}


def tree(desired: Desired, host: Host) -> dict[str, Entry]:
    # The specs' host paths are read by the runtime, not by the agent: in a pod they are the
    # node's paths (--runtime-host-root), not the agent's /host view of them.
    specs = dict(cdi.specs(desired.state, host.runtime_view, **toolkit_options(host)))
    specs[names.CDI_SPEC_MANAGEMENT_FILE] = cdi.management_spec(
        desired.state, host.runtime_view, proc_hook_staged=host.native.proc_hook is not None)
    return {os.path.join(host.cdi_dir, file): File(cdi.to_yaml(spec).encode())
            for file, spec in specs.items()}


class Cri:
    name = OWNER

    def __init__(self, host: Host, runtime: ContainerdSetup | None = None):
        self.host = host
        self.runtime = runtime
        self._readiness = Readiness("CDI specs not published yet")
        self._nri_spec = os.path.join(host.cdi_dir, names.CDI_SPEC_MOCK_FILE)

    def stage(self, desired: Desired) -> None:
        self._readiness.fail("restaging: NRI CDI spec withdrawn")
        self.host.fs.withdraw(OWNER, self._nri_spec)

    def apply(self, desired: Desired) -> None:
        self.host.fs.converge(OWNER, tree(desired, self.host))
        if self.runtime is not None:
            try:
                self.runtime.apply()
            except Exception as exc:
                self._readiness.fail(f"container runtime: {exc}")
                self.host.log.error("container runtime setup failed", simulator=OWNER,
                                    error=str(exc))
                raise
        self._readiness.ok()

    def revoke(self) -> None:
        self._readiness.fail("revoked")
        self.host.fs.remove_owner(OWNER)
        if self.runtime is not None:
            self.runtime.revoke()

    def discard(self) -> None:
        self.host.fs.remove_owner(OWNER)
        if self.runtime is not None:
            self.runtime.discard()

    def ready(self) -> tuple[bool, str]:
        return self._readiness.ready()
