"""The overlay: two bind mounts and the search paths that point at them (facts §0)."""

from __future__ import annotations

import pytest

from mokka.core import names
from mokka.core.overlay import Overlay, container_overlay
from mokka.nri.inject import Mount, adjust

from mokka.nri.inject.overlay import BIND_OPTIONS, READ_ONLY
from tests.nri.inject.builders import MOUNT, allocated, config, env_of, full_view, plain, pod

IB = names.ANNOTATION_INFINIBAND
SHIMS = [MOUNT.shim(s) for s in names.LD_PRELOAD_SHIMS]
PATH, LD_LIB, PRELOAD = names.ENV_PATH, names.ENV_LD_LIBRARY_PATH, names.ENV_LD_PRELOAD


@pytest.mark.parametrize("cfg", [config(), config(overlay_host_path="/srv/mock", overlay_mount_path="/mock")],
                         ids=["default paths", "configured paths"])
def test_two_binds_read_only_tree_first_then_writable_config(cfg):
    host, mount = Overlay(cfg.overlay_host_path), container_overlay(cfg.overlay_mount_path)
    decision = adjust(cfg, pod(), allocated(), full_view())
    assert decision.adjustment.mounts == (
        Mount(destination=mount.root, source=host.root, type="bind", options=BIND_OPTIONS + (READ_ONLY,)),
        Mount(destination=mount.driver_config, source=host.driver_config, type="bind", options=BIND_OPTIONS),
    )
    for option in ("rbind", "rprivate", "nosuid", "nodev"):
        assert all(option in m.options for m in decision.adjustment.mounts)
    assert READ_ONLY not in decision.adjustment.mounts[1].options


def test_infiniband_alone_gets_the_same_overlay():
    assert adjust(config(), pod(IB), plain(), full_view()).adjustment.mounts == \
        adjust(config(), pod(), allocated(), full_view()).adjustment.mounts


SEARCH_PATH_CASES = [
    # id, container env, key, expected emitted value (None = not emitted)
    ("no PATH: mount bin + default PATH", (), PATH, f"{MOUNT.bin}:{names.DEFAULT_PATH}"),
    ("empty PATH: treated as none", ("PATH=",), PATH, f"{MOUNT.bin}:{names.DEFAULT_PATH}"),
    ("PATH: mount bin prepended", ("PATH=/usr/bin:/bin",), PATH, f"{MOUNT.bin}:/usr/bin:/bin"),
    ("PATH already first: not emitted", (f"PATH={MOUNT.bin}:/usr/bin",), PATH, None),
    ("PATH already later: not moved, not emitted", (f"PATH=/usr/bin:{MOUNT.bin}",), PATH, None),
    ("PATH with a trailing slash entry: not duplicated", (f"PATH=/usr/bin:{MOUNT.bin}/",), PATH, None),
    ("duplicate PATH: the last occurrence is the base", ("PATH=/first", "PATH=/last"), PATH,
     f"{MOUNT.bin}:/last"),
    ("duplicate PATH: bin only in an earlier occurrence still prepended",
     (f"PATH={MOUNT.bin}:/x", "PATH=/last"), PATH, f"{MOUNT.bin}:/last"),
    ("no LD_LIBRARY_PATH: just the mount lib", (), LD_LIB, MOUNT.lib),
    ("LD_LIBRARY_PATH: mount lib prepended", ("LD_LIBRARY_PATH=/usr/local/cuda/lib64",), LD_LIB,
     f"{MOUNT.lib}:/usr/local/cuda/lib64"),
    ("LD_LIBRARY_PATH already present: not emitted", (f"LD_LIBRARY_PATH=/a:{MOUNT.lib}",), LD_LIB, None),
    ("no LD_PRELOAD: staged shims in flag order", (), PRELOAD, ":".join(SHIMS)),
    ("LD_PRELOAD: shims appended behind the container's own", ("LD_PRELOAD=/lib/libfoo.so",), PRELOAD,
     "/lib/libfoo.so:" + ":".join(SHIMS)),
    ("LD_PRELOAD holding one shim: only the others appended", (f"LD_PRELOAD={SHIMS[1]}",), PRELOAD,
     ":".join([SHIMS[1], SHIMS[0]] + SHIMS[2:])),
    ("LD_PRELOAD space-separated: entries recognised", (f"LD_PRELOAD=/x.so {SHIMS[0]}",), PRELOAD,
     f"/x.so {SHIMS[0]}:" + ":".join(SHIMS[1:])),
    ("LD_PRELOAD holding every shim: not emitted", ("LD_PRELOAD=" + ":".join(SHIMS),), PRELOAD, None),
    ("LD_PRELOAD blank: replaced by the shims", ("LD_PRELOAD= ",), PRELOAD, ":".join(SHIMS)),
]


@pytest.mark.parametrize("env, key, expected", [c[1:] for c in SEARCH_PATH_CASES],
                         ids=[c[0] for c in SEARCH_PATH_CASES])
def test_search_paths(env, key, expected):
    emitted = env_of(adjust(config(), pod(), allocated(env=env), full_view()))
    assert emitted.get(key) == expected


SHIM_CASES = [
    # id, configured shims, staged container paths, expected LD_PRELOAD (None = not emitted)
    ("unstaged shims are left out", names.LD_PRELOAD_SHIMS, {SHIMS[0], SHIMS[3]}, f"{SHIMS[0]}:{SHIMS[3]}"),
    ("nothing staged: LD_PRELOAD untouched", names.LD_PRELOAD_SHIMS, set(), None),
    ("flag order, not staged-set order", (names.LD_PRELOAD_SHIMS[3], names.LD_PRELOAD_SHIMS[0]),
     set(SHIMS), f"{SHIMS[3]}:{SHIMS[0]}"),
    ("a shim listed twice is preloaded once", (names.LD_PRELOAD_SHIMS[0],) * 2, set(SHIMS), SHIMS[0]),
    ("absolute shim passes through when staged", ("/usr/lib/libextra.so",), {"/usr/lib/libextra.so"},
     "/usr/lib/libextra.so"),
    ("absolute shim left out when not staged", ("/usr/lib/libextra.so",), set(SHIMS), None),
    ("no shims configured", (), set(SHIMS), None),
]


@pytest.mark.parametrize("shims, staged, expected", [c[1:] for c in SHIM_CASES], ids=[c[0] for c in SHIM_CASES])
def test_only_staged_shims_are_preloaded(shims, staged, expected):
    decision = adjust(config(ld_preload_shims=tuple(shims)), pod(), allocated(),
                      full_view(staged_shims=frozenset(staged)))
    assert env_of(decision).get(PRELOAD) == expected


def test_relative_shims_resolve_under_the_configured_mount():
    cfg = config(overlay_mount_path="/mock")
    shim = container_overlay("/mock").shim(names.LD_PRELOAD_SHIMS[0])
    decision = adjust(cfg, pod(), allocated(), full_view(staged_shims=frozenset({shim})))
    assert env_of(decision)[PRELOAD] == shim
    assert env_of(decision)[PATH].startswith("/mock/")
