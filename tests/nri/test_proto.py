"""The committed protobuf modules: fresh, with the wire's field numbers, and
imported only where they may be."""

from __future__ import annotations

import ast
import os
import tempfile

import pytest

from mokka.nri.proto import nri_pb2, ttrpc_pb2

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROTO_DIR = os.path.join(ROOT, "mokka", "nri", "proto")


def test_generated_modules_match_the_protos():
    pytest.importorskip("grpc_tools")
    import importlib.util
    spec = importlib.util.spec_from_file_location("gen_proto",
                                                  os.path.join(ROOT, "tools", "gen_proto.py"))
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    with tempfile.TemporaryDirectory() as tmp:
        for path in gen.generate(tmp):
            name = os.path.basename(path)
            with open(path, "rb") as fresh, open(os.path.join(PROTO_DIR, name), "rb") as kept:
                assert fresh.read() == kept.read(), (
                    f"{name} is stale: run python tools/gen_proto.py")


def number(message, field: str) -> int:
    return message.DESCRIPTOR.fields_by_name[field].number


@pytest.mark.parametrize("message,field,num", [
    # NRI v0.6.1 (docs/nri-protocol.md)
    (nri_pb2.RegisterPluginRequest, "plugin_idx", 2),
    (nri_pb2.ConfigureRequest, "runtime_version", 3),
    (nri_pb2.ConfigureResponse, "events", 2),
    (nri_pb2.CreateContainerRequest, "container", 2),
    (nri_pb2.CreateContainerResponse, "adjust", 1),
    (nri_pb2.PodSandbox, "annotations", 6),
    (nri_pb2.Container, "env", 8),
    (nri_pb2.Container, "linux", 11),
    (nri_pb2.LinuxContainer, "devices", 2),
    (nri_pb2.LinuxResources, "devices", 7),
    (nri_pb2.LinuxDevice, "file_mode", 5),
    (nri_pb2.LinuxDeviceCgroup, "access", 5),
    (nri_pb2.ContainerAdjustment, "mounts", 3),
    (nri_pb2.ContainerAdjustment, "env", 4),
    (nri_pb2.ContainerAdjustment, "linux", 6),
    (nri_pb2.LinuxContainerAdjustment, "devices", 1),
    # newer NRI (containerd/nri pkg/api/api.proto @ 05777497)
    (nri_pb2.ConfigureRequest, "registration_timeout", 4),
    (nri_pb2.ConfigureRequest, "request_timeout", 5),
    (nri_pb2.Container, "CDI_devices", 20),
    (nri_pb2.ContainerAdjustment, "CDI_devices", 8),
    (nri_pb2.CDIDevice, "name", 1),
    (nri_pb2.SynchronizeRequest, "more", 3),
    (nri_pb2.SynchronizeResponse, "more", 2),
    # ttrpc envelopes
    (ttrpc_pb2.Request, "timeout_nano", 4),
    (ttrpc_pb2.Request, "metadata", 5),
    (ttrpc_pb2.Response, "status", 1),
    (ttrpc_pb2.Response, "payload", 2),
    (ttrpc_pb2.Status, "message", 2),
])
def test_field_numbers(message, field, num):
    assert number(message, field) == num


def test_no_field_1_where_the_wire_has_none():
    assert 1 not in nri_pb2.ConfigureResponse.DESCRIPTOR.fields_by_number
    assert 1 not in nri_pb2.ContainerAdjustment.DESCRIPTOR.fields_by_number


def _imports(path: str) -> set[str]:
    with open(path) as f:
        tree = ast.parse(f.read())
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
            out |= {f"{node.module}.{a.name}" for a in node.names}
    return out


@pytest.mark.parametrize("package", ["mokka/core", "mokka/nri/inject"])
def test_protobuf_stays_out_of_the_decision_and_core(package):
    offenders = []
    for dirpath, _, files in os.walk(os.path.join(ROOT, package)):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(dirpath, name)
                bad = {m for m in _imports(path)
                       if m.startswith(("mokka.nri.proto", "google.protobuf", "mokka.nri.codec",
                                        "mokka.nri.convert", "mokka.nri.plugin"))}
                if bad:
                    offenders.append((os.path.relpath(path, ROOT), sorted(bad)))
    assert offenders == []
