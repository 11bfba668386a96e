"""Lipschitz-boundedness utility (AutoPDP paper, section 2.2, eq. 7).

``g`` is the least-squares fit to the PD whose slope between adjacent grid
points is at most ``l`` in absolute value::

    minimise  sum_i (f_i - g_i)**2
    s.t.      |g_{i+1} - g_i| <= l * (x_{i+1} - x_i)

For a 2D surface the bound holds along both grid axes (each axis with its own
feature's ``l``).  The problem is solved with cvxpy: it is built once per grid
shape with ``Parameter``s for the PD and the bounds (a DPP problem, checked),
cached, and re-solved by setting the parameters' values.  Clarabel solves it;
OSQP is the fallback; when both fail (cvxpy ``SolverError``, or a status other
than optimal) the score is "n/a" with each solver's error or status.  Any
other error is a bug and is not caught here (see :mod:`autopdp.stage_failures`).  A PD that already satisfies the bounds is its own fit (score 0) and
needs no solve.

The bound ``l``
    Per feature in the feature's units (prediction per unit of x), from
    ``AuditConfig.lipschitz``.  Otherwise the default is relative to the PD's
    own average slope: ``l = lipschitz_scale * (max f - min f) / (x_max - x_min)``
    with ``lipschitz_scale = 3``: a stretch of the curve is abrupt when it is
    more than three times as steep as the curve's overall change spread evenly
    over the grid.  A straight line has the same slope everywhere, equal to
    its average slope, so it is never abrupt whatever its steepness; a step
    that makes its whole change between two of 20 grid points is.  Ordered
    categoricals use level ranks 0, 1, 2, ... as x.  (Earlier versions used
    ``2 * sd(predictions) / span``, which flagged any straight line whose
    feature explains more than about 40% of the prediction variance.)
"""

from __future__ import annotations

import threading

import numpy as np

from .base import UtilityScore, axis_positions, not_applicable, relative_to_range, standard_utility

__all__ = ["LipschitzSolveError", "lipschitz_fit", "score_lipschitz", "default_bound"]

UTILITY = "lipschitz"
SOLVERS = (
    ("CLARABEL", {"tol_gap_abs": 1e-10, "tol_gap_rel": 1e-10, "tol_feas": 1e-10}),
    ("OSQP", {"eps_abs": 1e-9, "eps_rel": 1e-9, "polishing": True, "max_iter": 50000}),
)
_OK = ("optimal", "optimal_inaccurate")


class LipschitzSolveError(RuntimeError):
    """Both solvers failed on a Lipschitz fit; the message says how."""


class _Problem:
    """A cached, parameterised (DPP) Lipschitz fit for one grid shape."""

    def __init__(self, shape: tuple[int, ...]):
        import cvxpy as cp

        self.shape = shape
        self.f = cp.Parameter(shape)
        self.g = cp.Variable(shape)
        self.bounds = []
        constraints = []
        for axis in range(len(shape)):
            if shape[axis] < 2:
                self.bounds.append(None)
                continue
            bshape = tuple(s - 1 if a == axis else s for a, s in enumerate(shape))
            b = cp.Parameter(bshape, nonneg=True)
            self.bounds.append(b)
            diff = self.g[1:] - self.g[:-1] if axis == 0 else self.g[:, 1:] - self.g[:, :-1]
            constraints += [diff <= b, -diff <= b]
        self.problem = cp.Problem(cp.Minimize(cp.sum_squares(self.g - self.f)), constraints)
        if not self.problem.is_dcp(dpp=True):  # pragma: no cover - a programming error
            raise AssertionError("the Lipschitz problem must be DPP so it can be re-solved cheaply")
        self.lock = threading.Lock()

    def solve(self, f: np.ndarray, bounds: list[np.ndarray | None]) -> tuple[np.ndarray, str]:
        from cvxpy.error import SolverError

        with self.lock:
            self.f.value = f
            for p, b in zip(self.bounds, bounds):
                if p is not None:
                    p.value = b
            statuses = []
            for solver, options in SOLVERS:
                # Problem.solve's three steps, without the last (unpack_results), which warns about
                # an inaccurate solution: silencing that warning would change the process's
                # warning filters, which is not safe while another thread runs (the audit's trust
                # stage); the status is read here instead.
                try:
                    data, chain, inverse = self.problem.get_problem_data(solver, enforce_dpp=True, solver_opts=options)
                    raw = chain.solve_via_data(self.problem, data, solver_opts=options)
                    solution = chain.invert(raw, inverse)
                except SolverError as exc:  # the solver failed (or is not installed): try the next one
                    statuses.append(f"{solver}: SolverError: {exc}")
                    continue
                g = solution.primal_vars.get(self.g.id) if solution.status in _OK else None
                if g is not None:
                    return np.asarray(g, dtype=float).reshape(self.shape), solver
                statuses.append(f"{solver}: {solution.status}")
        raise LipschitzSolveError("Lipschitz fit failed (" + "; ".join(statuses) + ")")


_CACHE: dict[tuple[int, ...], _Problem] = {}
_CACHE_LOCK = threading.Lock()


def _problem(shape: tuple[int, ...]) -> _Problem:
    with _CACHE_LOCK:
        if shape not in _CACHE:
            _CACHE[shape] = _Problem(shape)
        return _CACHE[shape]


def _axis_bounds(shape, positions: list[np.ndarray], slopes: list[float]) -> list[np.ndarray | None]:
    out = []
    for axis, (x, l) in enumerate(zip(positions, slopes)):
        if shape[axis] < 2:
            out.append(None)
            continue
        dx = np.diff(x)
        b = l * dx
        if len(shape) == 2:
            b = b[:, None] * np.ones((1, shape[1])) if axis == 0 else np.ones((shape[0], 1)) * b[None, :]
        out.append(np.asarray(b, dtype=float))
    return out


def lipschitz_fit(f: np.ndarray, positions: list[np.ndarray], slopes: list[float]) -> tuple[np.ndarray, str]:
    """Least-squares fit of ``f`` with slopes bounded by ``slopes`` along each axis (eq. 7).

    Returns the fit and how it was obtained (``"feasible"`` when ``f`` already
    satisfies the bounds, else the solver's name).  Raises
    :class:`LipschitzSolveError` when every solver fails.
    """
    f = np.asarray(f, dtype=float)
    bounds = _axis_bounds(f.shape, positions, slopes)
    if all(
        b is None or np.all(np.abs(np.diff(f, axis=a)) <= b * (1 + 1e-12) + 1e-15)
        for a, b in enumerate(bounds)
    ):
        return f.copy(), "feasible"
    # centre and scale for the solver's conditioning; the fit scales back exactly
    centre = float(f.mean())
    scale = float(np.abs(f - centre).max()) or 1.0
    scaled = [None if b is None else b / scale for b in bounds]
    g, solver = _problem(f.shape).solve((f - centre) / scale, scaled)
    return g * scale + centre, solver


def default_bound(positions: np.ndarray, pd_range: float, lipschitz_scale: float) -> float:
    """The default slope bound for one feature: ``lipschitz_scale`` times the PD's average slope.

    ``pd_range`` is ``max f - min f`` of the PD being scored; the bound is
    ``lipschitz_scale * pd_range / (x_max - x_min)`` (see module docs).  A flat
    PD gets bound 0 only in name: it is its own fit and scores 0.
    """
    span = float(positions[-1] - positions[0]) if positions.size > 1 else 0.0
    if span <= 0 or not np.isfinite(pd_range):
        return float("inf")
    return lipschitz_scale * float(pd_range) / span


def score_lipschitz(result, *, target_index: int, weights: np.ndarray, slopes: list[float], loss: str = "l2") -> UtilityScore:
    """Score how far a PD is from its best slope-bounded fit.

    ``slopes`` holds the bound l per feature of the result (feature units).
    """
    target = result.targets[target_index]
    positions = []
    for axis in range(result.ndim):
        x = axis_positions(result, axis)
        if x is None:
            return not_applicable(
                UTILITY, f"{result.features[axis]!r} is an unordered categorical: a slope needs an order.", target
            )
        positions.append(x)
    if all(len(x) < 2 for x in positions):
        return not_applicable(UTILITY, "the grid has a single point: there is no slope to bound.", target)
    f = np.asarray(result.average[target_index], dtype=float)
    try:
        g, how = lipschitz_fit(f, positions, slopes)
    except LipschitzSolveError as exc:
        return not_applicable(UTILITY, str(exc), target)
    value = standard_utility(f, g, weights, loss)
    if not np.isfinite(value):
        return not_applicable(UTILITY, "no data near any grid point.", target)
    return UtilityScore(
        utility=UTILITY, value=value, target=target, comparison=g,
        details={"bound": [float(s) for s in slopes], "solved_by": how, "relative": relative_to_range(value, f)},
    )
