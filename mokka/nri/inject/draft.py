"""The adjustment under construction: what each step adds, collected in order.

Steps append; nothing is ever removed. Devices are kept once per container
path and mounts once per identical mount, so two steps naming the same node
(a CDI edit and a raw node, say) cannot make the runtime create it twice.
"""

from __future__ import annotations

from typing import Iterable

from mokka.nri.inject.env import EnvSet
from mokka.nri.inject.model import Adjustment, Container, Device, Hook, Mount


class Draft:
    __slots__ = ("env", "mounts", "devices", "cdi_devices", "hooks", "warnings", "_device_paths")

    def __init__(self, container: Container, warnings: Iterable[str] = ()):
        self.env = EnvSet(container.env)
        self.mounts: list[Mount] = []
        self.devices: list[Device] = []
        self.cdi_devices: list[str] = []
        self.hooks: list[Hook] = []
        self.warnings: list[str] = list(warnings)
        self._device_paths: set[str] = set()

    def warn(self, message: str) -> None:
        self.warnings.append(message)

    def add_mounts(self, mounts: Iterable[Mount]) -> None:
        for mount in mounts:
            if mount not in self.mounts:
                self.mounts.append(mount)

    def add_devices(self, devices: Iterable[Device]) -> None:
        for device in devices:
            if device.path not in self._device_paths:
                self._device_paths.add(device.path)
                self.devices.append(device)

    def add_cdi_devices(self, cdi_names: Iterable[str]) -> None:
        for name in cdi_names:
            if name not in self.cdi_devices:
                self.cdi_devices.append(name)

    def add_hook(self, hook: Hook) -> None:
        if hook not in self.hooks:
            self.hooks.append(hook)

    def freeze(self) -> Adjustment | None:
        """The finished adjustment, or None when no step found anything to add."""
        env = self.env.changed()
        if not (self.mounts or env or self.devices or self.cdi_devices or self.hooks):
            return None
        return Adjustment(mounts=tuple(self.mounts), env=env,
                          devices=tuple(self.devices), cdi_devices=tuple(self.cdi_devices),
                          hooks=tuple(self.hooks))
