"""A real containerd (1.7, NRI v0.6.1) in a scratch folder, CRI and NRI on."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from typing import Sequence

from tests.integration import leftovers
from tests.integration.busybox import IMAGE_REF, build_busybox_image
from tests.integration.cri import CRIClient, cri_client
from tests.integration.ctrconfig import config_toml
from tests.integration.kernel import KernelRefusal, kernel_refusal_reason, overlay_supported
from tests.integration.runtime import HarnessError, RuntimePaths
from tests.waiting import wait_until

K8S_NAMESPACE = "k8s.io"


_IMAGE_CACHE: dict[tuple[str, str], Path] = {}


class Containerd:
    """A real containerd running in a scratch folder, CRI + NRI enabled.

    ``Containerd(paths, workdir, enable_cdi=False, cdi_spec_dirs=None)`` starts it
    (use ``start=False`` to only write the configuration). Sockets live in a short
    folder under /tmp (unix socket paths are limited to 107 bytes); root, state, logs
    and CNI/CDI/NRI folders live in ``workdir``.

    Attributes: ``cri_socket`` (= containerd's gRPC address), ``ttrpc_socket``,
    ``nri_socket``, ``nri_plugin_dir`` (pre-launched plugins, NN-name),
    ``nri_conf_dir``, ``cdi_spec_dirs``, ``snapshotter``, ``config_path``,
    ``log_path``, ``cgroup_parent``, ``image_ref``, ``pid``.
    """

    def __init__(
        self,
        paths: RuntimePaths,
        workdir: str | os.PathLike,
        *,
        enable_cdi: bool = False,
        cdi_spec_dirs: Sequence[str | os.PathLike] | None = None,
        snapshotter: str | None = None,
        log_level: str = "info",
        nri: bool = True,
        start: bool = True,
        start_timeout: float = 20.0,
        image_ref: str = IMAGE_REF,
    ):
        self.paths = paths
        self.workdir = Path(workdir).resolve()
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.sockdir = Path(tempfile.mkdtemp(prefix="mkctr-", dir="/tmp"))
        self.cri_socket = str(self.sockdir / "containerd.sock")
        self.ttrpc_socket = str(self.sockdir / "containerd.sock.ttrpc")
        self.nri_socket = str(self.sockdir / "nri" / "nri.sock")
        self.runc_root = str(self.sockdir / "runc")  # runc's state (--root), not /run/containerd/runc
        self.root = self.workdir / "root"
        self.state = self.workdir / "state"
        self.nri_plugin_dir = self.workdir / "nri" / "plugins"
        self.nri_conf_dir = self.workdir / "nri" / "conf.d"
        self.cni_bin_dir = self.workdir / "cni" / "bin"
        self.cni_conf_dir = self.workdir / "cni" / "net.d"
        self.pod_log_root = self.workdir / "pod-logs"
        if cdi_spec_dirs is None:
            cdi_spec_dirs = [self.workdir / "cdi"]
        self.cdi_spec_dirs = [Path(d) for d in cdi_spec_dirs]
        self.enable_cdi = enable_cdi
        self.nri = nri
        self.log_level = log_level
        self.image_ref = image_ref
        self.start_timeout = start_timeout
        self.config_path = self.workdir / "config.toml"
        self.log_path = self.workdir / "containerd.log"
        self.cgroup_parent = f"/mokka-it-{uuid.uuid4().hex[:10]}"
        self.proc: subprocess.Popen | None = None
        self._log_file = None
        self._clients: list[CRIClient] = []
        self._cri: CRIClient | None = None
        self._stopped = False
        for d in (self.root, self.state, self.nri_plugin_dir, self.nri_conf_dir,
                  self.cni_bin_dir, self.cni_conf_dir, self.pod_log_root, *self.cdi_spec_dirs):
            Path(d).mkdir(parents=True, exist_ok=True)
        self.snapshotter = snapshotter or self._pick_snapshotter()
        self.write_config()
        if start:
            try:
                self.start()
            except BaseException:
                self.stop()
                raise

    # configuration -------------------------------------------------------------------
    def _pick_snapshotter(self) -> str:
        ok, why = overlay_supported(self.root)
        self.overlay_probe = why
        return "overlayfs" if ok else "native"

    def config_text(self) -> str:
        return config_toml(self)

    def write_config(self) -> None:
        self.config_path.write_text(self.config_text())

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["PATH"] = os.pathsep.join(self.paths.bin_dirs + [env.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")])
        return env

    # lifecycle -------------------------------------------------------------------------
    def start(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            raise HarnessError("containerd already running")
        self._stopped = False
        Path(self.nri_socket).parent.mkdir(parents=True, exist_ok=True)
        self._log_file = open(self.log_path, "ab")
        self._log_file.write(f"\n===== mokka harness: starting containerd at {time.time():.3f}\n".encode())
        self._log_file.flush()
        self.proc = subprocess.Popen(
            [self.paths.containerd, "--config", str(self.config_path)],
            stdin=subprocess.DEVNULL,
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
            env=self._env(),
            start_new_session=True,
        )
        self._wait_ready()
        self._ensure_image()

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def _wait_ready(self) -> None:
        import grpc

        client = self.cri

        def ready():
            if self.proc.poll() is not None:
                raise HarnessError(
                    f"containerd exited with {self.proc.returncode} during start-up; log:\n{self.log_text()[-4000:]}")
            try:
                client.version(timeout=1.0)
            except grpc.RpcError:              # not listening yet
                return False
            return not self.nri or os.path.exists(self.nri_socket)

        wait_until(ready, lambda: f"containerd's CRI (log tail:\n{self.log_text()[-4000:]})",
                   timeout=self.start_timeout, interval=0.05)

    def ctr(self, *args: str, check: bool = True, timeout: float = 60.0) -> subprocess.CompletedProcess:
        """Run ``ctr -a SOCK -n k8s.io ARGS...`` and return the completed process."""
        cmd = [self.paths.ctr, "-a", self.cri_socket, "-n", K8S_NAMESPACE, *args]
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=self._env())
        if check and res.returncode != 0:
            raise HarnessError(f"{' '.join(cmd)} failed ({res.returncode}):\n{res.stdout}\n{res.stderr}")
        return res

    def import_image(self, tar: str | os.PathLike, ref: str) -> None:
        """Import an OCI image tar (build_busybox_image) and wait until CRI sees ``ref``."""
        res = self.ctr("images", "import", "--snapshotter", self.snapshotter, str(tar), check=False)
        if res.returncode != 0:
            text = res.stdout + res.stderr
            if kernel_refusal_reason(text):
                raise KernelRefusal(f"importing the image with snapshotter {self.snapshotter} failed: {text}")
            raise HarnessError(f"ctr images import failed ({res.returncode}): {text}")
        # The CRI plugin learns about the image via an event: wait until CRI sees it.
        wait_until(lambda: self.cri.image_call("ImageStatus", image=self.cri.pb.ImageSpec(image=ref)).image.id,
                   f"CRI to see the imported image {ref}", timeout=10)

    def _ensure_image(self) -> None:
        images = self.ctr("images", "ls", "-q").stdout.split()
        if self.image_ref in images:
            return
        key = (self.paths.busybox, self.image_ref)
        tar = _IMAGE_CACHE.get(key)
        if tar is None or not tar.exists():
            tar = build_busybox_image(self.workdir / "busybox-image.tar", self.paths.busybox, self.image_ref)
            _IMAGE_CACHE[key] = tar
        self.import_image(tar, self.image_ref)

    @property
    def cri(self) -> CRIClient:
        """A CRI client owned by this instance (closed at stop)."""
        if self._cri is None:
            self._cri = self.client()
        return self._cri

    def client(self) -> CRIClient:
        """A new CRI client on this containerd (pods get this instance's cgroup parent)."""
        c = cri_client(self.workdir, self.cri_socket, cgroup_parent=self.cgroup_parent,
                       proto=self.paths.cri_api_proto)
        c.workdir = self.pod_log_root
        self._clients.append(c)
        return c

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def _terminate(self, timeout: float = 10.0) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        if self._log_file:
            self._log_file.close()
            self._log_file = None

    def restart(self) -> None:
        """Stop containerd (SIGTERM; containers and shims keep running) and start it
        again on the same root/state/sockets; waits until CRI answers again."""
        self._terminate()
        self.start()

    def cleanup_pods(self, timeout: float = 10.0) -> list[str]:
        """Stop and remove every CRI sandbox (and so every container). Returns errors."""
        errors: list[str] = []
        if not self.running():
            return ["containerd not running"]
        try:
            pods = self.cri.list_pods()
        except Exception as exc:  # noqa: BLE001
            return [f"ListPodSandbox: {exc}"]
        for pod in pods:
            for method in ("StopPodSandbox", "RemovePodSandbox"):
                try:
                    self.cri.call(method, pod_sandbox_id=pod.id, timeout=timeout)
                except Exception as exc:  # noqa: BLE001
                    errors.append(f"{method} {pod.id[:12]}: {exc}")
        return errors

    def stop(self) -> None:
        """Remove all pods/containers it can, SIGTERM (then SIGKILL) containerd, kill
        any stray shim of this instance, unmount leftovers, remove its cgroups."""
        if self._stopped:
            return
        self._stopped = True
        if self.running():
            self.cleanup_pods()
        for c in self._clients:
            c.close()
        self._clients.clear()
        self._cri = None
        self._terminate()
        leftovers.kill_strays(self.cgroup_parent, self.cri_socket)
        leftovers.unmount_under(self.workdir, self.sockdir)
        leftovers.remove_cgroups(self.cgroup_parent)
        shutil.rmtree(self.sockdir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
