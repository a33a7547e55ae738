"""The native tests, rerun over the ASan + UBSan builds (tests/native/sanitized.py)."""

from __future__ import annotations

import os

from tests.native.sanitized import build, rerun

HERE = os.path.dirname(os.path.abspath(__file__))
LIBRARY_TESTS = ["test_engine_corpus.py", "test_fields.py", "test_threads.py", "test_errors.py",
                 "test_overrides_live.py", "test_processes_and_placement.py",
                 "test_fabric_state_dir.py", "test_xid_events.py", "test_dynamic.py", "test_reset_slots.py",
                 "test_report_queries.py", "test_mig_library.py", "test_mig_concurrency.py", "test_mig_hostile.py",
                 "test_hostile_files.py", "test_lookup_rules.py", "test_profile_swap.py", "test_mig_warning.py",
                 "test_process_records_hostile.py", "test_health_controller.py", "test_setters.py",
                 "test_settings_hostile.py", "test_dcgm_coverage.py", "test_gpm.py", "test_error_injection.py",
                 "test_nvml_newer.py", "test_dcgm_fields.py", "test_nvlink_reset.py"]

#: The proc hook is a program: its sanitizer build links the runtimes itself, so it runs
#: wherever the host's libraries are, but not copied alone into an empty chroot (`mokka
#: exec`'s rootfs form), where only the static release build runs: those tests stay in the
#: plain run.
HOOK_TESTS = ["test_sysview_hook.py"]
HOOK_SANITIZED = "not rootfs_form"

SHIM_TESTS = ["test_path_shims.py", "test_verbs_shim.py", "test_shim_libc_calls.py",
              "test_shim_path_forms.py"]


def test_library_tests_run_clean_under_asan_and_ubsan(tmp_path):
    lib_dir = build(str(tmp_path / "sanitize"), "nvml")
    rerun([os.path.join(HERE, t) for t in LIBRARY_TESTS], lib_dir)


def test_path_shim_tests_run_clean_under_asan_and_ubsan(tmp_path):
    """The shims' own tests: every tool (ibstat, ibstatus, lspci, the shell) preloads libasan."""
    lib_dir = build(str(tmp_path / "sanitize-shims"), "ibmocksys", "mockfs", "ibmockverbs")
    rerun([os.path.join(HERE, t) for t in SHIM_TESTS], lib_dir)


def test_proc_hook_tests_run_clean_under_asan_and_ubsan(tmp_path):
    """The hook runs as root in every GPU container's creation: its /sys view, links planted
    where it looks, a second run over its own mounts, under ASan and UBSan."""
    lib_dir = build(str(tmp_path / "sanitize-hook"), "prochook")
    rerun([os.path.join(HERE, t) for t in HOOK_TESTS], lib_dir, keyword=HOOK_SANITIZED)
