"""The image's sources agree with each other and lint clean: the generated Dockerfile
with image/packages.txt, the links with the zipapp's commands, the nvidia-smi pin
with what the tests run, the version with pyproject; hadolint and shellcheck."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
import tomllib

import pytest

from tests.conftest import REPO

IMAGE = os.path.join(REPO, "image")
sys.path.insert(0, IMAGE)

import layout  # noqa: E402
import packages  # noqa: E402


def tool(name: str) -> str:
    path = shutil.which(name) or os.path.join(os.path.dirname(sys.executable), name)
    if not os.access(path, os.X_OK):
        if os.environ.get("MOKKA_REQUIRE_RUNTIME") == "1":
            pytest.fail(f"{name} is not installed: pip install -e '.[test]'")
        pytest.skip(f"{name} is not installed (pyproject's [test] extra has it)")
    return path


def test_the_committed_dockerfile_is_generated_from_the_package_list():
    with open(os.path.join(IMAGE, "Dockerfile")) as f:
        committed = f.read()
    assert committed == packages.dockerfile(packages.load()), \
        "image/Dockerfile is stale: python3 image/packages.py dockerfile --write"


def test_the_dockerfile_installs_every_listed_package_and_extract():
    with open(os.path.join(IMAGE, "Dockerfile")) as f:
        text = f.read()
    for name in ("python3-minimal", "libpython3.11-stdlib", "infiniband-diags", "ibverbs-utils",
                 "patchelf", "systemd", "coreutils"):
        assert f"        {name} \\\n" in text, name
    assert "apt-get download -qq nvidia-smi=550.163.01-2" in text
    assert "/tree/usr/lib/mokka/nvidia-smi" in text
    assert 'ENTRYPOINT ["/usr/local/bin/mokka"]' in text and 'CMD ["node-agent"]' in text


def test_build_sh_takes_its_packages_from_the_list():
    out = subprocess.run([sys.executable, os.path.join(IMAGE, "packages.py"), "include"],
                         capture_output=True, text=True, check=True).stdout.strip().split(",")
    assert out[:2] == ["python3-minimal", "libpython3.11-stdlib"]
    assert {"infiniband-diags", "ibverbs-utils", "patchelf", "systemd"} <= set(out)
    extract = subprocess.run([sys.executable, os.path.join(IMAGE, "packages.py"), "extract"],
                             capture_output=True, text=True, check=True).stdout
    assert extract.splitlines() == ["nvidia-smi=550.163.01-2 trixie non-free usr/lib/nvidia/current/nvidia-smi"]
    with open(os.path.join(IMAGE, "build.sh")) as f:
        script = f.read()
    assert '"$here/packages.py" include' in script and '"$here/packages.py" extract' in script


@pytest.mark.parametrize("line, error", [
    ("install a=1", "expected 'install PACKAGE'"),
    ("extract nvidia-smi trixie/non-free x", "expected 'install PACKAGE'"),
    ("exclude usr/share/doc/*", "expected 'install PACKAGE'"),
    ("frobnicate x", "expected 'install PACKAGE'"),
])
def test_a_bad_line_is_named_with_its_number(line, error):
    with pytest.raises(packages.ListError) as caught:
        packages.parse(f"install python3-minimal\n# note\n{line}\n", "packages.txt")
    assert str(caught.value).startswith(f"packages.txt:3: {error}")
    assert "\n" not in str(caught.value)


def test_the_links_are_commands_of_the_zipapp():
    from mokka.cmd.main import COMMANDS
    assert layout.LINKS == ("nri-plugin", "nvidia-smi", "check-fabric", "mock-ib", "fabricmanager", "ctl")
    assert set(layout.LINKS) <= set(COMMANDS)
    assert layout.DEFAULT_COMMAND in COMMANDS


def test_the_image_is_named_and_labelled_with_pyprojects_version():
    with open(os.path.join(REPO, "pyproject.toml"), "rb") as f:
        version = tomllib.load(f)["project"]["version"]
    assert layout.version() == version
    assert layout.image_ref("0.1.0") == "docker.io/library/mokka:0.1.0"
    assert layout.static_labels("0.1.0") == {"org.opencontainers.image.title": "mokka",
                                             "org.opencontainers.image.version": "0.1.0"}


def test_the_python_of_the_image_is_the_minor_the_zipapp_is_built_for():
    # ./shivfile's compiled wheels (PyYAML's cp311 loader) load only on that minor.
    assert layout.PYTHON_VERSION == "3.11"
    assert "libpython3.11-stdlib" in packages.load().install


def test_the_pinned_nvidia_smi_is_the_one_the_tests_fetch():
    (smi,) = packages.load().extract
    from tests.integration.runtime import runtime_dir
    fetched = glob.glob(os.path.join(str(runtime_dir()), "debs", "nvidia-smi_*.deb"))
    if not fetched:
        pytest.skip("no .ci/fetch-runtime.sh cache")
    assert [os.path.basename(p) for p in fetched] == [f"nvidia-smi_{smi.version}_amd64.deb"]


def test_the_dockerfile_is_clean_under_hadolint():
    done = subprocess.run([tool("hadolint"), os.path.join(IMAGE, "Dockerfile")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_image_scripts_are_clean_under_shellcheck():
    scripts = sorted(glob.glob(os.path.join(IMAGE, "*.sh")))
    assert scripts
    done = subprocess.run([tool("shellcheck"), "-x", *scripts], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stdout + done.stderr


def test_build_sh_refuses_an_unknown_architecture(tmp_path):
    done = subprocess.run(["bash", os.path.join(IMAGE, "build.sh"), str(tmp_path / "x.tar"), "sparc"],
                          capture_output=True, text=True)
    assert done.returncode == 1
    assert done.stderr == "build.sh: ARCH must be amd64 or arm64, not 'sparc'\n"
    assert not os.path.exists(tmp_path / "x.tar")
