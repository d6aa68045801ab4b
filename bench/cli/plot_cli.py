"""Plot cli_bench.py's JSON: each path's throughput (whole process, and the transfer after the
connection's set-up) beside ucx_perftest's, and the server's own
memory at its peak. Usage: python bench/cli/plot_cli.py cli.json docs/img/cli_bench.png"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(src, dst):
    r = json.load(open(src))
    size = r["file_bytes"]
    names = list(r["paths"]) + ["ucx_perftest tag_bw", "ucx_perftest ucp_get"]
    rates = [size / p["get_s"] / 1e9 for p in r["paths"].values()]
    rates += [r["perftest"]["tag_bw"] / 1e9, r["perftest"]["ucp_get"] / 1e9]
    transfer = [p["transfer_bps"] / 1e9 for p in r["paths"].values()] + [0, 0]
    own = [(p["peak_own_kib"] - p["idle_own_kib"]) / 1024 for p in r["paths"].values()]
    fig, (a, b) = plt.subplots(1, 2, figsize=(13, 4.5), gridspec_kw={"width_ratios": [3, 2]})
    colors = ["tab:blue"] * len(r["paths"]) + ["tab:gray"] * 2
    ys = range(len(names))
    a.barh([y - 0.2 for y in ys], rates, height=0.4, color=colors, label="whole process")
    a.barh([y + 0.2 for y in ys], transfer, height=0.4, color="tab:green",
           label="transfer after connect")
    # Over shared memory with default validation the client only maps the file: hundreds of GB/s.
    # Such bars are clipped and their value written beside them.
    clip = 20.0
    for y, (w, t) in enumerate(zip(rates, transfer)):
        for off, v in ((-0.2, w), (0.2, t)):
            if v > clip:
                a.text(clip * 0.98, y + off, f"{v:,.0f} (clipped)", ha="right", va="center",
                       fontsize=7, color="white")
    a.set_xlim(0, clip)
    a.set_yticks(list(ys))
    a.set_yticklabels(names)
    a.set_xlabel("GB/s (`ferry get`; file of %.2f GiB)" % (size / 2**30))
    a.legend(loc="lower right")
    a.invert_yaxis()
    b.barh(list(r["paths"]), own, color="tab:orange")
    b.axvline(size / 2**20 * 0.10, color="red", linestyle="--", label="10% of the file")
    b.set_xlabel("server's own memory, peak above idle (MiB)")
    b.set_yticklabels([])
    b.invert_yaxis()
    b.legend()
    fig.tight_layout()
    fig.savefig(dst, dpi=110)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
