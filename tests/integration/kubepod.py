"""Run a Kubernetes pod template through CRI, the way the kubelet would, in the test containerd.

There is no kubelet here, so this module plays its part for one pod: it turns a rendered
pod template (a dict, e.g. a DaemonSet's ``spec.template`` from ``helm template``) into
CRI calls — the sandbox, each container's command, arguments, environment, mounts,
security context — and runs its probes and preStop hooks. What it does not model it
refuses with an error instead of skipping silently, so a chart that grows a feature the
test cannot run fails loudly.

Host paths are mapped through ``host_path`` (a function), so a chart's ``/var/lib/…``
hostPath lands under a scratch root; ConfigMap volumes are written in the kubelet's
atomic layout (``..data`` symlink to a timestamped directory, one symlink per key), so a
file watch sees what it would see on a node; memory-backed emptyDirs are tmpfs mounts.

    pod = KubePod(client, template, host_path=..., configmaps={...}, scratch=...)
    pod.start()
    pod.wait_ready(timeout=60)
    pod.exec("node-agent", ["nvidia-smi", "-L"])
    pod.stop()              # preStop hooks, StopContainer with the grace period, sandbox gone
"""

from __future__ import annotations

import dataclasses
import http.client
import os
import re
import socket
import subprocess
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Callable, Mapping

from tests.integration.cri import CRIClient
from tests.integration.pods import ExecResult, container_state, exec_sync, start_container
from tests.waiting import wait_until

PROPAGATION = {None: "PROPAGATION_PRIVATE", "None": "PROPAGATION_PRIVATE",
               "HostToContainer": "PROPAGATION_HOST_TO_CONTAINER",
               "Bidirectional": "PROPAGATION_BIDIRECTIONAL"}
# hostPath types whose path must already exist, and the one the kubelet creates.
HOST_PATH_MUST_EXIST = {"Directory", "File", "Socket", "CharDevice", "BlockDevice"}


class PodSpecError(Exception):
    """The template uses something this stand-in kubelet cannot run."""


def normalise_image(ref: str) -> str:
    """What the kubelet's image reference ``ref`` means to containerd (docker.io/library/…)."""
    name = ref.split("@")[0]
    first = name.split("/")[0]
    if "/" not in name:
        ref = f"docker.io/library/{ref}"
    elif "." not in first and ":" not in first and first != "localhost":
        ref = f"docker.io/{ref}"
    last = ref.rsplit("/", 1)[-1]
    if ":" not in last and "@" not in ref:
        ref += ":latest"
    return ref


_UNITS = {"": 1, "k": 10**3, "M": 10**6, "G": 10**9, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30}


def quantity_bytes(text: str) -> int:
    """A Kubernetes quantity such as 1Mi or 64k, in bytes (what tmpfs's size= takes)."""
    match = re.fullmatch(r"(\d+)(|k|M|G|Ki|Mi|Gi)", text)
    if not match:
        raise PodSpecError(f"quantity {text!r} is not modelled")
    return int(match.group(1)) * _UNITS[match.group(2)]


_VAR_REF = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


def expand(text: str, env: Mapping[str, str]) -> str:
    """Kubernetes' $(VAR) expansion of command and args: a defined variable is replaced,
    an undefined reference stays as written, ``$$`` is a literal ``$``."""
    def sub(match: re.Match) -> str:
        if match.group(0) == "$$":
            return "$"
        name = match.group(1)
        return env.get(name, match.group(0))
    return _VAR_REF.sub(sub, text)


@dataclasses.dataclass
class PodIdentity:
    name: str
    namespace: str
    node_name: str
    uid: str = dataclasses.field(default_factory=lambda: uuid.uuid4().hex)
    pod_ip: str = "127.0.0.1"      # pods here share the host's network namespace

    def field(self, path: str) -> str:
        values = {"spec.nodeName": self.node_name, "metadata.name": self.name,
                  "metadata.namespace": self.namespace, "metadata.uid": self.uid,
                  "status.podIP": self.pod_ip, "status.hostIP": self.pod_ip}
        if path not in values:
            raise PodSpecError(f"fieldRef {path!r} is not modelled")
        return values[path]


def container_env(container: Mapping[str, Any], ident: PodIdentity) -> list[tuple[str, str]]:
    """The container's environment as the kubelet resolves it (in order, $(VAR) against
    the earlier entries)."""
    resolved: dict[str, str] = {}
    out: list[tuple[str, str]] = []
    if container.get("envFrom"):
        raise PodSpecError("envFrom is not modelled")
    for item in container.get("env") or ():
        name = item["name"]
        if "valueFrom" in item:
            source = item["valueFrom"]
            if set(source) != {"fieldRef"}:
                raise PodSpecError(f"env {name}: only valueFrom.fieldRef is modelled, got {sorted(source)}")
            value = ident.field(source["fieldRef"]["fieldPath"])
        else:
            value = expand(str(item.get("value", "")), resolved)
        resolved[name] = value
        out.append((name, value))
    return out


class KubePod:
    def __init__(self, client: CRIClient, template: Mapping[str, Any], *,
                 host_path: Callable[[str], str], scratch: str | os.PathLike,
                 configmaps: Mapping[str, Mapping[str, str]] | None = None,
                 name: str = "pod", namespace: str = "default", node_name: str = "test-node"):
        self.client = client
        self.pb = client.pb
        self.template = template
        self.spec = template["spec"]
        self.meta = template.get("metadata") or {}
        self.host_path = host_path
        self.scratch = Path(scratch)
        self.configmaps = configmaps or {}
        self.ident = PodIdentity(name=name, namespace=namespace, node_name=node_name)
        self.pod_id: str | None = None
        self.pod_config = None
        self.container_ids: dict[str, str] = {}
        self._volume_paths: dict[str, str] = {}
        self._tmpfs: list[str] = []
        for key in ("initContainers", "ephemeralContainers"):
            if self.spec.get(key):
                raise PodSpecError(f"{key} are not modelled")

    # ------------------------------------------------------------------ volumes

    def _prepare_volumes(self) -> None:
        for volume in self.spec.get("volumes") or ():
            name = volume["name"]
            kinds = set(volume) - {"name"}
            if kinds == {"hostPath"}:
                source = volume["hostPath"]
                path = self.host_path(source["path"])
                kind = source.get("type", "")
                if kind == "DirectoryOrCreate":
                    os.makedirs(path, mode=0o755, exist_ok=True)
                elif kind == "FileOrCreate":
                    os.makedirs(os.path.dirname(path), exist_ok=True)
                    Path(path).touch(exist_ok=True)
                elif kind in HOST_PATH_MUST_EXIST and not os.path.exists(path):
                    raise PodSpecError(f"hostPath {source['path']} ({kind}) does not exist at {path}")
                self._volume_paths[name] = path
            elif kinds == {"configMap"}:
                self._volume_paths[name] = self._write_configmap(name, volume["configMap"])
            elif kinds == {"emptyDir"}:
                path = self.scratch / ".kubelet" / self.ident.uid / "empty-dir" / name
                path.mkdir(parents=True, exist_ok=True)
                if (volume["emptyDir"] or {}).get("medium") == "Memory":
                    size = (volume["emptyDir"] or {}).get("sizeLimit")
                    opts = ["-o", f"size={quantity_bytes(str(size))}"] if size else []
                    subprocess.run(["mount", "-t", "tmpfs", *opts, "tmpfs", str(path)], check=True)
                    self._tmpfs.append(str(path))
                self._volume_paths[name] = str(path)
            else:
                raise PodSpecError(f"volume {name}: {sorted(kinds)} is not modelled")

    def _write_configmap(self, volume: str, source: Mapping[str, Any]) -> str:
        """The kubelet's atomic writer layout: key -> ..data/key, ..data -> ..<stamp>."""
        cm = source["name"]
        if cm not in self.configmaps:
            if source.get("optional"):
                data = {}
            else:
                raise PodSpecError(f"configMap {cm} (volume {volume}) was not rendered")
        else:
            data = self.configmaps[cm]
        items = source.get("items")
        files = {i["path"]: data[i["key"]] for i in items} if items else dict(data)
        root = self.scratch / ".kubelet" / self.ident.uid / "configmap" / volume
        root.mkdir(parents=True, exist_ok=True)
        self.update_configmap_dir(root, files, source.get("defaultMode", 0o644))
        return str(root)

    @staticmethod
    def update_configmap_dir(root: Path, files: Mapping[str, str], mode: int = 0o644) -> None:
        """Swap in a new generation of files as the kubelet does (also used by tests to
        publish a ConfigMap change to a running pod)."""
        stamp = root / f"..{time.strftime('%Y_%m_%d_%H_%M_%S')}.{uuid.uuid4().hex[:9]}"
        stamp.mkdir()
        for rel, text in files.items():
            target = stamp / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
            target.chmod(mode)
        tmp = root / "..data_tmp"
        if tmp.is_symlink():
            tmp.unlink()
        tmp.symlink_to(stamp.name)
        old = os.readlink(root / "..data") if (root / "..data").is_symlink() else None
        os.rename(tmp, root / "..data")
        for rel in files:
            top = rel.split("/")[0]
            link = root / top
            if not link.is_symlink():
                link.symlink_to(f"..data/{top}")
        if old:
            subprocess.run(["rm", "-rf", str(root / old)], check=True)

    def _mounts(self, container: Mapping[str, Any]) -> list:
        mounts = []
        for vm in container.get("volumeMounts") or ():
            if vm["name"] not in self._volume_paths:
                raise PodSpecError(f"volumeMount {vm['name']} names no volume")
            host = self._volume_paths[vm["name"]]
            if vm.get("subPath"):
                host = os.path.join(host, vm["subPath"])
            propagation = vm.get("mountPropagation")
            if propagation not in PROPAGATION:
                raise PodSpecError(f"mountPropagation {propagation!r} is not a Kubernetes value")
            mounts.append(self.pb.Mount(
                container_path=vm["mountPath"], host_path=host, readonly=bool(vm.get("readOnly")),
                propagation=self.pb.MountPropagation.Value(PROPAGATION[propagation])))
        return mounts

    # ------------------------------------------------------------------ containers

    def _namespaces(self):
        pid = self.pb.NODE if self.spec.get("hostPID") else self.pb.CONTAINER
        # No CNI here: every pod uses the host's network, hostNetwork or not.
        return self.pb.NamespaceOption(network=self.pb.NODE, pid=pid, ipc=self.pb.POD)

    def _security(self, container: Mapping[str, Any]):
        sc = dict(self.spec.get("securityContext") or {})
        own = container.get("securityContext") or {}
        sc.update(own)
        known = {"privileged", "allowPrivilegeEscalation", "runAsUser", "runAsGroup", "runAsNonRoot",
                 "readOnlyRootFilesystem", "capabilities", "seccompProfile"}
        unknown = set(sc) - known
        if unknown:
            raise PodSpecError(f"securityContext {sorted(unknown)} is not modelled")
        ctx = self.pb.LinuxContainerSecurityContext(
            privileged=bool(sc.get("privileged")),
            namespace_options=self._namespaces(),
            readonly_rootfs=bool(sc.get("readOnlyRootFilesystem")),
            # The kubelet sets no_new_privs unless privilege escalation is allowed (the
            # API's default is to allow it).
            no_new_privs=sc.get("allowPrivilegeEscalation") is False,
        )
        if "runAsUser" in sc:
            ctx.run_as_user.value = int(sc["runAsUser"])
        if "runAsGroup" in sc:
            ctx.run_as_group.value = int(sc["runAsGroup"])
        caps = sc.get("capabilities") or {}
        if caps:
            ctx.capabilities.add_capabilities.extend(caps.get("add") or [])
            ctx.capabilities.drop_capabilities.extend(caps.get("drop") or [])
        profile = (sc.get("seccompProfile") or {}).get("type")
        if profile == "RuntimeDefault":
            ctx.seccomp.profile_type = self.pb.SecurityProfile.RuntimeDefault
        elif profile not in (None, "Unconfined"):
            raise PodSpecError(f"seccompProfile {profile!r} is not modelled")
        if sc.get("runAsNonRoot") and not sc.get("runAsUser"):
            raise PodSpecError("runAsNonRoot without runAsUser needs the image's user: not modelled")
        return ctx

    def container_config(self, container: Mapping[str, Any]):
        env = container_env(container, self.ident)
        envmap = dict(env)
        config = self.pb.ContainerConfig(
            metadata=self.pb.ContainerMetadata(name=container["name"], attempt=0),
            image=self.pb.ImageSpec(image=normalise_image(container["image"])),
            command=[expand(c, envmap) for c in container.get("command") or ()],
            args=[expand(a, envmap) for a in container.get("args") or ()],
            envs=[self.pb.KeyValue(key=k, value=v) for k, v in env],
            working_dir=container.get("workingDir", ""),
            mounts=self._mounts(container),
            log_path=f"{container['name']}.log",
            linux=self.pb.LinuxContainerConfig(security_context=self._security(container)),
        )
        return config

    def start(self) -> None:
        self._prepare_volumes()
        privileged = any((c.get("securityContext") or {}).get("privileged")
                         for c in self.spec["containers"])
        log_dir = Path(self.client.workdir) / "pods" / f"{self.ident.namespace}_{self.ident.name}_{self.ident.uid}"
        log_dir.mkdir(parents=True, exist_ok=True)
        self.pod_config = self.pb.PodSandboxConfig(
            metadata=self.pb.PodSandboxMetadata(name=self.ident.name, uid=self.ident.uid,
                                                namespace=self.ident.namespace, attempt=0),
            hostname="",
            log_directory=str(log_dir),
            labels={k: str(v) for k, v in (self.meta.get("labels") or {}).items()},
            annotations={k: str(v) for k, v in (self.meta.get("annotations") or {}).items()},
            linux=self.pb.LinuxPodSandboxConfig(
                cgroup_parent=self.client.cgroup_parent,
                security_context=self.pb.LinuxSandboxSecurityContext(
                    namespace_options=self._namespaces(), privileged=privileged)),
        )
        resp = self.client.call("RunPodSandbox", config=self.pod_config, runtime_handler="", timeout=60)
        self.pod_id = resp.pod_sandbox_id
        for container in self.spec["containers"]:
            config = self.container_config(container)
            created = self.client.call("CreateContainer", pod_sandbox_id=self.pod_id, config=config,
                                       sandbox_config=self.pod_config, timeout=60)
            self.container_ids[container["name"]] = created.container_id
            start_container(self.client, created.container_id)

    def volume_path(self, name: str) -> str:
        """Where volume ``name`` lives on this host (a ConfigMap's directory, say)."""
        return self._volume_paths[name]

    def container(self, name: str) -> Mapping[str, Any]:
        for c in self.spec["containers"]:
            if c["name"] == name:
                return c
        raise KeyError(name)

    def state(self, name: str) -> str:
        return container_state(self.client, self.container_ids[name])

    def logs(self, name: str) -> str:
        path = Path(self.pod_config.log_directory) / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def exec(self, name: str, cmd: list[str], timeout: int = 30) -> ExecResult:
        return exec_sync(self.client, self.container_ids[name], cmd, timeout=timeout)

    # ------------------------------------------------------------------ probes and hooks

    def _port(self, container: Mapping[str, Any], port: int | str) -> int:
        if isinstance(port, int) or str(port).isdigit():
            return int(port)
        for p in container.get("ports") or ():
            if p.get("name") == port:
                return int(p["containerPort"])
        raise PodSpecError(f"container {container['name']}: no port named {port!r}")

    def _handler(self, container: Mapping[str, Any], handler: Mapping[str, Any],
                 timeout: float) -> tuple[bool, str]:
        if "httpGet" in handler:
            get = handler["httpGet"]
            port = self._port(container, get["port"])
            conn = http.client.HTTPConnection(get.get("host") or "127.0.0.1", port, timeout=timeout)
            try:
                conn.request("GET", get.get("path", "/"))
                resp = conn.getresponse()
                body = resp.read().decode(errors="replace")
                return 200 <= resp.status < 400, f"{resp.status} {body.strip()}"
            except OSError as exc:
                return False, f"{type(exc).__name__}: {exc}"
            finally:
                conn.close()
        if "exec" in handler:
            result = self.exec(container["name"], handler["exec"]["command"], timeout=int(timeout) or 1)
            return result.ok, (result.stdout + result.stderr).strip()
        if "tcpSocket" in handler:
            port = self._port(container, handler["tcpSocket"]["port"])
            try:
                socket.create_connection(("127.0.0.1", port), timeout=timeout).close()
                return True, "connected"
            except OSError as exc:
                return False, str(exc)
        if "sleep" in handler:
            time.sleep(float(handler["sleep"]["seconds"]))
            return True, "slept"
        raise PodSpecError(f"handler {sorted(handler)} is not modelled")

    def probe(self, name: str, kind: str) -> tuple[bool, str] | None:
        """Run ``kind`` (readinessProbe, livenessProbe, startupProbe) of container
        ``name`` once; None when the container has none."""
        container = self.container(name)
        spec = container.get(kind)
        if not spec:
            return None
        return self._handler(container, spec, float(spec.get("timeoutSeconds", 1)))

    def wait_ready(self, timeout: float = 60.0) -> None:
        """Until every container's readiness probe passes (and none has exited)."""
        last: dict[str, str] = {}

        def ready() -> bool:
            for c in self.spec["containers"]:
                if self.state(c["name"]) != "CONTAINER_RUNNING":
                    raise AssertionError(f"container {c['name']} is {self.state(c['name'])}:\n"
                                         f"{self.logs(c['name'])[-4000:]}")
                result = self.probe(c["name"], "readinessProbe")
                if result is not None:
                    last[c["name"]] = result[1]
                    if not result[0]:
                        return False
            return True
        try:
            wait_until(ready, f"every container of pod {self.ident.name} ready", timeout=timeout,
                       interval=0.5)
        except Exception as exc:
            logs = "\n".join(f"--- {c['name']}: {last.get(c['name'])}\n{self.logs(c['name'])[-3000:]}"
                             for c in self.spec["containers"])
            raise AssertionError(f"pod not ready: {exc}\n{logs}") from None

    def stop(self) -> None:
        """What the kubelet does on deletion: preStop hooks, then StopContainer with the
        remaining grace period, then the sandbox goes."""
        if self.pod_id is None:
            return
        grace = int(self.spec.get("terminationGracePeriodSeconds", 30))
        try:
            deadline = time.monotonic() + grace
            for c in self.spec["containers"]:
                pre = ((c.get("lifecycle") or {}).get("preStop"))
                if pre and c["name"] in self.container_ids and self.state(c["name"]) == "CONTAINER_RUNNING":
                    self._handler(c, pre, timeout=max(1.0, deadline - time.monotonic()))
            left = max(2, int(deadline - time.monotonic()))

            errors: list[BaseException] = []

            def stop_one(cid: str) -> None:
                # StopContainerRequest has a timeout field of its own (the grace period).
                request = self.pb.StopContainerRequest(container_id=cid, timeout=left)
                try:
                    self.client.call("StopContainer", request, timeout=left + 30)
                except Exception as exc:  # re-raised below, after every container had its turn
                    errors.append(exc)
            # The kubelet stops a pod's containers in parallel, each with the grace left.
            threads = [threading.Thread(target=stop_one, args=(cid,)) for cid in self.container_ids.values()]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            if errors:
                raise errors[0]
            self.client.call("StopPodSandbox", pod_sandbox_id=self.pod_id, timeout=60)
            self.client.call("RemovePodSandbox", pod_sandbox_id=self.pod_id, timeout=60)
        finally:
            self.pod_id = None
            for path in reversed(self._tmpfs):
                subprocess.run(["umount", "-l", path], check=False)
            self._tmpfs.clear()
