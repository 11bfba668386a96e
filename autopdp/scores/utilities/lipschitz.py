"""Lipschitz-boundedness utility (AutoPDP paper, section 2.2, eq. 7).

``g`` is the fit to the PD whose slope between adjacent grid points is at most
``l`` in absolute value, under the weights and loss the score is measured with
(eq. 5), so ``g`` is the bounded curve with the smallest score::

    minimise  sum_i w_i (f_i - g_i)**2      (loss "l2"; sum_i w_i |f_i - g_i| for "l1")
    s.t.      |g_{i+1} - g_i| <= l * (x_{i+1} - x_i)

Grid points without data (``w_i = 0``) do not count in the score; in the fit
they get a weight of ``1e-9`` times the largest weight, so ``g`` there is
unique and as close to ``f`` as the bounds allow, at a cost to the score of
that relative order (far below the solver's tolerance).

For a 2D surface the bound holds along both grid axes (each axis with its own
feature's ``l``).  The problem is solved with cvxpy: it is built once per grid
shape with ``Parameter``s for the PD and the bounds (a DPP problem, checked),
cached, and re-solved by setting the parameters' values.  Clarabel solves it;
OSQP is the fallback; when both fail (cvxpy ``SolverError``, or a status other
than optimal) the score is "n/a" with each solver's error or status.  Any
other error is a bug and is not caught here (see :mod:`autopdp.scores.failures`).  A PD that already satisfies the bounds is its own fit (score 0) and
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
from scipy.optimize import lsq_linear

from .base import UtilityScore, axis_positions, not_applicable, relative_to_range, standard_utility
from .where import steepest_step

__all__ = ["LipschitzSolveError", "lipschitz_fit", "score_lipschitz", "default_bound", "fit_weights",
           "fast_lipschitz_fit_1d"]

EMPTY_WEIGHT = 1e-9

UTILITY = "lipschitz"
SOLVERS = (
    ("CLARABEL", {"tol_gap_abs": 1e-10, "tol_gap_rel": 1e-10, "tol_feas": 1e-10}),
    ("OSQP", {"eps_abs": 1e-9, "eps_rel": 1e-9, "polishing": True, "max_iter": 50000}),
)
_OK = ("optimal", "optimal_inaccurate")


class LipschitzSolveError(RuntimeError):
    """Both solvers failed on a Lipschitz fit; the message says how."""


class _Problem:
    """A cached, parameterised (DPP) Lipschitz fit for one grid shape and loss.

    The weighted residual is written ``s * g - s f`` with ``s`` (the root of the
    weights for L2, the weights for L1) and ``s f`` two parameters, which keeps
    the problem DPP (a parameter times ``g - f`` would not be).
    """

    def __init__(self, shape: tuple[int, ...], loss: str = "l2"):
        import cvxpy as cp

        self.shape = shape
        self.loss = loss
        self.s = cp.Parameter(shape, nonneg=True)
        self.sf = cp.Parameter(shape)
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
        residual = cp.multiply(self.s, self.g) - self.sf
        objective = cp.sum(cp.abs(residual)) if loss == "l1" else cp.sum_squares(residual)
        self.problem = cp.Problem(cp.Minimize(objective), constraints)
        if not self.problem.is_dcp(dpp=True):  # pragma: no cover - a programming error
            raise AssertionError("the Lipschitz problem must be DPP so it can be re-solved cheaply")
        self.lock = threading.Lock()

    def solve(self, f: np.ndarray, w: np.ndarray, bounds: list[np.ndarray | None]) -> tuple[np.ndarray, str]:
        from cvxpy.error import SolverError

        with self.lock:
            s = w if self.loss == "l1" else np.sqrt(w)
            self.s.value = s
            self.sf.value = s * f
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


_CACHE: dict[tuple, _Problem] = {}
_CACHE_LOCK = threading.Lock()


def _problem(shape: tuple[int, ...], loss: str = "l2") -> _Problem:
    key = shape if loss == "l2" else (shape, loss)
    with _CACHE_LOCK:
        if key not in _CACHE:
            _CACHE[key] = _Problem(shape, loss)
        return _CACHE[key]


def fit_weights(weights, shape) -> np.ndarray:
    """The weights of the fit: the score's weights scaled to a largest weight of 1, empty points at
    :data:`EMPTY_WEIGHT` (all ones without weights or without any data)."""
    if weights is None:
        return np.ones(shape)
    w = np.asarray(weights, dtype=float).reshape(shape)
    w = np.where(np.isfinite(w) & (w > 0), w, 0.0)
    top = float(w.max()) if w.size else 0.0
    if top <= 0:
        return np.ones(shape)
    return np.maximum(w / top, EMPTY_WEIGHT)


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


def lipschitz_fit(f: np.ndarray, positions: list[np.ndarray], slopes: list[float], weights=None,
                  loss: str = "l2") -> tuple[np.ndarray, str]:
    """Fit of ``f`` with slopes bounded by ``slopes`` along each axis (eq. 7), minimising the
    ``weights``-weighted ``loss`` (see module docs; without weights, plain least squares).

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
    g, solver = _problem(f.shape, loss).solve((f - centre) / scale, fit_weights(weights, f.shape), scaled)
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
        g, how = lipschitz_fit(f, positions, slopes, weights=weights, loss=loss)
    except LipschitzSolveError as exc:
        return not_applicable(UTILITY, str(exc), target)
    value = standard_utility(f, g, weights, loss)
    if not np.isfinite(value):
        return not_applicable(UTILITY, "no data near any grid point.", target)
    details = {"bound": [float(s) for s in slopes], "solved_by": how, "relative": relative_to_range(value, f)}
    where = steepest_step(result, f, positions[0], float(slopes[0])) if result.ndim == 1 and value > 0 else None
    if where is not None:
        details["where"] = where  # the step whose slope most exceeds the bound (1D)
    return UtilityScore(utility=UTILITY, value=value, target=target, comparison=g, details=details)


def fast_lipschitz_fit_1d(f: np.ndarray, x: np.ndarray, bound: float, w: np.ndarray | None = None,
                          loss: str = "l2") -> np.ndarray:
    """Fit of a 1D curve with |g_{i+1} - g_i| <= bound (x_{i+1} - x_i) minimising the ``w``-weighted ``loss``.

    The same problem as :func:`autopdp.scores.utilities.lipschitz_fit` (eq. 7, with the same fit
    weights :func:`fit_weights`) written in the first value
    and the increments ``z`` (``g = A z``, ``A`` lower-triangular ones): for L2 a bounded least-squares
    problem in ``sqrt(w) A z ~ sqrt(w) f`` (``scipy.optimize.lsq_linear``), for L1 a linear
    program (``scipy.optimize.linprog``, HiGHS); used for the many refits of the noise test.
    """
    f = np.asarray(f, dtype=float)
    k = f.size
    lim = bound * np.diff(np.asarray(x, dtype=float))
    if np.all(np.abs(np.diff(f)) <= lim * (1 + 1e-12) + 1e-15):
        return f.copy()
    v = fit_weights(w, f.shape)
    A = np.tril(np.ones((k, k)))
    lb = np.concatenate([[-np.inf], -lim])
    ub = np.concatenate([[np.inf], lim])
    if loss == "l1":
        return A @ _l1_bounded_increments(A, f, v, lb, ub)
    s = np.sqrt(v)
    z = lsq_linear(A * s[:, None], f * s, bounds=(lb, ub), method="bvls").x
    return A @ z


def _l1_bounded_increments(A, f, v, lb, ub) -> np.ndarray:
    """``argmin_z sum v |A z - f|`` within ``lb <= z <= ub``: the LP over (z, t) with ``-t <= A z - f <= t``."""
    from scipy.optimize import linprog

    k = f.size
    eye = np.eye(k)
    res = linprog(np.concatenate([np.zeros(k), v]),
                  A_ub=np.block([[A, -eye], [-A, -eye]]), b_ub=np.concatenate([f, -f]),
                  bounds=list(zip(lb, ub)) + [(0, None)] * k, method="highs")
    if res.status != 0:  # pragma: no cover - the LP is always feasible and bounded
        raise RuntimeError(f"Lipschitz L1 refit failed: {res.message}")
    return res.x[:k]
