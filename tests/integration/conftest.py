"""Fixtures for tests against a REAL containerd (see runtime.py for the helpers).

    runtime            (session)  RuntimePaths from paths.env; skips LOUDLY if absent
    cri_api            (session)  the compiled CRI protos (CriApi: .pb2, .grpc)
    container_support  (session)  proves once that this kernel runs containers; skips
                                  (loudly, with the kernel's words) only for that cause
    containerd_factory (function) factory(**Containerd kwargs) -> started Containerd;
                                  e.g. factory(enable_cdi=True, cdi_spec_dirs=[d])
    containerd         (function) a started Containerd with defaults (NRI on, CDI off)
    cri                (function) a CRIClient on ``containerd``

Set MOKKA_REQUIRE_RUNTIME=1 to turn the "runtime not fetched" skip into a failure.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from mokka.core import names
from mokka.core.overlay import Overlay
from tests.integration.busybox import build_busybox_image
from tests.integration.containerd import Containerd
from tests.integration.cri import CRIClient, CriApi, load_cri_api
from tests.integration.kernel import KernelRefusal, kernel_refusal_reason
from tests.integration.nodes import GLIBC_IMAGE, IMEX_CHANNELS, PROFILE, agent_argv, mokka_env
from tests.integration.pods import create_container, remove_pod, run_pod, start_and_exec
from tests.integration.runtime import (FETCH_SCRIPT, HarnessError, RuntimePaths, runtime_dir,
                                       runtime_paths)

_HERE = Path(__file__).resolve().parent


def _loud(reason: str) -> str:
    bar = "!" * 20
    return f"{bar} {reason} {bar}"


@pytest.fixture(scope="session")
def runtime() -> RuntimePaths:
    paths = runtime_paths()
    if paths is None:
        reason = (
            f"REAL CONTAINERD NOT FETCHED: no complete paths.env in {runtime_dir()}. "
            f"Run `bash {FETCH_SCRIPT}` (as root; or set MOKKA_RUNTIME_DIR) to test "
            f"against containerd 1.7 + NRI"
        )
        if os.environ.get("MOKKA_REQUIRE_RUNTIME") == "1":
            pytest.fail(reason)
        pytest.skip(_loud(reason))
    if os.geteuid() != 0:
        pytest.skip(_loud("REAL CONTAINERD TESTS NEED ROOT (containerd/runc run as root here)"))
    return paths


@pytest.fixture(scope="session")
def cri_api(runtime, tmp_path_factory) -> CriApi:
    return load_cri_api(tmp_path_factory.mktemp("cri-api"), runtime.cri_api_proto)


def _grpc_details(exc: BaseException) -> str:
    details = getattr(exc, "details", None)
    if callable(details):
        try:
            return str(details())
        except Exception:  # noqa: BLE001
            pass
    return str(exc)


@pytest.fixture(scope="session")
def container_support(runtime, cri_api, tmp_path_factory) -> str:
    """Run one plain host-network pod + container + ExecSync once per session.

    Skips everything that needs containers only when the failure text is a known
    kernel/sandbox refusal (KERNEL_REFUSAL_PATTERNS); any other failure is raised,
    so a harness bug fails the tests instead of hiding behind a skip."""
    workdir = tmp_path_factory.mktemp("probe")
    instance = None
    step = "starting containerd"
    try:
        instance = Containerd(runtime, workdir)
        client = instance.cri
        step = f"RunPodSandbox (snapshotter {instance.snapshotter})"
        pod_id, pod_config = run_pod(client, "probe")
        step = "CreateContainer"
        cid = create_container(client, pod_id, pod_config, "probe", ["sleep", "3600"])
        step = "StartContainer/ExecSync"
        result = start_and_exec(client, cid, ["echo", "probe-ok"])
        if result.exit_code != 0 or result.stdout.strip() != "probe-ok":
            raise HarnessError(f"probe exec returned {result}")
        step = "cleanup"
        remove_pod(client, pod_id)
        return instance.snapshotter
    except KernelRefusal as exc:
        pytest.skip(_loud(f"KERNEL REFUSES CONTAINERS ({step}): {exc}"))
    except Exception as exc:
        text = _grpc_details(exc)
        if step != "starting containerd" and step != "cleanup":
            why = kernel_refusal_reason(text)
            if why:
                pytest.skip(_loud(f"KERNEL REFUSES CONTAINERS at {step}: {why!r} (full: {text[:600]})"))
        log = instance.log_text()[-3000:] if instance else ""
        raise HarnessError(f"container probe failed at {step}: {text}\ncontainerd log tail:\n{log}") from exc
    finally:
        if instance is not None:
            instance.stop()


@pytest.fixture
def containerd_factory(runtime, cri_api, container_support, tmp_path, request):
    """``factory(**kwargs)`` starts a Containerd(runtime, tmp_path/"containerd-N", **kwargs).

    All instances are stopped at teardown; their log tails are attached to the report
    of a failed test."""
    instances: list[Containerd] = []

    def factory(**kwargs) -> Containerd:
        workdir = tmp_path / f"containerd-{len(instances)}"
        try:
            instance = Containerd(runtime, workdir, **kwargs)
        except KernelRefusal as exc:
            pytest.skip(_loud(f"KERNEL REFUSES CONTAINERS: {exc}"))
        instances.append(instance)
        return instance

    yield factory

    failed = any(getattr(request.node, f"rep_{when}", None) is not None
                 and getattr(request.node, f"rep_{when}").failed for when in ("setup", "call"))
    errors = []
    for instance in instances:
        try:
            instance.stop()
        except Exception as exc:  # noqa: BLE001
            errors.append(f"{instance.workdir}: {exc!r}")
        if failed:
            request.node.add_report_section(
                "teardown", f"containerd log ({instance.workdir.name})", instance.log_text()[-6000:])
    if errors:
        raise HarnessError("stopping containerd failed: " + "; ".join(errors))


@pytest.fixture
def containerd(containerd_factory) -> Containerd:
    return containerd_factory()


@pytest.fixture
def cri(containerd) -> CRIClient:
    return containerd.client()


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"rep_{report.when}", report)


# --- a node staged by the real agent, shared by the NRI and CDI tests ----------

@pytest.fixture(scope="module")
def node(tmp_path_factory):
    """A node staged by the real agent (--once); torn down by --teardown after the module."""
    root = str(tmp_path_factory.mktemp("node"))
    agent = agent_argv(root, PROFILE, "--imex-channels", str(IMEX_CHANNELS))
    subprocess.run(agent + ["--once"], check=True, env=mokka_env(), capture_output=True)
    yield root, Overlay(os.path.join(root, names.OVERLAY_HOST_PATH.lstrip("/")))
    subprocess.run(agent + ["--teardown"], check=True, env=mokka_env(), capture_output=True)


# --- a glibc image without Python ------------------------------------------------

@pytest.fixture
def glibc_containerd(containerd, tmp_path):
    """containerd with an image of Debian's libc6 and busybox-static: glibc, no Python."""
    from tests.peers import peer
    image = build_busybox_image(tmp_path / "glibc-image.tar", ref=GLIBC_IMAGE,
                                extra_root=peer("LIBC6_ROOT"))
    containerd.import_image(image, GLIBC_IMAGE)
    return containerd
