"""CUDA process records are hostile input: any user of the node, and a container's root,
may write anything in driver/config/processes (mode 01777), and a user anything in its
own directory there (processes/<uid>). What a forger cannot do: slow or empty
nvidia-smi's process box, hide another user's process or its memory, show a pid, name
or size its lock does not vouch for, reach the terminal with a control byte, pass off
records outside its own directory, or keep dead records and strays from the agent's sweep.

The forgers (records_forger.py) hold real locks from real processes, as a workload would;
the real process keeps its record through the library (records_probe.py hold), as the
mock CUDA driver does. Both nvidia-smis read this build: ours through a launcher beside
it, NVIDIA's 550 (when fetched) through LD_LIBRARY_PATH.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

import pytest

from mokka.core import launcher, names
from tests.conftest import REPO
from tests.corpus import engine_cases as corpus
from tests.native.conftest import clean_env
from tests.peers import peer

HERE = os.path.dirname(os.path.abspath(__file__))
FORGER = os.path.join(HERE, "records_forger.py")
PROBE = os.path.join(HERE, "records_probe.py")
GiB = 1 << 30
MiB = 1 << 20
#: h100: 80 GiB, 1 GiB of it reserved by the driver.
H100_TOTAL = 85899345920
H100_USABLE = 85899345920 - 1073741824
NOBODY = 65534
#: Long enough for a busy machine, far shorter than a reader that rescans per process takes.
HANG_GUARD_S = 30
#: argv[0] of a forger: CSI as a raw byte, ESC's bracket, invalid UTF-8, CSI encoded as U+009B,
#: RIGHT-TO-LEFT OVERRIDE (U+202E) and POP DIRECTIONAL ISOLATE (U+2069); then a letter
#: outside ASCII (e acute), which stays.
HOSTILE_ARGV0 = b"\x9b[31mevil\xff\xfe\xc2\x9b\xe2\x80\xae\xe2\x81\xa9\xc3\xa9"
#: The name NVML gives it: each of those bytes one '?'.
HOSTILE_SHOWN = "?[31mevil??????????\u00e9"


@pytest.fixture
def node(tmp_path):
    env = corpus.stage(corpus.Case("records", "h100", ()), str(tmp_path))
    directory = records_dir(env)
    os.makedirs(directory, exist_ok=True)
    os.chmod(directory, names.PROCESS_RECORDS_MODE)        # as the agent stages it
    return env


def records_dir(env: dict) -> str:
    return os.path.join(os.path.dirname(env[names.ENV_NVML_CONFIG]), names.PROCESS_RECORDS_DIR)


def user_dir(env: dict, uid: int) -> str:
    """Where the records of ``uid``'s processes are."""
    return os.path.join(records_dir(env), str(uid))


def end(proc: subprocess.Popen) -> None:
    """A forger SIGKILLs its forging processes when its stdin closes; a holder exits."""
    if proc.poll() is None:
        proc.stdin.close()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture
def started():
    """Processes a test starts (forgers, holders): ended when it ends."""
    procs: list[subprocess.Popen] = []
    yield procs
    for p in procs:
        end(p)


def forge(env, started, gpu: int, count: int, processes: int, used: int, name: bytes = b"forged",
          uid: int | None = NOBODY, argv0: bytes = b"forger", pid: int | None = None,
          into: str | None = None) -> list[int]:
    """Forging processes holding their records until the test ends: their pids. ``into``:
    the directory of the records directory they write in (default: their uid's own)."""
    args = [sys.executable, FORGER, "hold", records_dir(env), str(gpu), str(count), str(processes), str(used),
            name.hex(), "--argv0", argv0.hex()]
    args += ["--uid", str(uid)] if uid is not None else []
    args += ["--pid", str(pid)] if pid is not None else []
    args += ["--into", into] if into is not None else []
    proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    started.append(proc)
    line = proc.stdout.readline()
    assert line, "the forger failed (its stderr is above)"
    return json.loads(line)["pids"]


def holder(lib, env, started, gpu: int, size: int) -> int:
    """A process keeping its record of ``size`` bytes on ``gpu`` through the library: its pid."""
    proc = subprocess.Popen([sys.executable, PROBE, "hold", str(gpu), str(size)], env=clean_env(lib, env),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    started.append(proc)
    line = proc.stdout.readline()
    assert line, "the holder failed (its stderr is above)"
    held = json.loads(line)
    assert held["ret"] == 0, f"nvmlMokkaSetProcessMemory returned {held['ret']}"
    return held["pid"]


def listing(lib, env, wrap: tuple = ()) -> list:
    done = subprocess.run([*wrap, sys.executable, PROBE, "list"], env=clean_env(lib, env), capture_output=True,
                          text=True, timeout=HANG_GUARD_S)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


# --- both nvidia-smis over this build -------------------------------------------------------

@pytest.fixture(scope="module")
def our_smi(nvml_lib, tmp_path_factory) -> str:
    """Our nvidia-smi as the overlay stages it: its launcher in usr/bin, the package in
    usr/lib/mokka (this checkout), the library in usr/lib64 (this build)."""
    root = str(tmp_path_factory.mktemp("smi-root"))
    for sub in ("usr/bin", "usr/lib", "usr/lib64"):
        os.makedirs(os.path.join(root, sub))
    os.symlink(REPO, os.path.join(root, "usr/lib/mokka"))
    os.symlink(os.path.join(nvml_lib, names.NVML_LIB_FILE), os.path.join(root, "usr/lib64", names.NVML_LIB_FILE))
    path = os.path.join(root, "usr/bin", names.NVIDIA_SMI)
    with open(path, "w") as f:
        f.write(launcher.launcher_script(names.NVIDIA_SMI))
    os.chmod(path, 0o755)
    return path


@pytest.fixture(params=["ours", "nvidia 550"])
def smi(request, our_smi):
    return our_smi if request.param == "ours" else peer("NVIDIA_SMI")


def run_smi(smi: str, lib: str, env: dict, args=()) -> bytes:
    done = subprocess.run([smi, *args], env=clean_env(lib, env), capture_output=True, timeout=HANG_GUARD_S)
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
    return done.stdout


def process_rows(table: bytes) -> list[tuple]:
    """(gpu, pid, type, name, memory) of each row of the Processes box."""
    box = table.decode(errors="replace").split("Processes:", 1)[1]
    rows = [line.strip("| ").split() for line in box.splitlines() if re.match(r"\|\s+\d+\s", line)]
    return sorted((r[0], int(r[3]), r[4], " ".join(r[5:-1]), r[-1]) for r in rows)


# --- cost: one scan per call, however many records ------------------------------------------

def test_thousands_of_forged_live_records_list_each_process_once_and_nvidia_smi_answers(nvml_lib, node, started,
                                                                                          smi):
    real = holder(nvml_lib, node, started, 0, GiB)
    [forger] = forge(node, started, 0, 4000, 1, MiB)
    rows = process_rows(run_smi(smi, nvml_lib, node))        # within HANG_GUARD_S
    assert [(r[0], r[1], r[2], r[4]) for r in rows] == sorted([("0", real, "C", "1024MiB"),
                                                                ("0", forger, "C", "1MiB")])
    assert [r[3] for r in rows if r[1] == forger] == ["forger"]


def test_more_than_256_processes_on_a_gpu_are_all_listed(nvml_lib, node, started, smi, our_smi):
    forgers = forge(node, started, 0, 1, 300, MiB)
    table = run_smi(smi, nvml_lib, node)
    assert process_rows(table) == sorted(("0", pid, "C", "forger", "1MiB") for pid in forgers)
    if smi == our_smi:          # NVIDIA's asks its query for 250 at most (export_table.c): "[Unknown Error]"
        csv = run_smi(smi, nvml_lib, node, ["--query-compute-apps=pid,used_memory", "--format=csv,noheader"])
        assert sorted(csv.decode().splitlines()) == sorted(f"{pid}, 1 MiB" for pid in forgers)


def test_a_running_monitor_sees_a_new_process_at_once_and_a_killed_one_go(nvml_lib, node, started):
    """A scan serves a monitor while the directory stays as it was (a new record changes
    it), but not for long: a SIGKILLed process leaves its record as it was, only its lock goes."""
    monitor = subprocess.Popen([sys.executable, PROBE, "watch"], env=clean_env(nvml_lib, node), text=True,
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    started.append(monitor)

    def look() -> list:
        monitor.stdin.write("\n")
        monitor.stdin.flush()
        return [p[0] for p in json.loads(monitor.stdout.readline())[0]["processes"]]

    assert look() == []
    [forger] = forge(node, started, 0, 1, 1, GiB)
    assert look() == [forger]
    end(started[1])                                            # its forger SIGKILLed
    assert os.listdir(user_dir(node, NOBODY))                  # the record stays
    for _ in range(100):                                       # a bound, not a deadline
        if look() == []:
            break
        time.sleep(0.1)
    assert look() == []


# --- junk: read in full, skipped cheaply, never in another user's way -------------------------

@pytest.mark.parametrize("into", [".", str(NOBODY)], ids=["beside the users' directories", "in its own"])
def test_junk_files_of_another_user_hide_no_process_nor_its_memory(nvml_lib, node, started, into):
    done = subprocess.run([sys.executable, FORGER, "junk", records_dir(node), "30000", "--uid", str(NOBODY),
                           "--into", into], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert len(os.listdir(os.path.join(records_dir(node), into))) == 30000
    real = holder(nvml_lib, node, started, 0, GiB)
    gpu0 = listing(nvml_lib, node)[0]
    assert [p[:2] for p in gpu0["processes"]] == [[real, GiB]]
    assert (gpu0["used"], gpu0["free"]) == (GiB, H100_USABLE - GiB)


def test_one_process_holding_4000_records_costs_its_user_no_other_gpu(nvml_lib, node, started):
    """A user's records are read per GPU within a budget, two more for each process they
    list: 4,000 records of one process on GPU 0 leave the same user's 12 processes on GPU 1
    all listed."""
    [hog] = forge(node, started, 0, 4000, 1, MiB)
    others = forge(node, started, 1, 1, 12, GiB)
    gpus = listing(nvml_lib, node)
    assert [p[:2] for p in gpus[0]["processes"]] == [[hog, MiB]]
    assert sorted(p[0] for p in gpus[1]["processes"]) == sorted(others)
    assert gpus[1]["used"] == 12 * GiB


@pytest.mark.parametrize("place", ["in the records directory itself", "in another user's name",
                                   "in a directory others may write"])
def test_records_outside_their_users_own_directory_count_for_nothing(nvml_lib, node, started, place):
    into = {"in the records directory itself": ".", "in another user's name": "0"}.get(place)
    forge(node, started, 0, 1, 1, GiB, into=into)
    if place == "in a directory others may write":
        os.chmod(user_dir(node, NOBODY), 0o777)
    gpu0 = listing(nvml_lib, node)[0]
    assert (gpu0["processes"], gpu0["used"]) == ([], 0)


def test_a_directory_another_user_made_in_roots_name_is_swept_and_root_keeps_its_record_again(nvml_lib, node,
                                                                                              started):
    """A squat: nobody makes processes/0 before root's first CUDA process. Root's record is
    refused with one warning naming the directory, the agent's sweep removes the squat, and
    the same process keeps its record at its next update."""
    forge(node, started, 0, 1, 1, GiB, into="0")              # nobody's, in root's name
    proc = subprocess.Popen([sys.executable, PROBE, "hold", "0", str(GiB)], env=clean_env(nvml_lib, node),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    started.append(proc)
    held = json.loads(proc.stdout.readline())
    assert held["ret"] == 4                                    # NVML_ERROR_NO_PERMISSION
    assert listing(nvml_lib, node)[0]["processes"] == []
    assert sweep(nvml_lib, records_dir(node)) == {"removed": 1}
    assert not os.path.exists(user_dir(node, 0))
    proc.stdin.write("again\n")
    proc.stdin.flush()
    assert json.loads(proc.stdout.readline()) == {"ret": 0}
    assert [p[:2] for p in listing(nvml_lib, node)[0]["processes"]] == [[held["pid"], GiB]]
    end(proc)
    warning = proc.stderr.read()
    assert f"cannot keep this process's GPU memory record in {records_dir(node)}/0: another user made it " \
           "(the node agent removes it)" in warning, warning


# --- what a record says: only what its lock holder vouches for -----------------------------------

def test_a_forged_record_shows_its_holders_pid_and_own_name_and_at_most_the_board(nvml_lib, node, started):
    [forger] = forge(node, started, 0, 1, 1, 2**64 - 1, name=b"evil\xff\xfe\xc2\x9b[2J", argv0=HOSTILE_ARGV0,
                     pid=1)
    gpus = listing(nvml_lib, node)                            # pynvml decodes every name as UTF-8
    assert gpus[0]["processes"] == [[forger, H100_TOTAL, HOSTILE_SHOWN]]
    # a claim past the board is one no driver granted: memory used and free as if absent
    assert (gpus[0]["used"], gpus[0]["free"]) == (0, H100_USABLE)
    assert (gpus[1]["processes"], gpus[1]["used"]) == ([], 0)


def test_a_record_whose_holder_cannot_give_a_name_is_shown_by_its_own_printable_name(nvml_lib, node, started):
    """argv[0] empty (an exec with no arguments has none): the record's name, made printable."""
    [forger] = forge(node, started, 0, 1, 1, GiB, name=b"trainer\x1b]0;\x07\xc2\x85", argv0=b"")
    assert listing(nvml_lib, node)[0]["processes"] == [[forger, GiB, "trainer?]0;???"]]


def test_no_nvidia_smi_prints_a_control_byte_of_a_process_name(nvml_lib, node, started, smi):
    [forger] = forge(node, started, 0, 1, 1, GiB, name=b"evil\xc2\x9b[2J", argv0=HOSTILE_ARGV0)
    table = run_smi(smi, nvml_lib, node)
    assert b"\x9b" not in table and b"\x1b" not in table
    assert process_rows(table) == [("0", forger, "C", HOSTILE_SHOWN, "1024MiB")]


def test_a_record_held_from_outside_the_readers_pid_namespace_is_counted_but_not_listed(nvml_lib, node, started):
    [forger] = forge(node, started, 0, 1, 1, 2 * GiB)
    outside = ("unshare", "--pid", "--fork", "--mount-proc")
    if subprocess.run([*outside, "true"], capture_output=True).returncode != 0:
        pytest.skip("no PID namespace for the reader here (unshare --pid needs CAP_SYS_ADMIN)")
    gpu0 = listing(nvml_lib, node, outside)[0]
    assert (gpu0["processes"], gpu0["used"]) == ([], 2 * GiB)
    assert listing(nvml_lib, node)[0]["processes"] == [[forger, 2 * GiB, "forger"]]   # a reader beside it


# --- writers, readers and the agent's sweep at once ----------------------------------------------

def test_writers_readers_and_the_sweep_at_once_lose_no_live_record(nvml_lib, node, started):
    """Six processes of one user update their records 200 times each (a release every
    tenth), while two monitors list and the agent's sweep runs in a loop beside a forger's
    strays: no update is refused, no reader fails, and the end is each writer with its last
    size (bounded by count, not by time)."""
    top = records_dir(node)
    sweeper = subprocess.Popen([sys.executable, "-c", SWEEP_LOOP, os.path.join(nvml_lib, names.NVML_LIB_FILE), top],
                               env=clean_env(nvml_lib, {}), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    started.append(sweeper)
    monitors = [subprocess.Popen([sys.executable, PROBE, "watch"], env=clean_env(nvml_lib, node), text=True,
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE) for _ in range(2)]
    started.extend(monitors)
    writers = [subprocess.Popen([sys.executable, PROBE, "churn", str(i % 2), "200"], env=clean_env(nvml_lib, node),
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) for i in range(6)]
    started.extend(writers)
    for _ in range(20):                                       # readers and strays while the writers run
        with open(os.path.join(top, f"stray-{os.urandom(4).hex()}"), "w") as f:
            f.write("x")
        for m in monitors:
            m.stdin.write("\n")
            m.stdin.flush()
            assert json.loads(m.stdout.readline())            # a reader that failed has no line
    done = [json.loads(w.stdout.readline()) for w in writers]
    assert [d["failed"] for d in done] == [0] * 6
    gpus = listing(nvml_lib, node)
    for gpu in (0, 1):
        assert sorted(p[:2] for p in gpus[gpu]["processes"]) == sorted(
            [d["pid"], 200 * MiB] for i, d in enumerate(done) if i % 2 == gpu)
    sweeper.stdin.close()
    assert sweeper.wait(timeout=HANG_GUARD_S) == 0, sweeper.stdout.read()
    assert sorted(os.listdir(top)) == ["0"]


# --- dead records and strays: the agent sweeps every owner's ------------------------------------------------

SWEEP = """import json, sys
from mokka.agent import records
try:
    print(json.dumps({"removed": records.sweep(sys.argv[1], sys.argv[2])}))
except records.RecordsError as e:
    print(json.dumps({"error": str(e)}))
"""


#: The agent's sweep in a loop until its stdin closes (select: no blocking read).
SWEEP_LOOP = """import select, sys
from mokka.agent import records
while not select.select([sys.stdin], [], [], 0.01)[0]:
    records.sweep(sys.argv[1], sys.argv[2])
sys.stdin.read()
records.sweep(sys.argv[1], sys.argv[2])
"""


def sweep(lib: str, directory: str) -> dict:
    """mokka.agent.records.sweep in a process of its own (the sanitizer build needs its
    runtime preloaded, which this one has not)."""
    done = subprocess.run([sys.executable, "-c", SWEEP, os.path.join(lib, names.NVML_LIB_FILE), directory],
                          env=clean_env(lib, {}), capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def test_the_agent_sweeps_another_users_dead_records_stale_temps_and_strays_and_nothing_else(nvml_lib, node,
                                                                                             started, tmp_path):
    top = records_dir(node)
    d = user_dir(node, NOBODY)
    forge(node, started, 1, 2, 1, GiB)                         # dead once its forger is killed
    end(started.pop())
    dead = set(os.listdir(d))
    assert len(dead) == 2
    forge(node, started, 0, 1, 1, GiB)                         # live, of the same user
    real = holder(nvml_lib, node, started, 1, GiB)             # live, of root
    old, fresh = ".0.0123456789abcdef.1", ".0.0123456789abcdef.2"
    for temp in (old, fresh):
        path = os.path.join(d, temp)
        with open(path, "w") as f:
            f.write("mokka-process 1\n")
        os.chown(path, NOBODY, NOBODY)
    os.utime(os.path.join(d, old), (time.time() - 3600, time.time() - 3600))
    target = tmp_path / "not-a-record"
    target.write_text("mokka-process 1\npid 1\nused 1\nname x\n")
    os.symlink(target, os.path.join(d, "0.fedcba9876543210"))
    with open(os.path.join(d, "notes.txt"), "w") as f:
        f.write("not a record\n")
    kept = set(os.listdir(d)) - dead - {old}
    # strays beside the users' directories: a file, a tree, a directory others may write,
    # a link to a directory (never followed: what it points at stays)
    with open(os.path.join(top, "notes.txt"), "w") as f:
        f.write("junk\n")
    os.makedirs(os.path.join(top, "tree", "a", "b"))
    os.mkdir(os.path.join(top, "1000"))
    os.chown(os.path.join(top, "1000"), 1000, 1000)
    os.chmod(os.path.join(top, "1000"), 0o777)
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "0.0123456789abcdef").write_text("mokka-process 1\n")
    os.symlink(victim, os.path.join(top, "65533"))

    assert sweep(nvml_lib, top) == {"removed": 3 + 4}
    assert set(os.listdir(d)) == kept
    assert sorted(os.listdir(top)) == ["0", str(NOBODY)]
    assert target.read_text().startswith("mokka-process 1") and os.path.islink(os.path.join(d, "0.fedcba9876543210"))
    assert os.listdir(victim) == ["0.0123456789abcdef"]
    assert [p[0] for p in listing(nvml_lib, node)[1]["processes"]] == [real]


@pytest.mark.parametrize("make", [lambda p, tmp: os.symlink(tmp, p), lambda p, tmp: None],
                         ids=["a link to a directory", "no directory"])
def test_a_sweep_of_what_is_not_a_records_directory_is_refused(nvml_lib, tmp_path, make):
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "0.0123456789abcdef").write_text("mokka-process 1\n")
    path = str(tmp_path / "processes")
    make(path, str(victim))
    error = sweep(nvml_lib, path)["error"]
    assert "cannot sweep the CUDA process records" in error and repr(path) in error
    assert os.listdir(victim) == ["0.0123456789abcdef"]


def test_device_nodes_at_record_names_are_never_opened_by_a_reader_or_the_sweep(nvml_lib, node, started):
    """A container's root may mknod in the records directory: neither a reader (root's nvidia-smi
    on the host) nor the agent's sweep opens a host device through such a node."""
    from inotify_simple import INotify, flags

    top = records_dir(node)
    real = holder(nvml_lib, node, started, 0, GiB)
    d = user_dir(node, 0)
    with INotify(nonblocking=True) as watch:
        nodes = [os.path.join(d, name) for name in ("0.0123456789abcdef", "1.fedcba9876543210",
                                                      ".0.0123456789abcdef.1")]
        nodes.append(os.path.join(top, "1000"))                                 # a stray where a user's would be
        for path in nodes:
            os.mknod(path, 0o20644, os.makedev(1, 3))                          # /dev/null's numbers
            watch.add_watch(path, flags.OPEN)
        assert [p[0] for p in listing(nvml_lib, node)[0]["processes"]] == [real]
        assert sweep(nvml_lib, top) == {"removed": 1}
        assert not os.path.exists(nodes[-1])
        assert [e for e in watch.read(timeout=0) if e.mask & flags.OPEN] == []
