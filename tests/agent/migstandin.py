"""The stand-in NVML library of the MIG rendering tests (c/migstandin.c), built with the
system gcc, and the table it answers from (``mig-standin.txt`` beside it).

    standin_dir(tmp_path_factory)   a directory holding the built libnvidia-ml.so.1
    write(directory, gpus, migs, errors=(), crash=False)
        gpus:   [(minor, mode, max MIG devices)], mode 1 on, 0 off, -1 not MIG-capable
        migs:   [(gpu index, MIG index, uuid, GPU instance, compute instance)]
        errors: [(gpu index, MIG index, NVML return code)]
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
LIBRARY = "libnvidia-ml.so.1"
TABLE = "mig-standin.txt"


def build(directory: str) -> str:
    if shutil.which("gcc") is None:
        pytest.skip("gcc is needed to build the MIG stand-in library (apt-get install gcc)")
    library = os.path.join(directory, LIBRARY)
    subprocess.run(["gcc", "-O2", "-shared", "-fPIC", "-Wall", "-Werror", "-o", library,
                    os.path.join(HERE, "c", "migstandin.c"), "-ldl"], check=True)
    return library


def write(directory: str, gpus, migs, errors=(), crash: bool = False) -> None:
    lines = [f"gpu {minor} {mode} {most}" for minor, mode, most in gpus]
    lines += [f"mig {g} {j} {uuid} {gi} {ci}" for g, j, uuid, gi, ci in migs]
    lines += [f"err {g} {j} {code}" for g, j, code in errors]
    lines += ["crash"] if crash else []
    tmp = os.path.join(directory, f".{TABLE}.tmp")
    with open(tmp, "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(tmp, os.path.join(directory, TABLE))
