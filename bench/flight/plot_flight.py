#!/usr/bin/env python3
"""Plot bench/flight/flight_bench.py's JSON: throughput of each path (a)-(e) of the 1 GiB table,
against the goal as a multiple of (a), and GetFlightInfo latency. Needs matplotlib.

    .venv/bin/python bench/flight/plot_flight.py flight.json docs/img/flight_transfer.png
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

NAMES = {
    "a": "(a) pyarrow server\npyarrow client",
    "b": "(b) ferry server\npyarrow client",
    "c": "(c) ferry server\nferry client, gRPC",
    "d": "(d) ferry client\nshared memory",
    "e": "(e) ferry client\nUCX",
}
GOALS = {"b": 1.0, "c": 1.3, "d": 20.0, "e": 3.0}


def main():
    with open(sys.argv[1]) as f:
        r = json.load(f)
    paths = r["paths"]
    keys = [k for k in "abcde" if k in paths]
    gbps = [r["bytes"] / paths[k]["median_s"] / 1e9 for k in keys]
    a = r["bytes"] / paths["a"]["median_s"] / 1e9
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5), gridspec_kw={"width_ratios": [3, 1]})
    bars = left.bar(range(len(keys)), gbps, color=["#888888", "#4c72b0", "#4c72b0", "#55a868", "#c44e52"])
    left.set_yscale("log")
    left.set_xticks(range(len(keys)))
    left.set_xticklabels([NAMES[k] for k in keys], fontsize=8)
    left.set_ylabel("GB/s to a usable table (log scale)")
    rounds = r.get("rounds", 1)
    left.set_title(f"1 GiB in 64 MiB batches, one host (median of {r['repeat'] * rounds})")
    for i, (k, v) in enumerate(zip(keys, gbps)):
        left.annotate(f"{v:.2f} GB/s\n{v / a:.2f}× (a)", (i, v), ha="center", va="bottom", fontsize=8)
        if k in GOALS:
            left.hlines(a * GOALS[k], i - 0.4, i + 0.4, colors="black", linestyles="dashed")
    left.plot([], [], "k--", label="goal (a multiple of (a))")
    left.legend(loc="upper left", fontsize=8)
    lat = r["latency_us"]
    labels = ["pyarrow\nserver", "ferry\nserver", "ferry server,\nferry client"]
    values = [lat["pyarrow"]["median"], lat["ferry"]["median"], lat["ferry_client"]["median"]]
    right.bar(range(3), values, color=["#888888", "#4c72b0", "#4c72b0"])
    right.set_xticks(range(3))
    right.set_xticklabels(labels, fontsize=8)
    right.set_ylabel("GetFlightInfo median (µs)")
    right.set_title("latency (pyarrow client\nunless named)")
    right.hlines(values[0] * 1.2, 0.6, 1.4, colors="black", linestyles="dashed")
    for i, v in enumerate(values):
        right.annotate(f"{v:.0f} µs", (i, v), ha="center", va="bottom", fontsize=8)
    del bars
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=110)


if __name__ == "__main__":
    main()
