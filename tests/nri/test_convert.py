"""convert.py: the only protobuf <-> decision translation."""

from __future__ import annotations

import pytest

from mokka.core import names
from mokka.nri import convert
from mokka.nri.inject import model
from mokka.nri.proto import nri_pb2


def test_absent_messages_convert_to_empty_values():
    assert convert.pod_from_pb(None) == model.Pod()
    assert convert.container_from_pb(None) == model.Container()
    assert convert.pod_from_pb(nri_pb2.PodSandbox()) == model.Pod()
    assert convert.container_from_pb(nri_pb2.Container()) == model.Container()


def test_pod_fields_and_annotations():
    pod = nri_pb2.PodSandbox(namespace="ns", name="p", uid="u", labels={"l": "x"},
                             annotations={names.ANNOTATION_DEVICES: "true"})
    assert convert.pod_from_pb(pod) == model.Pod(
        namespace="ns", name="p", annotations={names.ANNOTATION_DEVICES: "true"})


@pytest.mark.parametrize("env", [
    ["A=1", "B="], ["A=b=c"], ["NOEQUALS", "=value", "", "A=1", "A=2"],
], ids=["well formed, empty value allowed", "value may hold '='",
        "malformed and duplicate entries pass through, in order"])
def test_env_entries_arrive_as_the_runtime_has_them(env):
    assert convert.container_from_pb(nri_pb2.Container(env=env)).env == tuple(env)


def test_malformed_env_entries_are_passed_over_by_the_decision():
    from mokka.nri.inject.env import EnvSet
    env = EnvSet(["NOEQUALS", "=value", "", "A=1", "B=x=y", "A=2"])
    assert (env.get("A"), env.get("B"), env.get("NOEQUALS"), env.get("")) == ("2", "x=y", None, None)
    assert (env.get("A=1"), env.get("B=x")) == (None, None)       # keys never hold "="


@pytest.mark.parametrize("entries,path", [
    (["A=1\0PATH=/evil"], None),
    (["A=1\0PATH=/evil", "PATH=/bin"], "/bin"),
    (["PATH=/bin", None, 3, "A=1"], "/bin"),
], ids=["a NUL inside an entry forges no key", "... and the real last entry still wins",
        "non-strings are passed over"])
def test_env_entries_no_process_could_receive_take_the_dict_route(entries, path):
    from mokka.nri.inject.env import EnvSet
    env = EnvSet(entries)
    assert env.get("PATH") == path


def _as_the_plugin_reads_it(ctr: nri_pb2.Container) -> nri_pb2.ContainerRead:
    request = nri_pb2.CreateContainerRequest(pod=nri_pb2.PodSandbox(), container=ctr)
    return nri_pb2.CreateContainerRequestRead.FromString(request.SerializeToString()).container


@pytest.mark.parametrize("env", [
    ["A=1", "B="], ["A=b=c"], ["NOEQUALS", "=value", "", "A=1", "A=2"], [], [""],
    ["A=1\0PATH=/evil"], ["A=1\0PATH=/evil", "PATH=/bin"], ["PATH=/b\u00e9n", "X=\u2603"],
], ids=["well formed", "value may hold '='", "malformed and duplicate entries", "none",
        "one empty entry", "a NUL inside an entry", "... and the real last entry",
        "non-ASCII"])
def test_the_environment_reads_the_same_from_the_request_as_the_plugin_decodes_it(env):
    from mokka.nri.inject.env import EnvSet
    read = convert.env_set_from_pb(_as_the_plugin_reads_it(nri_pb2.Container(env=env)))
    assert read.entries() == tuple(env)
    for key in ("A", "B", "PATH", "X", "NOEQUALS", ""):
        assert read.authored(key) == EnvSet(env).authored(key)


def test_an_environment_that_is_not_utf8_is_refused_when_read():
    # The driver fails open on it; a container nobody selects never reads it.
    ctr = nri_pb2.ContainerRead(env=[b"PATH=/bin", b"A=\xff"])
    with pytest.raises(UnicodeDecodeError):
        convert.env_set_from_pb(ctr)


def test_fields_the_decision_never_reads_are_not_decoded():
    # Not UTF-8 in args or a mount source: the full message refuses the
    # request, the plugin's reading of it does not look there.
    raw = nri_pb2.CreateContainerRequest(
        pod=nri_pb2.PodSandbox(namespace="ns"),
        container=nri_pb2.Container(name="c", args=["ARG"], env=["PATH=/bin"],
                                    mounts=[nri_pb2.Mount(destination="/d", source="SRC")]),
    ).SerializeToString().replace(b"ARG", b"\xff\xfe\xfd").replace(b"SRC", b"\xff\xfe\xfd")
    with pytest.raises(Exception):
        nri_pb2.CreateContainerRequest.FromString(raw)
    read = nri_pb2.CreateContainerRequestRead.FromString(raw)
    assert convert.pod_from_pb(read.pod).namespace == "ns"
    ctr = convert.container_from_pb(read.container)
    assert (ctr.name, ctr.mount_destinations, ctr.env) == ("c", ("/d",), ("PATH=/bin",))


def _device(path, major, minor, mode=None, uid=None, gid=None):
    d = nri_pb2.LinuxDevice(path=path, type="c", major=major, minor=minor)
    if mode is not None:
        d.file_mode.value = mode
    if uid is not None:
        d.uid.value = uid
    if gid is not None:
        d.gid.value = gid
    return d


def test_container_mounts_devices_rules_and_cdi_names():
    ctr = nri_pb2.Container(
        id="c1", name="app", annotations={"cdi.k8s.io/x": "nvidia.com/gpu=0",
                                          "io.kubernetes.cri.container-type": "container"},
        mounts=[nri_pb2.Mount(destination="/d", type="bind", source="/s", options=["ro"])],
        linux=nri_pb2.LinuxContainer(
            devices=[_device("/dev/nvidia0", names.NVIDIA_MAJOR, 0, 0o666, 0, 0),
                     _device("/dev/null", 1, 3),
                     _device("", 1, 5)],            # unreadable: skipped, not fatal
            resources=nri_pb2.LinuxResources(devices=[
                nri_pb2.LinuxDeviceCgroup(allow=False, type="a", access="rwm"),
                nri_pb2.LinuxDeviceCgroup(allow=True, type="c", access="rw",
                                          major=nri_pb2.OptionalInt64(value=195),
                                          minor=nri_pb2.OptionalInt64(value=0))])),
        CDI_devices=[nri_pb2.CDIDevice(name="k8s.device-plugin.nvidia.com/gpu=GPU-1"),
                     nri_pb2.CDIDevice(name="")])
    got = convert.container_from_pb(ctr)
    assert got == model.Container(
        # Of the annotations, only the CDI ones: no rule reads another.
        name="app", annotations={"cdi.k8s.io/x": "nvidia.com/gpu=0"},
        mount_destinations=("/d",),                     # all any rule reads of a mount
        devices=(model.Device("/dev/nvidia0", "c", names.NVIDIA_MAJOR, 0, 0o666, 0, 0),
                 model.Device("/dev/null", "c", 1, 3)),
        device_rules=(model.DeviceRule(False, "a", None, None, "rwm"),
                      model.DeviceRule(True, "c", 195, 0, "rw")),
        cdi_devices=("k8s.device-plugin.nvidia.com/gpu=GPU-1",))


def test_inbound_values_are_copies():
    ctr = nri_pb2.Container(annotations={"cdi.k8s.io/k": "v"}, env=["A=1"])
    got = convert.container_from_pb(ctr)
    ctr.annotations["cdi.k8s.io/k"] = "changed"
    ctr.env.append("B=2")
    assert got.annotations == {"cdi.k8s.io/k": "v"} and got.env == ("A=1",)


ADJ = model.Adjustment(
    mounts=(model.Mount("/opt/nvml-mock", "/var/lib/nvml-mock", "bind", ("ro", "rprivate")),),
    env=(("MOCK_NVML_CONFIG", "/opt/nvml-mock/driver/config/config.yaml"),),
    devices=(model.Device("/dev/nvidia0", "c", 195, 0, file_mode=0, uid=0, gid=0),
             model.Device("/dev/nvidiactl", "c", 195, 255)),
    cdi_devices=(names.CDI_MOCK_DEVICE_ALL,))


def test_adjustment_renders_mounts_env_and_devices():
    out = convert.adjustment_to_pb(ADJ, accepts_cdi=False)
    assert [(m.destination, m.source, m.type, list(m.options)) for m in out.mounts] == [
        ("/opt/nvml-mock", "/var/lib/nvml-mock", "bind", ["ro", "rprivate"])]
    assert [(kv.key, kv.value) for kv in out.env] == [ADJ.env[0]]
    first, second = out.linux.devices
    # A set wrapper holding 0 means "set to 0", unlike an absent one.
    assert first.HasField("file_mode") and first.file_mode.value == 0
    assert first.HasField("uid") and first.HasField("gid")
    assert not second.HasField("file_mode") and not second.HasField("uid")
    assert (second.path, second.type, second.major, second.minor) == ("/dev/nvidiactl", "c",
                                                                      195, 255)


@pytest.mark.parametrize("accepts,names_out", [
    (True, [names.CDI_MOCK_DEVICE_ALL]), (False, [])],
    ids=["newer NRI carries CDI names", "NRI v0.6.1 would drop them: never sent"])
def test_cdi_names_only_for_a_runtime_that_applies_them(accepts, names_out):
    out = convert.adjustment_to_pb(ADJ, accepts_cdi=accepts)
    assert [d.name for d in out.CDI_devices] == names_out


def test_no_adjustment_is_an_empty_message():
    assert convert.adjustment_to_pb(None, True).SerializeToString() == b""
    assert convert.adjustment_to_pb(model.Adjustment(), True).SerializeToString() == b""


def test_round_trip_of_devices():
    for d in ADJ.devices:
        assert convert.device_from_pb(convert.device_to_pb(d)) == d


def pb_response(adj, accepts_cdi: bool) -> bytes:
    return nri_pb2.CreateContainerResponse(
        adjust=convert.adjustment_to_pb(adj, accepts_cdi)).SerializeToString()


def imex(n: int) -> tuple[model.Device, ...]:
    return tuple(model.Device(f"/dev/nvidia-caps-imex-channels/channel{i}", "c", 234, i, 0o666, 0, 0)
                 for i in range(n))


HOOK = model.Hook("/var/lib/nvml-mock/driver/usr/libexec/nvml-mock/nvml-mock-proc-hook",
                  ("nvml-mock-proc-hook", "/var/lib/nvml-mock"), timeout=5)


def test_hooks_render_as_create_container_hooks():
    out = convert.adjustment_to_pb(model.Adjustment(hooks=(HOOK, model.Hook("/bin/true"))), False)
    first, second = out.hooks.create_container
    assert (first.path, list(first.args), list(first.env), first.timeout.value) == (
        HOOK.path, list(HOOK.args), [], 5)
    assert second.path == "/bin/true" and not second.HasField("timeout")
    assert not (out.hooks.prestart or out.hooks.create_runtime or out.hooks.start_container)


@pytest.mark.parametrize("adj", [
    ADJ,
    model.Adjustment(env=(("A", "1"),)),
    model.Adjustment(devices=imex(2048)),
    model.Adjustment(mounts=ADJ.mounts, env=ADJ.env, devices=imex(3), cdi_devices=("x/y=z",)),
    model.Adjustment(mounts=ADJ.mounts, env=ADJ.env, devices=imex(3), hooks=(HOOK,)),
    model.Adjustment(hooks=(HOOK,)),
], ids=["mounts env devices cdi", "env only", "2048 imex channels", "every field",
        "with the proc hook", "the hook alone"])
@pytest.mark.parametrize("accepts", [True, False])
def test_the_reply_is_the_adjustment_as_protobuf_renders_it(adj, accepts):
    assert convert.response_bytes(adj, accepts) == pb_response(adj, accepts)


@pytest.mark.parametrize("adj, accepts, want", [
    (model.Adjustment(env=(("A", "1"),)), False, b"\x0a\x08\x22\x06\x0a\x01A\x12\x011"),
    (None, True, b""),
    (model.Adjustment(), False, b""),
    (model.Adjustment(cdi_devices=("x/y=z",)), False, b""),
    (model.Adjustment(cdi_devices=("x/y=z",)), True, b"\x0a\x09\x42\x07\x0a\x05x/y=z"),
], ids=["one variable", "no adjustment", "an empty adjustment",
        "a CDI name the runtime cannot take is nothing to send", "a CDI name it can take"])
def test_reply_bytes(adj, accepts, want):
    assert convert.response_bytes(adj, accepts) == want


def test_rules_are_copied_only_with_a_device_they_could_allow():
    # Nothing but a device's allocation check reads them.
    rules = nri_pb2.LinuxResources(devices=[nri_pb2.LinuxDeviceCgroup(allow=True, type="c", access="rw")])
    bare = nri_pb2.Container(linux=nri_pb2.LinuxContainer(resources=rules))
    assert convert.container_from_pb(bare).device_rules == ()
    bare.linux.devices.add(path="/dev/nvidia0", type="c", major=195, minor=0)
    assert convert.container_from_pb(bare).device_rules == (model.DeviceRule(True, "c", None, None, "rw"),)


def _mounts_read(*destinations: str, containing: str = "") -> tuple[str, ...]:
    ctr = _as_the_plugin_reads_it(nri_pb2.Container(mounts=[
        nri_pb2.Mount(destination=d, type="bind", source="/var/lib/x", options=["ro"])
        for d in destinations]))
    return convert.container_from_pb(ctr, mounts_containing=containing).mount_destinations


def test_mount_destinations_are_decoded_only_where_they_can_name_the_overlay():
    spec = ("/proc", "/opt//nvml-mock/.", "/data/nvml-mock-cache", "/dev/shm")
    assert _mounts_read(*spec) == spec                          # no hint: every one
    assert _mounts_read(*spec, containing="nvml-mock") == ("/opt//nvml-mock/.",
                                                           "/data/nvml-mock-cache")
    assert _mounts_read(*spec, containing="gpu-mock") == ()
    assert _mounts_read(containing="nvml-mock") == ()


def test_a_malformed_mount_that_could_name_the_overlay_fails_the_read():
    # Its bytes hold the hint, so it is decoded, and the driver fails open.
    ctr = nri_pb2.ContainerRead(mounts=[b"\x0a\x40/opt/nvml-mock"])   # length past the end
    with pytest.raises(Exception):
        convert.container_from_pb(ctr, mounts_containing="nvml-mock")
    assert convert.container_from_pb(ctr, mounts_containing="other").mount_destinations == ()


def test_only_the_cdi_annotations_of_a_container_are_decoded():
    annotations = {"io.kubernetes.cri.container-type": "container",
                   "cdi.k8s.io/gpu": "nvidia.com/gpu=0",
                   "example.com/mentions-cdi.k8s.io/": "x"}
    read = _as_the_plugin_reads_it(nri_pb2.Container(annotations=annotations))
    assert convert.container_from_pb(read).annotations == {"cdi.k8s.io/gpu": "nvidia.com/gpu=0"}
    read = _as_the_plugin_reads_it(nri_pb2.Container(annotations={"a": "b"}))
    assert convert.container_from_pb(read).annotations == {}
    # A map entry repeated on the wire: its last value, as a map reads it.
    entry = nri_pb2.AnnotationRead
    twice = nri_pb2.ContainerRead(annotations=[
        entry(key="cdi.k8s.io/g", value="1").SerializeToString(),
        entry(key="cdi.k8s.io/g", value="2").SerializeToString()])
    assert convert.container_from_pb(twice).annotations == {"cdi.k8s.io/g": "2"}
