#!/usr/bin/env python3
"""Bar chart of ferry_dipc_transfer_bench's Google Benchmark JSON output.

    build/bench/bench/ferry_dipc_transfer_bench --benchmark_out=transfer.json \\
        --benchmark_out_format=json
    .venv/bin/python bench/dipc/plot_transfer.py transfer.json docs/img/dipc_transfer.png

Left: throughput of the 1 GiB table (GB/s, 1e9 bytes) for cases (a)-(e) and ucx_perftest.
Right: the 1,000-row batch rate through shared memory and UCX, against the UCX goal. Needs matplotlib.
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

LABELS = [
    ("a_pyarrow_ipc_unix_socket", "(a)\npyarrow IPC\nsocket"),
    ("b_ferry_ipc_unix_socket", "(b)\nferry IPC\nsocket"),
    ("c_dipc_ucx_body0_spec_default", "(c) UCX\ntype 0 spec\n(TCP)"),
    ("c_dipc_ucx_body0_fast_default", "(c) UCX\ntype 0 fast\ndefault"),
    ("c_dipc_ucx_body0_fast_full", "(c) UCX\ntype 0 fast\nfull"),
    ("c_dipc_ucx_body0_spec_kept_default", "(c) UCX\ntype 0 spec\nkept"),
    ("c_dipc_ucx_body0_fast_kept_default", "(c) UCX\ntype 0 fast\nkept"),
    ("d_dipc_ucx_body1_spec_default", "(d) UCX\ntype 1 spec\n(TCP)"),
    ("d_dipc_ucx_body1_fast_default", "(d) UCX\ntype 1 fast"),
    ("d_dipc_ucx_body1_fast_kept_default", "(d) UCX\ntype 1 fast\nkept"),
    ("e_dipc_shm_body1_full", "(e)\nshm type 1\nfull"),
    ("e_dipc_shm_body1_default", "(e)\nshm type 1\ndefault"),
    ("e_dipc_shm_body1_kept_default", "(e) kept\nshm type 1\ndefault"),
    ("ucx_perftest_tag_bw_64MiB/tcp", "perftest\ntag_bw\nTCP"),
    ("ucx_perftest_tag_bw_64MiB/peer_errors_tcp", "perftest\ntag_bw\nTCP -e"),
    ("ucx_perftest_tag_bw_64MiB/ucx_default", "perftest\ntag_bw\nUCX's choice"),
    ("ucx_perftest_ucp_get_64MiB/tcp", "perftest\nucp_get\nTCP"),
    ("ucx_perftest_ucp_get_64MiB/ucx_default", "perftest\nucp_get\nUCX's choice"),
]
SMALL = [
    ("small_batches_shm_body1_default", "shm\ntype 1"),
    ("small_batches_shm_body1_kept_default", "shm type 1\nkept"),
    ("small_batches_ucx_body0_fast_default", "UCX shm\ntype 0"),
    ("small_batches_ucx_body1_fast_default", "UCX shm\ntype 1"),
]
# Bars taller than this are drawn clipped, their value printed at the top (a kept dataset read
# with default validation only maps the region: thousands of GB/s).
CLIP = 25.0


def figures(path):
    """run_name -> (bytes/s, items/s), medians preferred over single runs."""
    out, medians = {}, set()
    for b in json.load(open(path))["benchmarks"]:
        if b.get("error_occurred"):
            continue
        name = b["run_name"]
        aggregate = b.get("run_type") == "aggregate"
        if aggregate and b.get("aggregate_name") != "median":
            continue
        if aggregate or name not in medians:
            out[name] = (b.get("bytes_per_second", 0.0), b.get("items_per_second", 0.0))
        if aggregate:
            medians.add(name)
    return out


def lookup(f, prefix):
    for name, v in f.items():
        if name.startswith(prefix):
            return v
    return None


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    f = figures(sys.argv[1])
    fig, (left, right) = plt.subplots(1, 2, figsize=(16, 4.8), gridspec_kw={"width_ratios": [4, 1]})

    names, values, colors = [], [], []
    for key, label in LABELS:
        v = lookup(f, key)
        if v is None:
            continue
        names.append(label)
        values.append(v[0] / 1e9)
        colors.append("#999999" if key.startswith("ucx_perftest") else
                      "#d62728" if key.startswith("a_") else "#1f77b4")
    shown = [min(v, CLIP) for v in values]
    bars = left.bar(range(len(values)), shown, color=colors)
    left.bar_label(bars, labels=[f"{v:.2f}" if v <= CLIP else f"{v:,.0f}\n(clipped)" for v in values],
                   fontsize=8)
    left.set_ylim(0, CLIP * 1.12)
    left.set_xticks(range(len(values)), names, fontsize=7)
    left.set_xlabel("full / default: the client's validation level; dipc bars time the connected "
                    "stream", fontsize=8)
    left.set_ylabel("GB/s (1 GiB table, 16 x 64 MiB batches)")
    a = lookup(f, "a_pyarrow_ipc_unix_socket")
    if a:
        goal = 20 * a[0] / 1e9
        left.axhline(goal, color="#d62728", linestyle="--", linewidth=1)
        left.text(len(values) - 0.5, goal, "goal for (e): 20x (a)", color="#d62728", fontsize=8,
                  ha="right", va="bottom")
    left.set_title("Across processes, one host (2-core VM)", fontsize=10)

    snames, svalues = [], []
    for key, label in SMALL:
        v = lookup(f, key)
        if v is not None:
            snames.append(label)
            svalues.append(v[1] / 1e3)
    sbars = right.bar(range(len(svalues)), svalues, color="#1f77b4")
    right.bar_label(sbars, fmt="%.0f", fontsize=8)
    right.axhline(50, color="#d62728", linestyle="--", linewidth=1)
    right.text(len(svalues) - 0.5, 50, "UCX goal", color="#d62728", fontsize=8, ha="right",
               va="bottom")
    right.set_xticks(range(len(svalues)), snames, fontsize=7)
    right.set_ylabel("thousand batches/s")
    right.set_ylim(0, max(svalues + [50]) * 1.15)
    right.set_title("1,000-row batches", fontsize=10)

    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=80)


if __name__ == "__main__":
    main()
