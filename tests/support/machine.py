"""The machine a benchmark runs on, printed and stored beside its figures: the CPU's model and
vendor, its logical CPUs and caches, whether libc's copies can use AVX-512, the kernel, whether it
runs under a hypervisor, and shared memory's huge-page setting. Figures from two machines do not
compare (a VM may come back on another host's CPU); this says which one each came from. Reads
/proc and /sys only, in about a millisecond."""

import os
import platform


def _read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return ""


def shmem_huge_pages():
    """The kernel's shmem_enabled setting, bracketed in sysfs ("never" on Debian): whether shared
    segments of 2 MiB or more that ask for huge pages get them."""
    words = _read("/sys/kernel/mm/transparent_hugepage/shmem_enabled").split()
    return next((w[1:-1] for w in words if w.startswith("[")), "unknown")


def _cpuinfo():
    """The first processor's fields of /proc/cpuinfo."""
    fields = {}
    for line in _read("/proc/cpuinfo").splitlines():
        if not line.strip():
            break
        key, _, value = line.partition(":")
        fields[key.strip()] = value.strip()
    return fields


def _caches():
    """The first CPU's data and unified caches, by level: {"L1d": "48K", "L2": "2048K", ...}."""
    caches = {}
    base = "/sys/devices/system/cpu/cpu0/cache"
    for index in sorted(os.listdir(base)) if os.path.isdir(base) else []:
        kind = _read(f"{base}/{index}/type")
        level = _read(f"{base}/{index}/level")
        size = _read(f"{base}/{index}/size")
        if kind in ("Data", "Unified") and level and size:
            caches[f"L{level}{'d' if kind == 'Data' else ''}"] = size
    return caches


def describe():
    """The machine as a dict, for a benchmark's JSON."""
    info = _cpuinfo()
    flags = set(info.get("flags", "").split())
    return {
        "cpu": info.get("model name", platform.processor() or "unknown"),
        "vendor": info.get("vendor_id", "unknown"),
        "cpus": os.cpu_count(),
        "caches": _caches(),
        "avx512": "avx512f" in flags,
        "hypervisor": "hypervisor" in flags,
        "kernel": platform.release(),
        "shmem_enabled": shmem_huge_pages(),
    }


def line(machine=None):
    """One line naming the machine, for a benchmark's printed table."""
    m = machine or describe()
    caches = ", ".join(f"{k} {v}" for k, v in m["caches"].items())
    return (f"machine: {m['cpu']} ({m['vendor']}), {m['cpus']} CPUs"
            f"{' under a hypervisor' if m['hypervisor'] else ''}, {caches or 'caches unknown'}, "
            f"{'AVX-512' if m['avx512'] else 'no AVX-512'}, kernel {m['kernel']}; shared "
            f"memory's huge pages (transparent_hugepage/shmem_enabled): {m['shmem_enabled']}")


if __name__ == "__main__":
    print(line())
