"""Markdown rows for an A/B benchmark: builds timed in alternating runs, each summarised as its
median and range, and set against the first build by the median of the per-run ratios (so a slow
minute of the machine, which both builds of one run share, cancels). Pure arithmetic; no I/O."""

import statistics


def ab_cells(times, scale=1.0):
    """For `times` (build name -> the seconds of its runs, index i of every build from run i):
    (name, "median (min-max)", "ratio x") for each build in order, the times multiplied by
    `scale` (1e3 for milliseconds) and shown to one decimal."""
    builds = list(times)
    if not builds:
        raise ValueError("ab_cells: no builds to compare")
    first = times[builds[0]]
    rows = []
    for name in builds:
        runs = times[name]
        if len(runs) != len(first) or not runs:
            raise ValueError(f"ab_cells: build {name!r} has {len(runs)} runs, the first build "
                             f"{len(first)}; an A/B table needs the same runs of each")
        ratio = statistics.median(b / a for a, b in zip(first, runs))
        rows.append((name, f"{scale * statistics.median(runs):.1f} ({scale * min(runs):.1f}-"
                           f"{scale * max(runs):.1f})", f"{ratio:.2f}x"))
    return rows
