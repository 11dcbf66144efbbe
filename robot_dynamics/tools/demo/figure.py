"""The demo's PNG (matplotlib, imported when called)."""

from pathlib import Path

import numpy as np


def unit_label(quantity, joint_names, joint_types, revolute, prismatic):
    """An axis label with the units of the joints plotted: ``position (rad)`` for revolute joints
    only, ``position (m)`` for prismatic ones only, and both, naming the prismatic joints, for a mix.

    >>> unit_label("position", ["j1", "finger"], ["revolute", "prismatic"], "rad", "m")
    'position (rad; finger: m)'
    """
    linear = [name for name, kind in zip(joint_names, joint_types) if kind == "prismatic"]
    if not linear:
        return f"{quantity} ({revolute})"
    if len(linear) == len(joint_names):
        return f"{quantity} ({prismatic})"
    return f"{quantity} ({revolute}; {', '.join(linear)}: {prismatic})"


def plot(metrics, joint_names, path, title, joint_types=None):
    """PNG: desired vs actual positions (both runs), applied torques, tracking error (log scale).
    ``joint_types`` (default: all revolute) give the axes their units."""
    joint_types = list(joint_types or ["revolute"] * len(joint_names))
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ct = metrics[0]
    pd = metrics[1] if len(metrics) > 1 else None
    n = len(joint_names)
    colors = plt.get_cmap("tab10").colors
    fig, axes = plt.subplots(2, 2, figsize=(15, 10))
    fig.suptitle(title, fontsize=14)

    def positions(ax, m):
        for j in range(n):
            ax.plot(m.times, m.q_desired[:, j], color=colors[j % 10], lw=5, alpha=0.3, solid_capstyle="butt")
            ax.plot(m.times, m.q[:, j], color=colors[j % 10], lw=1.3)
        ax.set_title(f"{m.label}: joint positions, actual (thin) and desired (wide, light)")
        ax.set_xlabel("time (s)")
        ax.set_ylabel(unit_label("position", joint_names, joint_types, "rad", "m"))
        ax.grid(alpha=0.3)

    positions(axes[0, 0], ct)
    if pd is not None:
        positions(axes[0, 1], pd)
        low = min(axes[0, 0].get_ylim()[0], axes[0, 1].get_ylim()[0])
        high = max(axes[0, 0].get_ylim()[1], axes[0, 1].get_ylim()[1])
        axes[0, 0].set_ylim(low, high)
        axes[0, 1].set_ylim(low, high)
    else:
        axes[0, 1].axis("off")

    ax = axes[1, 0]
    for j in range(n):
        ax.plot(ct.times, ct.effort[:, j], color=colors[j % 10], lw=1.2)
    ax.set_title(f"{ct.label}: applied joint torques (joint_states.effort)")
    ax.set_xlabel("time (s)")
    ax.set_ylabel(unit_label("torque", joint_names, joint_types, "N m", "N"))
    ax.grid(alpha=0.3)

    ax = axes[1, 1]
    for m, style in ((ct, "-"), (pd, "--")):
        if m is None:
            continue
        ax.semilogy(m.times, np.maximum(m.error_norm, 1e-7), ls=style, lw=1.5, color="k" if m is ct else "tab:red",
                    label=f"{m.label}: RMS {m.rms_total:.1e} {m.unit}, max {m.max_error:.1e} {m.unit}")
    ax.set_title("tracking error |q_d - q| of the " + ("revolute joints" if ct.unit == "rad" else "joints"))
    ax.set_xlabel("time (s)")
    ax.set_ylabel(f"error ({ct.unit})")
    ax.grid(alpha=0.3, which="both")
    top = max(float(np.nanmax(m.error_norm)) for m in metrics if m is not None)
    ax.set_ylim(1e-6, max(10 * top, 1e-3))
    ax.legend(loc="lower right", fontsize=10, framealpha=0.9)

    handles = [plt.Line2D([], [], color=colors[j % 10], lw=2) for j in range(n)]
    fig.legend(handles, joint_names, loc="lower center", ncol=min(n, 8), fontsize=10, frameon=False)
    fig.tight_layout(rect=(0, 0.04, 1, 0.97))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path
