"""What the data can and cannot see, in words: per link, which of its ten inertial parameters
the torques determine alone, which only in sums with other parameters (the base parameters),
and which not at all (they keep the URDF's values).

A parameter is *not seen* when its regressor column is zero for every motion (a link's mass
when its joint's axis is vertical and nothing after it moves it up or down...), *seen in sums*
when its column is a combination of others (only the sum is identified), *seen alone* when it
is a base parameter by itself; its 2-sigma range then says how well.
"""

import numpy as np

from .identify import structural_base
from .parameters import PARAMETERS_PER_BODY

WORDS = {"m": "mass", "mx": "centre of mass x", "my": "centre of mass y", "mz": "centre of mass z",
         "Ixx": "inertia xx", "Ixy": "inertia xy", "Ixz": "inertia xz", "Iyy": "inertia yy", "Iyz": "inertia yz",
         "Izz": "inertia zz"}


def classify(estimate):
    """{unknown index: (kind, 2-sigma relative, base row)}: kind 'alone' (a base parameter by itself, at
    that row), 'sum' or 'unseen' (module docstring)."""
    independent, dependent, K = structural_base(estimate.problem)
    status = {}
    for row, column in enumerate(independent):
        if not np.any(K[row]):
            relative = 2 * estimate.base_std[row] / max(abs(estimate.base_ols[row]), 1e-300)
            status[int(column)] = ("alone", relative, row)
        else:
            status[int(column)] = ("sum", None, None)
    for k, column in enumerate(dependent):
        status[int(column)] = ("sum", None, None) if np.any(K[:, k]) else ("unseen", None, None)
    return status


def visibility_lines(estimate):
    """A summary line, then one line per link (or the payload)."""
    problem = estimate.problem
    status = classify(estimate)
    model = problem.model
    payload = problem.blocks != len(model.body_joints)
    lines, unseen_masses, unseen = [], [], 0
    for body in range(problem.blocks):
        owner = "the payload" if payload else f"the link moved by {model.body_joints[body]}"
        groups = {"alone": [], "sum": [], "unseen": []}
        for k in range(PARAMETERS_PER_BODY):
            column = PARAMETERS_PER_BODY * body + k
            kind, relative, row = status[column]
            word = WORDS[problem.names[column].split()[0]]
            groups[kind].append(word if kind != "alone" else f"{word} (+-{100 * relative:.2g} %)" if relative < 1
                                else f"{word} (near 0: +-{2 * estimate.base_std[row]:.2g})")
        unseen += len(groups["unseen"])
        if "mass" in groups["unseen"]:
            unseen_masses.append(owner)
        parts = [f"{owner}: "]
        if groups["alone"]:
            parts.append("seen alone: " + ", ".join(groups["alone"]) + "; ")
        if groups["sum"]:
            parts.append("seen only in sums with other parameters: " + ", ".join(groups["sum"]) + "; ")
        if groups["unseen"]:
            parts.append("not seen at all (the URDF's values kept): " + ", ".join(groups["unseen"]))
        lines.append("".join(parts).rstrip("; "))
    total = PARAMETERS_PER_BODY * problem.blocks
    summary = (f"what the data see: {total - unseen} of {total} inertial parameters show in the torques (alone or in "
               f"sums); the other {unseen} keep the URDF's values")
    if unseen_masses:
        summary += f", among them the mass of {', '.join(unseen_masses[:3])}{' ...' if len(unseen_masses) > 3 else ''}"
    return [summary + " (per link: parameters.txt)", *lines]
