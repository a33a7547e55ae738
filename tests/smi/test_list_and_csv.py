"""-L, --query-gpu and --query-compute-apps, field by field against the compiled state."""

from __future__ import annotations

import pytest

from conftest import PROFILES
from tests.corpus.dynamic_cases import BUILTIN_UTILIZATION
from tests.corpus.engine_cases import write_overrides

MIB = 1024 * 1024


@pytest.mark.parametrize("profile", PROFILES)
def test_list_names_every_gpu_of_the_profile(staged, dev_root, profile):
    ov = staged(profile)
    res = ov.run(["-L"], str(dev_root))
    assert res.returncode == 0, res.stderr
    want = [f"GPU {g['index']}: {g['name']} (UUID: {g['uuid']})" for g in ov.state["gpus"]]
    assert res.stdout.splitlines() == want
    assert res.stderr == ""


@pytest.mark.parametrize("profile", PROFILES)
def test_query_gpu_csv_matches_state(staged, dev_root, profile):
    ov = staged(profile)
    fields = ("index,uuid,name,serial,driver_version,pci.bus_id,memory.total,memory.used,"
              "memory.free,utilization.gpu,utilization.memory,temperature.gpu,power.draw,"
              "power.limit,fan.speed,pstate,compute_mode,clocks.sm,clocks.max.memory,"
              "ecc.errors.uncorrected.aggregate.total")
    res = ov.run([f"--query-gpu={fields}", "--format=csv"], str(dev_root))
    assert res.returncode == 0, res.stderr
    header, *rows = res.stdout.splitlines()
    assert header.split(", ")[6] == "memory.total [MiB]"
    assert header.split(", ")[12] == "power.draw [W]"
    assert len(rows) == len(ov.state["gpus"])
    for gpu, row in zip(ov.state["gpus"], rows):
        cells = row.split(", ")
        mem = gpu["memory"]
        total = mem["total_bytes"] // MIB
        assert cells[0] == str(gpu["index"])
        assert cells[1] == gpu["uuid"]
        assert cells[2] == gpu["name"]
        assert cells[3] == str(gpu["serial"])
        assert cells[4] == ov.state["system"]["driver_version"]
        assert cells[5] == gpu["pci"]["bus_id"]
        assert cells[6] == f"{total} MiB"
        assert cells[7] == f"{mem['used_bytes'] // MIB} MiB"
        assert cells[8] == f"{total - mem['reserved_bytes'] // MIB - mem['used_bytes'] // MIB} MiB"
        moving_gpu, moving_memory = BUILTIN_UTILIZATION[gpu["index"]]      # at the pinned second
        assert cells[9] == f"{moving_gpu} %"
        assert cells[10] == f"{moving_memory} %"
        assert cells[11] == str(gpu["thermal"]["temperature_gpu_c"])
        assert cells[12] == f"{gpu['power']['current_draw_mw'] / 1000:.2f} W"
        assert cells[13] == f"{gpu['power']['enforced_limit_mw'] / 1000:.2f} W"
        assert cells[14] == "[N/A]"                        # no fans on any profile
        assert cells[15] == gpu["performance_state"]
        assert cells[16] == "Default"
        assert cells[17] == f"{gpu['clocks']['sm_current']} MHz"
        assert cells[18] == f"{gpu['clocks']['memory_max']} MHz"
        assert cells[19] == str(gpu["ecc"]["errors"]["aggregate"]["double_bit"]["total"])


def test_noheader_nounits_strips_header_and_units(staged, dev_root):
    ov = staged("a100")
    res = ov.run(["--query-gpu=memory.total,power.limit,fan.speed", "--format=csv,noheader,nounits"],
                 str(dev_root))
    assert res.returncode == 0
    assert res.stdout.splitlines()[0] == "40960, 400.00, [N/A]"


@pytest.mark.parametrize("alias,canonical", [("gpu_serial", "serial"), ("gpu_uuid", "uuid"),
                                             ("gpu_name", "name"), ("gpu_bus_id", "pci.bus_id"),
                                             ("clocks.gr", "clocks.current.graphics"),
                                             ("ecc.errors.corrected.volatile.dram",
                                              "ecc.errors.corrected.volatile.device_memory")])
def test_aliases_answer_like_their_field(staged, dev_root, alias, canonical):
    ov = staged("h100")
    a = ov.run([f"--query-gpu={alias}", "--format=csv,noheader"], str(dev_root))
    b = ov.run([f"--query-gpu={canonical}", "--format=csv,noheader"], str(dev_root))
    assert a.returncode == b.returncode == 0
    assert a.stdout == b.stdout != ""


def test_unknown_field_is_the_real_error_and_exit_2(staged, dev_root):
    res = staged("t4").run(["--query-gpu=index,bogus.field", "--format=csv"], str(dev_root))
    assert res.returncode == 2
    assert res.stdout.startswith('Field "bogus.field" is not a valid field to query.')
    assert "Traceback" not in res.stderr


def test_id_selects_for_queries(staged, dev_root):
    ov = staged("l40s")
    res = ov.run(["-i", "2", "--query-gpu=index,uuid", "--format=csv,noheader"], str(dev_root))
    assert res.stdout.splitlines() == [f"2, {ov.state['gpus'][2]['uuid']}"]
    res = ov.run([f"--id={ov.state['gpus'][5]['uuid']}", "--query-gpu=index", "--format=csv,noheader"],
                 str(dev_root))
    assert res.stdout.splitlines() == ["5"]


@pytest.mark.parametrize("bus_id", ["00000000:B1:00.0", "0000:b1:00.0", "B1:00.0", "00000000:b1:00.0"])
def test_id_may_be_a_pci_bus_id_in_any_form_nvml_takes(staged, dev_root, bus_id):
    res = staged("l40s").run(["-i", f"{bus_id},7", "--query-gpu=index,pci.bus_id", "--format=csv,noheader"],
                             str(dev_root))
    assert (res.returncode, res.stdout) == (0, "2, 00000000:B1:00.0\n7, 00000000:CB:00.0\n"), res.stderr


def test_a_bus_id_no_gpu_sits_at_finds_nothing(staged, dev_root):
    res = staged("l40s").run(["-i", "00000000:05:00.0", "--query-gpu=index", "--format=csv"], str(dev_root))
    assert (res.returncode, res.stdout) == (6, "No devices were found\n")


def test_list_takes_no_id_as_nvidia_smi_550(staged, dev_root):
    res = staged("l40s").run(["-i", "2", "-L"], str(dev_root))
    assert (res.returncode, res.stdout) == (
        2, "ERROR: Option -i is not valid for this command. Please run 'nvidia-smi -h' for help.\n\n")


def test_compute_apps_without_processes_prints_no_rows(staged, dev_root):
    res = staged("gb300").run(["--query-compute-apps=pid,process_name,gpu_uuid,used_memory",
                               "--format=csv,noheader"], str(dev_root))
    assert res.returncode == 0
    assert res.stdout == ""


def test_compute_apps_lists_configured_processes(fresh, dev_root):
    ov = fresh("a100")
    write_overrides(str(ov.config_dir), {1: "processes:\n"
                                            "  - {pid: 4242, type: C, name: train.py, used_memory_mib: 1024}\n"
                                            "  - {pid: 0, type: C, name: phantom, used_memory_mib: 0}\n"})
    res = ov.run(["--query-compute-apps=pid,process_name,gpu_uuid,used_memory", "--format=csv"],
                 str(dev_root))
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == [
        "pid, process_name, gpu_uuid, used_memory [MiB]",
        f"4242, train.py, {ov.state['gpus'][1]['uuid']}, 1024 MiB"]
