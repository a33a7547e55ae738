"""A profile swap no reader sees half done.

The agent replaces a node's config.yaml and its companion config.nvml by two renames,
the companion first (sorted order); a user's tar or cp may go the other way. A process
whose nvmlInit falls between the two renames finds a companion that is not its YAML's.
It must get the node before the swap or the node after, never a failed init: the
library reads a stale or half-missing pair again while the newer file is younger than
its grace (1 s), then reports it as ever. A pair stale for longer (a YAML edited by
hand and never compiled) fails at once, and nothing a workload does to the files keeps
nvmlInit waiting past the grace.

Every reader is a real process looping nvmlInit / nvmlDeviceGetCount / nvmlShutdown
(swap_reader.py); NVIDIA's nvidia-smi 550 runs over the same swaps. Bounded by count:
20 readers, 20 swaps of each order and document, 10 nvidia-smi runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import pytest

from mokka.core import names
from mokka.core import profile as prof
from tests.native.conftest import HERE, REPO, clean_env
from tests.peers import peer
from tests.waiting import wait_until

READER = os.path.join(HERE, "swap_reader.py")
READERS = 20
SWAPS = 20
PAUSE_S = 0.05            # a writer slow between its two renames
SETTLE_S = 0.1            # the swapped node, whole, before the next swap
GRACE_S = 1.0             # how long the library waits on a pair in flight
DRIVER_NOT_LOADED = 9
T4_GPUS, H100_GPUS = "4", "8"
SMI_RUNS = 10


def compiled(directory: str, name: str, text: bytes) -> tuple[bytes, bytes]:
    """(YAML, companion) as ``mokka compile --companion`` writes them, from a scratch directory."""
    os.makedirs(directory, exist_ok=True)
    yaml = os.path.join(directory, name)
    with open(yaml, "wb") as f:
        f.write(text)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MOCK_", "LD_PRELOAD"))}
    done = subprocess.run([sys.executable, "-m", "mokka", "compile", "--companion", yaml],
                          capture_output=True, text=True, env=dict(env, PYTHONPATH=REPO), timeout=120)
    assert done.returncode == 0, done.stderr
    with open(yaml[: -len(".yaml")] + ".nvml", "rb") as f:
        return text, f.read()


@pytest.fixture(scope="module")
def pairs(tmp_path_factory) -> dict:
    """Two profiles of different GPU counts: each a (YAML, companion) pair."""
    scratch = str(tmp_path_factory.mktemp("pairs"))
    out = {gpus: compiled(os.path.join(scratch, gpus), names.PROFILE_FILE, prof.load(name).text)
           for gpus, name in ((T4_GPUS, "t4"), (H100_GPUS, "h100"))}
    return out


@pytest.fixture
def node(tmp_path, pairs) -> dict:
    """A config directory holding the t4 profile; its env."""
    config_dir = tmp_path / "config"
    dev_root = tmp_path / "devroot"
    (dev_root / "dev").mkdir(parents=True)
    config_dir.mkdir()
    config = str(config_dir / names.PROFILE_FILE)
    write_pair(config, pairs[T4_GPUS], companion_first=True, pause=0)
    return {names.ENV_NVML_CONFIG: config, names.ENV_DEV_ROOT: str(dev_root)}


def companion_of(yaml: str) -> str:
    return yaml[: -len(".yaml")] + ".nvml"


def replace(path: str, data: bytes) -> None:
    """As the agent writes a file: a temp beside it, then a rename over it."""
    tmp = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.swap")
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def write_pair(yaml: str, pair: tuple[bytes, bytes], companion_first: bool, pause: float) -> None:
    steps = [(companion_of(yaml), pair[1]), (yaml, pair[0])]
    if not companion_first:
        steps.reverse()
    replace(*steps[0])
    time.sleep(pause)                             # the window a reader may fall into
    replace(*steps[1])


def stale_line(config: str) -> str:
    return (f"mock NVML: {config} has no compiled state ({companion_of(config)}: stale: not compiled from "
            f"this YAML): run 'mokka compile --companion {config}'\n")


def swap_under_readers(nvml_lib: str, env: dict, tmp_path, yaml: str, cycle: list, orders: list[bool],
                       fabric: bool = False) -> list[dict]:
    """SWAPS swaps of ``yaml`` through the pairs of ``cycle`` in each of ``orders`` (companion
    renamed first, or not) under READERS looping readers; each reader's summary, and its
    stderr as "stderr"."""
    stop = str(tmp_path / "stop")
    procs, errs = [], []
    for k in range(READERS):
        errs.append(str(tmp_path / f"reader-{k}.err"))
        with open(errs[-1], "wb") as err:
            procs.append(subprocess.Popen([sys.executable, READER, "loop", stop] + (["fabric"] if fabric else []),
                                          env=clean_env(nvml_lib, env), stdout=subprocess.PIPE, stderr=err,
                                          text=True))
    try:
        for proc, err in zip(procs, errs):
            assert proc.stdout.readline() == "ready\n", open(err).read()
        for k in range(SWAPS * len(orders)):
            write_pair(yaml, cycle[(k + 1) % len(cycle)], orders[k // SWAPS], PAUSE_S)
            time.sleep(SETTLE_S)
        open(stop, "w").close()
        summaries = []
        for proc, err in zip(procs, errs):
            out, _ = proc.communicate(timeout=120)
            assert proc.returncode == 0, open(err).read()
            summaries.append(dict(json.loads(out.splitlines()[-1]), stderr=open(err).read()))
        return summaries
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def assert_whole(summaries: list[dict], expected: set[str]) -> None:
    failed = [s["failed"] for s in summaries if s["failed"]]
    assert not failed, (failed, [s["stderr"][:600] for s in summaries if s["stderr"]][:3])
    assert [s["stderr"] for s in summaries] == [""] * READERS
    seen = set().union(*(s["seen"] for s in summaries))
    assert seen == expected, seen                 # each side seen: the readers read during the swaps


def test_no_init_fails_and_every_count_is_one_profiles_while_the_profile_is_swapped_in_either_order(
        nvml_lib, node, pairs, tmp_path):
    """SWAPS swaps as the agent writes them (the companion renamed first), then SWAPS the other way."""
    summaries = swap_under_readers(nvml_lib, node, tmp_path, node[names.ENV_NVML_CONFIG],
                                   [pairs[T4_GPUS], pairs[H100_GPUS]], [True, False])
    assert_whole(summaries, {T4_GPUS, H100_GPUS})


def start_once(nvml_lib: str, env: dict) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, READER, "once"], env=clean_env(nvml_lib, env), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline() == "loaded\n", proc.stderr.read()
    return proc


def answer(proc: subprocess.Popen) -> tuple[dict, str]:
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    return json.loads(out.splitlines()[-1]), err


def edit_by_hand(config: str) -> bytes:
    with open(config, "ab") as f:
        f.write(b"# edited by hand\n")
    with open(config, "rb") as f:
        return f.read()


def test_a_yaml_edited_by_hand_just_now_still_fails_with_the_stale_line_once_the_grace_is_up(nvml_lib, node):
    config = node[names.ENV_NVML_CONFIG]
    edit_by_hand(config)
    proc = start_once(nvml_lib, node)
    proc.stdin.write("go\n")
    proc.stdin.flush()
    assert answer(proc) == ({"init": DRIVER_NOT_LOADED, "count": 0}, stale_line(config))


def test_a_pair_stale_for_longer_than_the_grace_is_not_waited_on(nvml_lib, node, tmp_path):
    config = node[names.ENV_NVML_CONFIG]
    _, fixed = compiled(str(tmp_path / "fixed"), names.PROFILE_FILE, edit_by_hand(config))
    wait_until(lambda: time.time() - os.stat(config).st_ctime > GRACE_S + 0.5, "the edit to age past the grace",
               timeout=10)
    proc = start_once(nvml_lib, node)
    proc.stdin.write("go\n")
    proc.stdin.flush()
    # A fix written well within the grace: an init that waited on this old pair would take it.
    time.sleep(0.6 * GRACE_S)
    replace(companion_of(config), fixed)
    assert answer(proc) == ({"init": DRIVER_NOT_LOADED, "count": 0}, stale_line(config))


def test_a_stale_pair_kept_young_by_a_workload_cannot_hold_init_past_the_grace(nvml_lib, node):
    config = node[names.ENV_NVML_CONFIG]
    edit_by_hand(config)
    proc = start_once(nvml_lib, node)
    answered = threading.Event()
    touches = []

    def touch():                                  # every 20 ms, for at most 10 s
        for _ in range(500):
            if answered.is_set():
                return
            os.utime(config)                      # a new change time: the pair looks in flight
            touches.append(1)
            answered.wait(0.02)

    toucher = threading.Thread(target=touch)
    toucher.start()
    try:
        proc.stdin.write("go\n")
        proc.stdin.flush()
        result = answer(proc)
    finally:
        answered.set()
        toucher.join()
    assert len(touches) < 500, "nvmlInit answered only once the files stopped changing"
    assert result == ({"init": DRIVER_NOT_LOADED, "count": 0}, stale_line(config))


def test_nvidia_smi_550_started_between_the_two_renames_lists_the_new_profile(nvml_lib, node, pairs):
    """Each run starts right after the first rename of a swap; the second comes 300 ms later."""
    smi = peer("NVIDIA_SMI")
    config = node[names.ENV_NVML_CONFIG]
    runs, expected = [], []
    for k in range(SMI_RUNS):
        gpus = H100_GPUS if k % 2 == 0 else T4_GPUS
        yaml, companion = pairs[gpus]
        steps = [(companion_of(config), companion), (config, yaml)]
        if k % 4 >= 2:                            # either order
            steps.reverse()
        replace(*steps[0])
        second = threading.Timer(6 * PAUSE_S, replace, steps[1])
        second.start()
        try:
            runs.append(subprocess.run([smi, "-L"], capture_output=True, text=True,
                                       env=clean_env(nvml_lib, node), timeout=60))
        finally:
            second.join()
        expected.append((0, gpus, ""))
    seen = [(r.returncode, str(sum(line.startswith("GPU ") for line in r.stdout.splitlines())), r.stderr)
            for r in runs]
    assert seen == expected
