"""ONNX models read as data (issue 56): the file is bounded and checked before onnxruntime builds a session.

An ONNX file is a protobuf graph, not code: no pickle and no trusted types.  Before onnxruntime sees it, the file
is read only up to ``max_mb`` (``--max-model-mb``), parsed by ``onnx`` (without its external data), and checked:

* every operator set and every node is of a standard domain (``""``/``ai.onnx`` or ``ai.onnx.ml``), and the file
  holds no local functions: a custom domain names code outside the file;
* the graph (with its subgraphs) has at most :data:`MAX_NODES` nodes, and its initializers (the weights) at most
  ``max_mb`` in all, counted from their declared shapes;
* an initializer kept in an external file names a file inside the model's own folder (no absolute path, no
  ``..``), of at most the same size;
* ``onnx.checker`` accepts the graph (every operator known to its domain's schema).

The model then runs with onnxruntime on the CPU.  Its inputs are mapped by name
(:class:`OnnxModel`): a single 2-D input takes the data's feature columns (in the order the file's metadata
``feature_names`` gives, else the data's own order, checked against the input's width); several inputs (skl2onnx's
per-column inputs) take the columns of their names.  A classifier's probability output (a ZipMap's list of
dictionaries, or a tensor) is its ``predict_proba``, its classes the labels the file declares; a regressor's
output is its ``predict``.

A graph that is one tree ensemble (``TreeEnsembleRegressor``/``TreeEnsembleClassifier`` of ``ai.onnx.ml``, or
``TreeEnsemble``) on the single input, with only ``Cast``, ``Identity`` and ``ZipMap`` around it, also gives its
trees' attributes (:attr:`OnnxModel.tree_ensemble`) for the exact tree path
(:mod:`autopdp.pd.tree.onnx_trees`), which checks them before any compiled code reads them.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from ..errors import InputError

__all__ = ["load_onnx", "OnnxModel", "MAX_NODES", "ALLOWED_DOMAINS"]

#: the operator domains an ONNX model may use: the standard operators and the classical-ML ones
ALLOWED_DOMAINS = ("", "ai.onnx", "ai.onnx.ml")
#: the most nodes (with subgraphs) a model's graph may have
MAX_NODES = 1_000_000
_EXTRA = "pip install 'autopdp[onnx]'"


def load_onnx(path, max_mb: float):
    """An :class:`OnnxModel` from ``path`` (``.onnx``), checked as the module says; :class:`InputError` naming
    the problem otherwise."""
    try:
        import onnx
        import onnxruntime as ort
    except ImportError:
        raise InputError(f"reading an ONNX model needs onnx and onnxruntime: {_EXTRA}.") from None
    p = Path(path)
    limit = int(max_mb * 2 ** 20)
    if p.stat().st_size > limit:
        raise InputError(f"model file {str(p)!r} is {p.stat().st_size / 2 ** 20:,.1f} MB, over the {max_mb:,g} MB "
                         "limit for a model; if it is really that large, rerun with --max-model-mb.")
    data = p.read_bytes()
    try:
        proto = onnx.load_model_from_string(data)  # never reads external data files
    except Exception as exc:  # noqa: BLE001 - protobuf's DecodeError and onnx's own: any is a file we cannot read
        raise InputError(f"cannot read model file {str(p)!r} as ONNX ({type(exc).__name__}): a truncated or "
                         "damaged file, or not an ONNX model.") from None
    external = _check_graph(proto, p, limit)
    try:
        onnx.checker.check_model(proto)
    except Exception as exc:  # noqa: BLE001 - onnx.checker.ValidationError and the C++ errors it wraps
        raise InputError(f"model file {str(p)!r} is not a valid ONNX model: {_first_line(exc)}.") from None
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1  # the audit's own threads split the rows
    try:
        session = ort.InferenceSession(str(p) if external else data, sess_options=options,
                                       providers=["CPUExecutionProvider"])
    except Exception as exc:  # noqa: BLE001 - onnxruntime raises its own Fail/InvalidGraph/NotImplemented
        raise InputError(f"onnxruntime cannot run model file {str(p)!r}: {_first_line(exc)}.") from None
    meta = {m.key: m.value for m in proto.metadata_props}
    provenance = {"format": "onnx", "sha256": hashlib.sha256(data).hexdigest(), "producer": proto.producer_name,
                  "producer_version": proto.producer_version, "ir_version": int(proto.ir_version),
                  "opsets": {o.domain or "ai.onnx": int(o.version) for o in proto.opset_import}}
    model = OnnxModel(session, _class_labels(proto), meta.get("feature_names"), provenance, p.name)
    model.tree_ensemble, model.tree_unavailable = _tree_ensemble(proto)
    return model


def _first_line(exc) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:300]


def _nodes(graph):
    """Every node of ``graph`` and of its subgraphs (If, Loop, Scan bodies)."""
    for node in graph.node:
        yield node
        for attr in node.attribute:
            if attr.HasField("g"):
                yield from _nodes(attr.g)
            for g in attr.graphs:
                yield from _nodes(g)


def _check_graph(proto, p: Path, limit: int) -> bool:
    """The domain, size and external-data checks of the module docs; True when initializers are external."""
    where = f"model file {str(p)!r}"
    for o in proto.opset_import:
        if o.domain not in ALLOWED_DOMAINS:
            raise InputError(f"{where} uses the operator domain {o.domain!r}; only the standard domains "
                             f"({', '.join(repr(d) for d in ALLOWED_DOMAINS)}) are read.")
    if len(proto.functions):
        raise InputError(f"{where} defines local functions ({proto.functions[0].name!r}); only the standard "
                         "operators are read.")
    count = 0
    for node in _nodes(proto.graph):
        count += 1
        if node.domain not in ALLOWED_DOMAINS:
            raise InputError(f"{where} has a node {node.op_type!r} of the domain {node.domain!r}; only the "
                             f"standard domains ({', '.join(repr(d) for d in ALLOWED_DOMAINS)}) are read.")
        if count > MAX_NODES:
            raise InputError(f"{where} has more than {MAX_NODES:,} nodes.")
    total, external = 0, False
    for t in proto.graph.initializer:
        total += _tensor_bytes(t)
        if t.data_location == 1:  # TensorProto.EXTERNAL
            external = True
            total += _external_bytes(t, p)
        if total > limit:
            raise InputError(f"{where}'s initializers (its weights) exceed the {limit / 2 ** 20:,g} MB limit for a "
                             "model; if it is really that large, rerun with --max-model-mb.")
    return external


def _tensor_bytes(t) -> int:
    """An initializer's size from its declared shape (the element size of its type, 8 bytes where unknown)."""
    n = 1
    for d in t.dims:
        if d < 0:
            raise InputError(f"initializer {t.name!r} declares a negative dimension {d}.")
        n *= int(d)
    size = {1: 4, 2: 1, 3: 1, 4: 2, 5: 2, 6: 4, 7: 8, 9: 1, 10: 2, 11: 8, 12: 4, 13: 8, 16: 2}.get(int(t.data_type), 8)
    return n * size


def _external_bytes(t, p: Path) -> int:
    """The size of an initializer's external file, which must lie in the model's own folder."""
    info = {e.key: e.value for e in t.external_data}
    name = info.get("location", "")
    rel = Path(name)
    if not name or rel.is_absolute() or ".." in rel.parts:
        raise InputError(f"model file {str(p)!r}: initializer {t.name!r} names the external file {name!r}; "
                         "an external data file must lie in the model's own folder (a relative name, no '..').")
    target = (p.parent / rel).resolve()
    if p.parent.resolve() not in target.parents or not target.is_file():
        raise InputError(f"model file {str(p)!r}: initializer {t.name!r} names the external file {name!r}, which "
                         "is not a file in the model's own folder.")
    return int(target.stat().st_size)


#: the operators a graph read by the exact tree path may hold besides its one tree ensemble
_AROUND_TREES = ("Cast", "Identity", "ZipMap")
_TREE_OPS = ("TreeEnsembleRegressor", "TreeEnsembleClassifier", "TreeEnsemble")
_FLOAT, _DOUBLE = 1, 11  # TensorProto.FLOAT, TensorProto.DOUBLE


def _tree_ensemble(proto) -> tuple[dict | None, str]:
    """``({"op", "attributes", "input_float32"}, "")`` when the graph is one tree ensemble on its single input (see
    the module docs), else ``(None, why not)``.  ``input_float32``: the values reach the trees as float32 (onnxruntime
    compares a float input in float32; a double input is compared with the thresholds widened to double)."""
    from onnx import helper, numpy_helper

    graph = proto.graph
    trees = [n for n in graph.node if n.op_type in _TREE_OPS and n.domain == "ai.onnx.ml"]
    others = sorted({n.op_type for n in graph.node if n.op_type not in _TREE_OPS + _AROUND_TREES})
    if len(trees) != 1 or others or len(graph.input) != 1:
        return None, ("the graph holds " + (f"the operators {', '.join(others[:5])}" if others else
                      f"{len(trees)} tree ensembles" if len(trees) != 1 else f"{len(graph.input)} inputs")
                      + ", not one tree ensemble on one input")
    tree = trees[0]
    source = {o: n for n in graph.node for o in n.output}
    name, float32 = tree.input[0], None
    while name in source:  # back through Cast and Identity to the graph's input
        node = source[name]
        if node.op_type == "Cast" and float32 is None:
            to = next((a.i for a in node.attribute if a.name == "to"), None)
            if to not in (_FLOAT, _DOUBLE):
                return None, "the tree ensemble's input is cast to a type other than float or double"
            float32 = to == _FLOAT
        if node.op_type not in ("Cast", "Identity"):
            return None, f"the tree ensemble's input comes from a {node.op_type} node"
        name = node.input[0]
    if name != graph.input[0].name:
        return None, "the tree ensemble does not read the graph's input"
    elem = graph.input[0].type.tensor_type.elem_type
    if float32 is None:
        if elem not in (_FLOAT, _DOUBLE):
            return None, "the graph's input is neither float nor double"
        float32 = elem == _FLOAT
    attributes = {}
    for a in tree.attribute:
        value = helper.get_attribute_value(a)
        if hasattr(value, "dims"):  # a *_as_tensor attribute
            value = numpy_helper.to_array(value)
        elif isinstance(value, bytes):
            value = value.decode("utf-8", "replace")
        elif isinstance(value, list) and value and isinstance(value[0], bytes):
            value = [v.decode("utf-8", "replace") for v in value]
        attributes[a.name] = value
    return {"op": tree.op_type, "attributes": attributes, "input_float32": bool(float32)}, ""


def _class_labels(proto):
    """The class labels the graph declares (a ZipMap's, or a classifier node's), or None."""
    for node in _nodes(proto.graph):
        for attr in node.attribute:
            if attr.name in ("classlabels_int64s", "classlabels_ints") and len(attr.ints):
                return np.asarray(list(attr.ints))
            if attr.name == "classlabels_strings" and len(attr.strings):
                return np.asarray([s.decode() for s in attr.strings])
    return None


class OnnxModel:
    """A model in an ONNX file, run by onnxruntime: ``predict`` and, for a classifier, ``predict_proba`` and
    ``classes_`` (see the module docs).  ``provenance``: the file's sha256, producer, IR version and opsets."""

    #: the graph's one tree ensemble (see :func:`_tree_ensemble`), or None with the reason in ``tree_unavailable``
    tree_ensemble: dict | None = None
    tree_unavailable: str = "not read"

    def __init__(self, session, classes, feature_names, provenance: dict, name: str):
        self._session, self._name, self.provenance = session, name, provenance
        self._inputs = session.get_inputs()
        outputs = session.get_outputs()
        self._probabilities = next((o.name for o in outputs if "map" in o.type or o.name == "probabilities"
                                    or (classes is not None and o.type.startswith("tensor(float")
                                        and o is not outputs[0])), None)
        self._value = outputs[0].name
        if classes is not None and self._probabilities is not None:
            self.classes_ = classes
            self._estimator_type = "classifier"
        else:
            self._estimator_type = "regressor"
        names = [n.strip() for n in feature_names.split(",")] if feature_names else None
        if len(self._inputs) > 1:
            names = [i.name for i in self._inputs]
        if names:
            self.feature_names_in_ = np.asarray(names, dtype=object)
        self.n_features_in_ = len(names) if names else self._width()

    def _width(self):
        shape = self._inputs[0].shape
        return int(shape[1]) if len(shape) == 2 and isinstance(shape[1], int) else None

    def _feed(self, X) -> dict:
        import pandas as pd

        if len(self._inputs) == 1:
            arr = X.to_numpy() if isinstance(X, pd.DataFrame) else np.asarray(X)
            if hasattr(self, "feature_names_in_") and isinstance(X, pd.DataFrame):
                arr = X[list(self.feature_names_in_)].to_numpy()
            width = self._width()
            if arr.ndim != 2 or (width is not None and arr.shape[1] != width):
                raise InputError(f"ONNX model {self._name!r}: its input {self._inputs[0].name!r} takes {width} "
                                 f"columns, the data gives {arr.shape[1] if arr.ndim == 2 else arr.shape}.")
            return {self._inputs[0].name: _typed(arr, self._inputs[0].type)}
        if not isinstance(X, pd.DataFrame):
            raise InputError(f"ONNX model {self._name!r} takes named inputs "
                             f"({', '.join(i.name for i in self._inputs)}): give the data with those columns.")
        missing = [i.name for i in self._inputs if i.name not in X.columns]
        if missing:
            raise InputError(f"ONNX model {self._name!r}: the data has no column for its inputs "
                             f"{', '.join(missing)}.")
        return {i.name: _typed(X[[i.name]].to_numpy(), i.type) for i in self._inputs}

    def predict(self, X):
        out = self._session.run([self._value], self._feed(X))[0]
        out = np.asarray(out)
        return out.ravel() if out.ndim == 2 and out.shape[1] == 1 else out

    def predict_proba(self, X):
        if self._estimator_type != "classifier":
            raise AttributeError("predict_proba")
        out = self._session.run([self._probabilities], self._feed(X))[0]
        if isinstance(out, list):  # ZipMap: one {label: probability} per row
            return np.asarray([[row[c] for c in self.classes_.tolist()] for row in out], dtype=float)
        return np.asarray(out, dtype=float)


def _typed(arr: np.ndarray, onnx_type: str) -> np.ndarray:
    """The columns as the input's element type (float, double, int64 or string)."""
    if "string" in onnx_type:
        return arr.astype(str).astype(object)
    if "int64" in onnx_type:
        return arr.astype(np.int64)
    if "double" in onnx_type:
        return arr.astype(np.float64)
    return arr.astype(np.float32)
