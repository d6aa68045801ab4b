"""`ferry devices` against the operating system and the drivers' own tools: the CPU as
/proc/cpuinfo and sysconf see it, OpenCL devices as `clinfo --raw` lists them, CUDA GPUs as
`nvidia-smi` does (where there is one), the guarded test device only with --all, and the reason
a kind is absent taken from the driver loader."""
import json
import os
import re
import shutil
import subprocess

import pytest

KEYS = {
    "cpu": {"kind", "device", "arrow_device_type", "device_id", "name", "memory_bytes", "cores"},
    "cuda": {"kind", "device", "arrow_device_type", "device_id", "name", "memory_bytes", "driver_version",
             "compute_capability"},
    "opencl": {"kind", "device", "arrow_device_type", "device_id", "name", "memory_bytes", "platform",
               "driver_version", "svm"},
    "guarded": {"kind", "device", "arrow_device_type", "device_id", "name", "memory_bytes"},
}


def devices(run, *args, env=None):
    r = run("devices", "--json", *args, env=env)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["schema"] == "ferry.devices/1"
    assert set(doc) == {"schema", "devices", "absent", "ucx"}
    for d in doc["devices"]:
        assert set(d) == KEYS[d["kind"]], d
    return doc


def of(doc, kind):
    return [d for d in doc["devices"] if d["kind"] == kind]


def test_cpu_is_what_the_system_says(run):
    (cpu,) = of(devices(run), "cpu")
    assert cpu["cores"] == os.sysconf("SC_NPROCESSORS_ONLN")
    assert cpu["memory_bytes"] == os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    models = [line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")]
    assert cpu["name"] == (models[0] if models else "unknown CPU")
    assert (cpu["device"], cpu["arrow_device_type"], cpu["device_id"]) == ("cpu", 1, -1)


def clinfo_devices():
    out = subprocess.run(["clinfo", "--raw"], capture_output=True, text=True, check=True).stdout
    found = {}
    for line in out.splitlines():
        m = re.match(r"^\[([^/\]]+)/(\d+)\]\s+(CL_\w+)\s+(.*)$", line)
        if m:
            found.setdefault((m.group(1), int(m.group(2))), {})[m.group(3)] = m.group(4).strip()
    platforms = {}
    for line in out.splitlines():
        m = re.match(r"^\[([^/\]]+)/\*\]\s+CL_PLATFORM_NAME\s+(.*)$", line)
        if m:
            platforms[m.group(1)] = m.group(2).strip()
    return [dict(props, platform=platforms.get(key[0], "")) for key, props in sorted(found.items())]


@pytest.mark.skipif(shutil.which("clinfo") is None, reason="clinfo is not installed (scripts/setup.sh installs it)")
def test_opencl_devices_are_what_clinfo_lists(run):
    doc = devices(run)
    theirs = clinfo_devices()
    ours = of(doc, "opencl")
    if not theirs:
        assert not ours and "opencl" in doc["absent"]
        return
    assert [d["name"] for d in ours] == [t["CL_DEVICE_NAME"] for t in theirs]
    usable = 0
    for d, t in zip(ours, theirs):
        assert d["platform"] == t["platform"]
        assert d["driver_version"] == t["CL_DRIVER_VERSION"]
        assert d["svm"] == ("CL_DEVICE_SVM_COARSE_GRAIN_BUFFER" in t.get("CL_DEVICE_SVM_CAPABILITIES", ""))
        # PoCL sizes a CPU device's global memory from free memory, which moves between calls.
        theirs_memory = int(t["CL_DEVICE_GLOBAL_MEM_SIZE"])
        assert abs(d["memory_bytes"] - theirs_memory) <= theirs_memory // 4
        assert d["device"] == (f"opencl:{usable}" if d["svm"] else None)
        assert d["device_id"] == (usable if d["svm"] else -1)
        usable += d["svm"]


def test_cuda_gpus_are_what_nvidia_smi_lists(run):
    # The real driver's view: the stand-in driver the suites may name is not what nvidia-smi sees.
    doc = devices(run, env={"FERRY_CUDA_DRIVER": None})
    gpus = of(doc, "cuda")
    smi = shutil.which("nvidia-smi")
    if smi is None:
        # No GPU here: the kind is absent, with the loader's reason.
        assert not gpus
        assert doc["absent"]["cuda"].startswith(("no CUDA driver", "the CUDA driver")), doc["absent"]
        return
    out = subprocess.run([smi, "--query-gpu=name,memory.total,driver_version,compute_cap",
                          "--format=csv,noheader,nounits"], capture_output=True, text=True, check=True).stdout
    rows = [[c.strip() for c in line.split(",")] for line in out.strip().splitlines()]
    assert [g["name"] for g in gpus] == [r[0] for r in rows]
    for i, (g, r) in enumerate(zip(gpus, rows)):
        assert g["device"] == f"cuda:{i}" and g["device_id"] == i
        assert g["compute_capability"] == r[3]
        assert abs(g["memory_bytes"] / 2**20 - float(r[1])) < 1024  # nvidia-smi counts MiB, less reserved
        assert re.fullmatch(r"\d+\.\d+", g["driver_version"])


def test_a_missing_driver_is_named(run, tmp_path):
    missing = tmp_path / "libcuda-missing.so.1"
    doc = devices(run, env={"FERRY_CUDA_DRIVER": str(missing), "FERRY_OPENCL_LIBRARY": str(tmp_path / "nocl.so")})
    assert not of(doc, "cuda") and not of(doc, "opencl")
    assert doc["absent"]["cuda"].startswith(f"no CUDA driver: dlopen({missing}) failed")
    assert doc["absent"]["opencl"].startswith(f"no OpenCL runtime: dlopen({tmp_path / 'nocl.so'}) failed")
    text = run("devices", env={"FERRY_CUDA_DRIVER": str(missing)}).stdout
    assert f"CUDA\n  none: no CUDA driver: dlopen({missing}) failed" in text


def test_guarded_device_only_with_all(run):
    assert not of(devices(run), "guarded")
    (g,) = of(devices(run, "--all"), "guarded")
    assert (g["arrow_device_type"], g["device_id"]) == (12, 0)
    assert "guarded test device is listed with --all" in run("devices").stdout
    assert "EXT_DEV:0" in run("devices", "--all").stdout


def test_text_lists_every_json_device(run):
    doc = devices(run, "--all")
    text = run("devices", "--all").stdout
    for heading in ("CPU", "CUDA", "OpenCL", "Guarded test device"):
        assert f"\n{heading}\n" in "\n" + text
    for d in doc["devices"]:
        assert d["name"] in text
    for kind, why in doc["absent"].items():
        assert f"none: {why}" in text


def test_ucx_is_the_library_the_process_mapped(run, ferry_cli):
    """The UCX report names the libucp the tool's process loaded: the loader's own answer
    (`LD_DEBUG=libs`) for which file satisfied libucp.so.0, and its version as the system's
    `ucx_info -v` prints it when the report names the system's library."""
    doc = devices(run)
    ucx = doc["ucx"]
    assert set(ucx) == {"available", "built_against", "loaded", "path"}
    assert ucx["available"] is True, "this build has UCX (setup.sh installs libucx-dev)"
    r = subprocess.run([ferry_cli, "devices", "--json"], capture_output=True, text=True, timeout=60,
                       env={**os.environ, "LD_DEBUG": "libs"})
    found = re.findall(r"trying file=(\S*libucp\.so\.0)\s*$", r.stderr, re.M)
    assert found, "the loader never looked for libucp.so.0"
    assert os.path.realpath(ucx["path"]) == os.path.realpath(found[-1])
    assert re.fullmatch(r"\d+\.\d+\.\d+", ucx["loaded"]) and re.fullmatch(r"\d+\.\d+", ucx["built_against"])
    # UCX keeps old binaries working on newer libraries, not the reverse.
    loaded = tuple(int(p) for p in ucx["loaded"].split("."))
    assert loaded[:2] >= tuple(int(p) for p in ucx["built_against"].split(".")), ucx
    if ucx["path"].startswith("/usr/lib/") and shutil.which("ucx_info"):
        v = subprocess.run(["ucx_info", "-v"], capture_output=True, text=True, timeout=60).stdout
        assert f"# Version {ucx['loaded']}\n" in v, v
    text = run("devices").stdout
    assert f"UCX {ucx['loaded']} ({ucx['path']}), built against {ucx['built_against']}" in text
