"""Model adapters: turn any fitted model into ``f(X) -> (n_rows, n_targets)``.

Responses
---------
``"auto"``
    ``predict_proba`` for a classifier that has it, else ``decision_function``,
    else crisp labels; ``predict`` for a regressor; the call itself for a plain
    callable.  An object that is not a scikit-learn estimator but has ``predict`` or
    ``predict_proba`` (a duck-typed model) is used the same way.

A model's kind
--------------
A model is a classifier when it says so (scikit-learn's estimator type, ``_estimator_type``),
or, when it declares no type, when it offers ``predict_proba`` (a model's probabilities are
class probabilities) or names its classes (``classes_``).  A model that declares another type
(a regressor, a mixture model) is not one, unless ``response="predict_proba"`` is asked for:
the explained probabilities then make it one.  Every response the model has a method for is
accepted.

Its classes are ``classes_`` when it has them.  Without ``classes_`` they are the positions of
its ``predict_proba`` columns, ``0 .. k-1`` (``0, 1`` for a binary model, whose positive class
is ``1``): a model trained on a target encoded as ``0 .. k-1`` (pygam's LogisticGAM requires
``y`` in {0, 1}) labels its columns so, and the audit checks that the observed ``y`` holds
those labels (``0``/``1``, ``0.0``/``1.0`` or ``False``/``True`` for a binary model).  A
``predict_proba`` that returns one probability per row (pygam) is ``P(class 1)`` of a binary
model; ``P(class 0)`` is one minus it.
``"predict_proba"``
    One column per class.  A binary classifier keeps only the positive class
    ``classes_[1]`` (as scikit-learn does); a multiclass one keeps every class.
``"decision_function"``
    One column for a binary classifier (labelled ``classes_[1]``), one per
    class otherwise.
``"predict"``
    For a regressor, the prediction (one column per output).  For a classifier
    these are crisp labels: the response is the 0/1 indicator of each class, so
    the PD is the proportion of rows predicted as each class at each grid
    value (the crisp-classifier PD); multiply by the rows for counts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InputError, InputTypeError

__all__ = ["ResponseAdapter", "make_adapter"]

RESPONSES = ("auto", "predict_proba", "decision_function", "predict")


def _to_python(v):
    return v.item() if isinstance(v, np.generic) else v


def _is_sklearn_estimator(model) -> bool:
    """A scikit-learn estimator or Pipeline, or a model built on scikit-learn's base classes (XGBoost's and
    LightGBM's scikit-learn wrappers): scikit-learn's own checks (fitted, classifier) apply to it."""
    if isinstance(model, type):
        return False
    try:
        from sklearn.base import BaseEstimator
    except ImportError:  # pragma: no cover - scikit-learn is a dependency
        return False
    return isinstance(model, BaseEstimator)


def _is_duck_model(model) -> bool:
    """Any other object with ``predict`` or ``predict_proba`` (a duck-typed model): used like a callable."""
    if isinstance(model, type) or _is_sklearn_estimator(model):
        return False
    return callable(getattr(model, "predict", None)) or callable(getattr(model, "predict_proba", None))


def _valid_classes(model):
    """The model's ``classes_`` as an array, or None when it has none (or not a list of two or more)."""
    classes = getattr(model, "classes_", None)
    if classes is None or np.ndim(classes) != 1 or len(classes) < 2:
        return None
    return np.asarray(classes)


def _declared_type(model) -> str | None:
    """The estimator type the model declares (scikit-learn's tags or ``_estimator_type``), None without one."""
    if _is_sklearn_estimator(model):
        try:
            from sklearn.utils import get_tags

            return get_tags(model).estimator_type
        except (ImportError, AttributeError, TypeError, ValueError):  # older scikit-learn
            pass
    declared = getattr(model, "_estimator_type", None)
    return declared if isinstance(declared, str) else None


def is_classifier_model(model, response: str = "auto") -> bool:
    """Whether ``model`` is explained as a classifier (see "A model's kind" above)."""
    if response == "predict_proba" and callable(getattr(model, "predict_proba", None)):
        return True
    declared = _declared_type(model)
    if declared is not None:
        return declared == "classifier"
    if callable(getattr(model, "predict_proba", None)):
        return True
    return _valid_classes(model) is not None and any(
        callable(getattr(model, m, None)) for m in ("decision_function", "predict"))


def _probe_columns(model, probe) -> int:
    """How many classes ``predict_proba`` scores on the probe rows (2 when it returns one column or no probe)."""
    if probe is None or not callable(getattr(model, "predict_proba", None)):
        return 2
    try:
        out = np.asarray(model.predict_proba(probe))
    except Exception:  # noqa: BLE001 - the probe in _finish reports the model's own error
        return 2
    return 2 if out.ndim < 2 or out.shape[1] <= 2 else int(out.shape[1])


def _classes_of(model, probe) -> tuple[np.ndarray, bool]:
    """``(classes, inferred)``: ``classes_``, else ``0 .. k-1`` for the ``k`` columns of ``predict_proba``."""
    classes = _valid_classes(model)
    if classes is not None:
        return classes, False
    return np.arange(_probe_columns(model, probe)), True


def check_fitted(model) -> None:
    """Raise a clear ``ValueError`` when a scikit-learn model is not fitted."""
    if not _is_sklearn_estimator(model):
        return
    from sklearn.exceptions import NotFittedError
    from sklearn.utils.validation import check_is_fitted

    try:
        check_is_fitted(model)
    except NotFittedError:
        raise InputError(
            f"The model ({type(model).__name__}) is not fitted: call model.fit(X, y) before passing it to autopdp."
        ) from None
    except TypeError:
        # not an sklearn estimator after all (duck-typed object): nothing to check
        return


@dataclass(frozen=True, eq=False)
class ResponseAdapter:
    """A callable that maps rows to the explained response.

    Attributes
    ----------
    response : str
        The resolved response: ``predict_proba``, ``decision_function``,
        ``predict``, ``crisp`` (labels of a classifier) or ``callable``.
    targets : tuple
        One label per output column (class labels or output names).
    """

    model: Any
    response: str
    targets: tuple
    columns: np.ndarray | None  # which columns of the raw output to keep
    classes: np.ndarray | None = None  # a classifier's classes (``classes_`` or inferred)
    is_classifier: bool = False
    inferred_classes: bool = False  # the model has no classes_: classes are its predict_proba columns 0 .. k-1

    def raw(self, X) -> np.ndarray:
        if self.response == "callable":
            return np.asarray(self.model(X))
        return np.asarray(getattr(self.model, "predict" if self.response == "crisp" else self.response)(X))

    def __call__(self, X) -> np.ndarray:
        out = self.raw(X)
        if self.response == "crisp":
            labels = out.ravel()
            onehot = (labels[:, None] == self.classes[None, :]).astype(np.float64)
            return onehot[:, self.columns]
        out = np.asarray(out, dtype=np.float64)
        if self.response == "predict_proba" and self.is_classifier and len(self.classes) == 2 and (
                out.ndim == 1 or (out.ndim == 2 and out.shape[1] == 1)):
            p1 = out.reshape(-1)  # one probability per row (pygam): P(classes[1]) of a binary model
            out = np.column_stack([1.0 - p1, p1])
        if out.ndim == 1:
            out = out[:, None]
        elif out.ndim > 2:
            raise InputError(f"The model returned an array with {out.ndim} dimensions; expected 1 or 2.")
        if self.columns is not None:
            out = out[:, self.columns]
        return out


def _pick(labels: list, target, what: str) -> np.ndarray:
    if target is None:
        return np.arange(len(labels))
    wanted = list(target) if isinstance(target, (list, tuple, np.ndarray)) else [target]
    idx = []
    for t in wanted:
        matches = [i for i, lab in enumerate(labels) if lab == t or str(lab) == str(t)]
        if not matches:
            raise InputError(f"Unknown target {t!r}: the model's {what} are {labels!r}.")
        idx.append(matches[0])
    return np.asarray(idx)


def make_adapter(model, response: str = "auto", target=None, probe=None, missing=None) -> ResponseAdapter:
    """Resolve ``response`` and ``target`` for ``model`` and check it predicts.

    Parameters
    ----------
    model : estimator, duck-typed model or callable
        A fitted scikit-learn estimator or Pipeline; any other object with ``predict`` or
        ``predict_proba`` (its kind and classes as "A model's kind" in this module says); or a
        function ``f(X)``.
    response : {"auto", "predict_proba", "decision_function", "predict"}
    target : label, int or list, optional
        Class label(s) for classifiers, output index/indices for multi-output
        regressors and callables.
    probe : DataFrame or ndarray, optional
        A few rows; the adapter is called on them so a model that fails to
        predict is reported here with its own error message.
    missing : mapping of column name -> description, optional
        The columns of the data with missing values (e.g. ``{"age": "12 of 300 rows"}``): a
        model that fails on the probe because it cannot take NaN gets an error naming them
        (by default the probe's columns with missing values).
    """
    if response not in RESPONSES:
        raise InputError(f"response={response!r} is not supported; use one of {', '.join(RESPONSES)}.")
    duck = _is_duck_model(model)
    if not duck and not _is_sklearn_estimator(model):
        if not callable(model):
            raise InputTypeError(
                f"model must be a fitted scikit-learn estimator, an object with predict or predict_proba, or a "
                f"callable f(X) -> predictions, got {type(model).__name__}."
            )
        adapter = ResponseAdapter(model=model, response="callable", targets=(), columns=None)
        return _finish(adapter, target, probe, missing)

    if not duck:
        check_fitted(model)
    if response in ("predict_proba", "decision_function", "predict") and not callable(getattr(model, response, None)):
        if response != "predict" and not is_classifier_model(model) and callable(getattr(model, "predict", None)):
            raise InputError(f"response={response!r} is for classifiers; {type(model).__name__} is a regressor "
                             "(it has no such method): use 'predict'.")
        raise InputError(f"The model {type(model).__name__} has no {response} method; choose another response.")
    if is_classifier_model(model, response):
        return _classifier_adapter(model, response, target, probe, missing)
    if response in ("auto", "predict") and callable(getattr(model, "predict", None)):
        adapter = ResponseAdapter(model=model, response="predict", targets=(), columns=None)
    elif response in ("auto", "decision_function") and callable(getattr(model, "decision_function", None)):
        # not a classifier (e.g. an outlier detector): its scores are outputs, like a callable's
        adapter = ResponseAdapter(model=model, response="decision_function", targets=(), columns=None)
    else:
        raise InputError(f"The model {type(model).__name__} has no predict method; choose another response.")
    return _finish(adapter, target, probe, missing)


def _classifier_adapter(model, response, target, probe, missing) -> ResponseAdapter:
    """The adapter of a classifier: its classes (``classes_`` or inferred), the response and the targets."""
    classes, inferred = _classes_of(model, probe)
    labels = [_to_python(c) for c in classes]
    if response == "auto":
        if callable(getattr(model, "predict_proba", None)):
            response = "predict_proba"
        elif callable(getattr(model, "decision_function", None)):
            response = "decision_function"
        else:
            response = "predict"
    common = dict(model=model, classes=classes, is_classifier=True, inferred_classes=inferred)
    if response == "predict":
        cols = _pick(labels, target, "classes")
        adapter = ResponseAdapter(response="crisp", targets=tuple(labels[i] for i in cols), columns=cols, **common)
    elif len(labels) == 2:
        cols = np.array([1]) if target is None else _pick(labels, target, "classes")
        if response == "decision_function":
            if not np.array_equal(cols, [1]):
                raise InputError(
                    f"decision_function of a binary classifier scores the positive class {labels[1]!r} only; "
                    f"use target=None or target={labels[1]!r}, or response='predict_proba'."
                )
            cols = None
        adapter = ResponseAdapter(response=response, columns=cols, **common,
                                  targets=tuple(labels[i] for i in (cols if cols is not None else [1])))
    else:
        cols = _pick(labels, target, "classes")
        adapter = ResponseAdapter(response=response, targets=tuple(labels[i] for i in cols), columns=cols, **common)
    adapter = _finish(adapter, None, probe, missing)
    if inferred and probe is not None:
        _check_inferred(adapter, probe)
    return adapter


def _check_inferred(adapter: ResponseAdapter, probe) -> None:
    """Inferred classes must fit what the model returns: crisp labels among them, one probability per class."""
    out = np.asarray(adapter.raw(probe))
    name, shown = type(adapter.model).__name__, ", ".join(repr(_to_python(c)) for c in adapter.classes)
    if adapter.response == "crisp":
        known = [_to_python(c) for c in adapter.classes]
        odd = [v for v in dict.fromkeys(_to_python(v) for v in out.ravel()) if not _same_label(v, known)]
        if odd:
            raise InputError(
                f"The model {name} has no classes_, so its classes were taken as {shown} (its predict_proba "
                f"columns), but its predict returns {', '.join(repr(v) for v in odd[:5])}: give the model a "
                "classes_ attribute, or use response='predict_proba'."
            )
    elif adapter.response == "predict_proba" and out.ndim == 2 and out.shape[1] != len(adapter.classes) and not (
            len(adapter.classes) == 2 and out.shape[1] == 1):
        raise InputError(f"The model {name}'s predict_proba returned {out.shape[1]} columns on some rows and "
                         f"{len(adapter.classes)} on others.")


def _same_label(value, labels) -> bool:
    """``value`` is one of ``labels``: equal (``True == 1``, ``1.0 == 1``) or the same text."""
    for lab in labels:
        try:
            if value == lab:
                return True
        except (TypeError, ValueError):
            pass
        if str(value) == str(lab):
            return True
    return False


#: How models say they cannot take missing values (scikit-learn: "Input X contains NaN").
_NAN_REFUSAL = re.compile(r"contains NaN|NaN values|missing values|\bNaN\b.*not (supported|allowed)", re.IGNORECASE)


def _probe_missing(probe) -> dict:
    import pandas as pd

    frame = probe if isinstance(probe, pd.DataFrame) else pd.DataFrame(np.asarray(probe))
    cols = frame.columns[frame.isna().any(axis=0).to_numpy()]
    names = [str(c) if isinstance(probe, pd.DataFrame) else f"x{c}" for c in cols]
    return dict.fromkeys(names, "")


def nan_refusal(model, exc: BaseException, missing) -> InputError | None:
    """The one-line error for a model that refused missing values, naming the columns that have them;
    None when ``exc`` is not such a refusal or no column has missing values."""
    if not missing or not isinstance(exc, (ValueError, TypeError)) or not _NAN_REFUSAL.search(str(exc)):
        return None
    shown = [f"{name!r}" + (f" ({what})" if what else "") for name, what in list(missing.items())[:10]]
    more = f" and {len(missing) - 10} more" if len(missing) > 10 else ""
    return InputError(
        f"The model ({type(model).__name__}) cannot take missing values (NaN), and X has them in "
        f"{'column' if len(missing) == 1 else 'columns'} {', '.join(shown)}{more}: impute them in a Pipeline "
        "(e.g. make_pipeline(SimpleImputer(), model), fitted again), use a model that takes NaN "
        "(e.g. HistGradientBoostingClassifier/Regressor), or drop those rows or columns."
    )


def _finish(adapter: ResponseAdapter, target, probe, missing=None) -> ResponseAdapter:
    """Probe the model; name regression outputs and apply an output ``target``."""
    if probe is None:
        return adapter
    try:
        out = adapter.raw(probe)
    except Exception as exc:  # noqa: BLE001 - the model's own code may raise anything: shown to the user at the entry
        refusal = nan_refusal(adapter.model, exc, _probe_missing(probe) if missing is None else missing)
        if refusal is not None:
            raise refusal from None
        raise InputError(
            f"The model raised an error when predicting on X: {type(exc).__name__}: {str(exc).rstrip('.')}. "
            f"Check that X has the columns and types the model was trained on."
        ) from exc
    out = np.asarray(out)
    if out.shape[0] != probe.shape[0]:
        raise InputError(
            f"The model returned {out.shape[0]} predictions for {probe.shape[0]} rows; it must return one per row."
        )
    if adapter.targets:  # classifier: targets already resolved
        return adapter
    if out.dtype.kind not in "biuf":
        raise InputError(
            f"The model returned non-numeric predictions (dtype {out.dtype}); for a classifier use an sklearn "
            f"estimator with classes_, or wrap it to return numbers."
        )
    n_out = 1 if out.ndim == 1 else out.shape[1]
    names = ["prediction"] if out.ndim == 1 else [f"output_{j}" for j in range(n_out)]
    if target is None:
        cols = None if out.ndim == 1 else np.arange(n_out)
        targets = tuple(names)
    else:
        wanted = list(target) if isinstance(target, (list, tuple, np.ndarray)) else [target]
        cols = []
        for t in wanted:
            if isinstance(t, (int, np.integer)) and 0 <= int(t) < n_out:
                cols.append(int(t))
            elif t in names:
                cols.append(names.index(t))
            else:
                raise InputError(f"Unknown target {t!r}: the model has {n_out} output(s) ({', '.join(names)}).")
        targets = tuple(names[c] for c in cols)
        cols = np.asarray(cols) if out.ndim == 2 else None
    return ResponseAdapter(model=adapter.model, response=adapter.response, targets=targets, columns=cols)

