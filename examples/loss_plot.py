"""Loss curves for the examples, drawn with matplotlib.

matplotlib comes from Debian's python3-matplotlib (`./qd setup` installs
it). Where it is missing, the examples still run and say the plot was
skipped and why.
"""


def save_loss_curve(path, losses, title):
    """Writes `losses` per iteration on a log scale to the PNG `path`.

    Returns None when written, else the reason the plot was skipped.
    """
    try:
        import matplotlib  # pylint: disable=import-outside-toplevel
        matplotlib.use("Agg")  # no display: render straight to the file
        import matplotlib.pyplot as plt  # pylint: disable=import-outside-toplevel
    except ImportError as error:
        return (f"matplotlib is not importable ({error}); install Debian's "
                "python3-matplotlib (./qd setup does)")
    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=100)
    try:
        ax.semilogy(range(len(losses)), losses, color="tab:blue", linewidth=2,
                    marker="o", markersize=3)
        ax.set_xlabel("iteration")
        ax.set_ylabel("loss (log scale)")
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        fig.tight_layout()
        fig.savefig(path, format="png")
    finally:
        plt.close(fig)
    return None
