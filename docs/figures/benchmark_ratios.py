"""Bar chart of the benchmark ratios recorded in benchmarks.json (each
measured by a script in benchmarks/, which prints the ratio against its
reference from the same run, on the card named there).
usage: benchmark_ratios.py OUT_DIR"""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  pylint: disable=wrong-import-position

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    with open(os.path.join(HERE, "benchmarks.json"), encoding="utf-8") as f:
        data = json.load(f)
    rows = data["ratios"]
    labels = [f"{r['label']}\n({r['benchmark']})" for r in rows]
    values = [r["ratio"] for r in rows]
    fig, ax = plt.subplots(figsize=(8.5, 0.55 * len(rows) + 1.4))
    bars = ax.barh(range(len(rows)), values, color="#4878a8")
    ax.set_yticks(range(len(rows)), labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.axvline(1.0, color="gray", lw=0.8)
    for bar, row in zip(bars, rows):
        ax.text(bar.get_width() * 1.05, bar.get_y() + bar.get_height() / 2,
                f"{row['ratio']:g}x", va="center", fontsize=7)
    ax.set_xlabel("speed-up over the reference timed in the same run (log; > 1: faster)")
    ax.set_title(f"Measured on {data['device']}", fontsize=9)
    ax.set_xlim(right=max(values) * 2.5)
    fig.tight_layout()
    fig.savefig(os.path.join(sys.argv[1], "benchmark_ratios.png"), dpi=110)


if __name__ == "__main__":
    main()
