"""The chart repeats facts of mokka/core (names.py, the profiles, the project version):
each repetition is checked here against its one home."""

from __future__ import annotations

import json
import os
import posixpath
import tomllib

import yaml

from mokka.core import names, schema
from tests.chart.conftest import CHART, ROOT

PROFILES = os.path.join(ROOT, "mokka", "core", "profiles")


def load(name: str):
    with open(os.path.join(CHART, name)) as f:
        return yaml.safe_load(f)


def port(addr: str) -> int:
    return int(addr.rpartition(":")[2])


def test_chart_versions_are_the_project_version():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        version = tomllib.load(f)["project"]["version"]
    chart = load("Chart.yaml")
    assert (chart["name"], chart["apiVersion"], chart["kubeVersion"]) == ("nvml-mock", "v2", ">=1.28.0-0")
    assert chart["version"] == chart["appVersion"] == version


def test_chart_profiles_are_byte_copies_of_the_builtin_profiles():
    copies = sorted(f for f in os.listdir(os.path.join(CHART, "profiles")))
    assert copies == sorted(f"{p}.yaml" for p in names.BUILTIN_PROFILES)
    for file in copies:
        with open(os.path.join(CHART, "profiles", file), "rb") as a, \
                open(os.path.join(PROFILES, file), "rb") as b:
            assert a.read() == b.read(), f"chart/profiles/{file} differs: cp mokka/core/profiles/*.yaml chart/profiles/"


def test_value_defaults_are_the_facts_of_names():
    v = load("values.yaml")
    assert v["gpu"]["profile"] == names.DEFAULT_PROFILE
    assert v["image"] == {"repository": "mokka", "tag": "", "pullPolicy": "IfNotPresent"}
    assert v["nodeAgent"]["healthPort"] == port(names.AGENT_HEALTH_ADDR)
    assert v["nri"]["healthPort"] == port(names.NRI_HEALTH_ADDR)
    assert v["nri"]["socketPath"] == names.NRI_SOCKET_PATH
    assert v["nri"]["pluginIndex"] == names.NRI_PLUGIN_INDEX
    assert v["nri"]["pluginName"] == "nvml-mock"          # the chart's name, not the binary's
    assert v["nri"]["overlay"] == {"hostPath": names.OVERLAY_HOST_PATH,
                                   "mountPath": names.OVERLAY_MOUNT_PATH}
    assert v["nri"]["cdiSpecDir"] == names.CDI_SPEC_DIR
    assert v["nri"]["deviceInjectionMode"] == names.DEVICE_INJECTION_MODES[0]
    assert v["nri"]["annotations"] == {"optOut": names.ANNOTATION_OPT_OUT,
                                       "devices": names.ANNOTATION_DEVICES,
                                       "infiniband": names.ANNOTATION_INFINIBAND,
                                       "imexChannels": names.ANNOTATION_IMEX_CHANNELS}
    cr = v["nodeAgent"]["containerRuntime"]
    assert cr["restartMode"] == names.RESTART_MODE_SYSTEMD
    assert cr["containerd"] == {"config": names.CONTAINERD_CONFIG,
                                "configDir": names.CONTAINERD_CONFIG_DIR}
    assert v["imex"]["mockChannels"]["channelCount"] == names.IMEX_CHANNEL_COUNT
    assert v["featureGates"] == {}
    # Only opted-in nodes, no taint tolerated, one pool made of gpu.* alone.
    assert v["nodeSelector"] == {names.NODE_OPT_IN_LABEL: "true"}
    assert v["tolerations"] == [] and v["pools"] == []


def test_schema_enums_are_the_facts_of_names():
    s = json.load(open(os.path.join(CHART, "values.schema.json")))["properties"]
    assert set(s["featureGates"]["properties"]) == set(names.FEATURE_GATES)
    assert tuple(s["nodeAgent"]["properties"]["containerRuntime"]["properties"]["restartMode"]["enum"]) \
        == names.RESTART_MODES
    fi = s["gpu"]["properties"]["failureInjection"]["properties"]
    assert set(fi["mode"]["enum"]) == set(schema.FAILURE_MODES) - {""}
    dm = s["gpu"]["properties"]["dynamicMetrics"]["properties"]
    assert tuple(dm["utilization"]["properties"]["pattern"]["enum"]) == names.DYNAMIC_PATTERNS
    assert s["gpu"]["properties"]["count"]["oneOf"][0]["maximum"] == names.MAX_GPUS
    pool = s["pools"]["items"]["properties"]
    assert tuple(pool["profile"]["enum"]) == names.BUILTIN_PROFILES
    assert pool["count"] == s["gpu"]["properties"]["count"]
    assert pool["migLayout"] == s["gpu"]["properties"]["mig"]["properties"]["layout"]


def test_helper_paths_are_the_facts_of_names():
    """The fixed paths in _helpers.tpl (not values): each equals its constant."""
    text = open(os.path.join(CHART, "templates", "_helpers.tpl")).read()

    def helper(name: str) -> str:
        marker = '{{- define "nvml-mock.%s" -}}' % name
        start = text.index(marker) + len(marker)
        return text[start:text.index("{{- end -}}", start)]

    assert helper("stagingLock") == names.STAGING_LOCK_PATH
    assert helper("stagingLockDir") == posixpath.dirname(names.STAGING_LOCK_PATH)
    assert helper("agentLockDir") == posixpath.dirname(names.AGENT_LOCK_PATH)
    assert helper("runNvidia") == posixpath.dirname(names.RUN_NVIDIA_DRIVER)
    assert helper("nfdFeaturesDir") == posixpath.dirname(names.NFD_FEATURE_FILE)
    assert helper("kmsg") == names.KMSG_PATH


def test_plugin_args_derive_paths_as_names_does(render):
    """The plugin's overlay-derived flags: the same joins as mokka.core.overlay."""
    args = dict(a.split("=", 1) for a in render().container("nri-plugin")["args"])
    host = names.OVERLAY_HOST_PATH
    assert args["--device-host-path"] == f"{host}/{names.DEV_DIR}"
    assert args["--imex-channel-host-path"] == f"{host}/{names.IMEX_CHANNEL_DIR}"
    assert args["--cdi-spec-host-path"] == f"{names.CDI_SPEC_DIR}/{names.CDI_SPEC_MOCK_FILE}"
