"""Stage 1, partial dependence: data + model -> feature specs and grids -> PD/ICE results.

Takes the validated data (:class:`~autopdp.pd.data.Frame`), a fitted model or callable and the
features; gives :class:`~autopdp.pd.result.PDResult` objects (average, std, stderr, ICE).

=====================  ==============================================================
module                 what
=====================  ==============================================================
data                   the validated frame every stage reads (``as_frame``)
grids                  feature kinds and grids (quantiles, levels, custom values)
profiles               column profiles summed over row partitions: the data's checks, and the grids'
                       exact quantiles narrowed over the partitions
partframe              a Parquet table whose rows stay on the Dask workers (each reads its own parts)
response               model adapters: the response (probability, margin, ...) as an array
engine                 brute force: memory-bounded batches of augmented rows, any model
pipeline_blocks        brute force through a column-separable Pipeline: preprocess once,
                       substitute each feature's encoded columns (the same numbers)
tree/                  the exact tree path for tree ensembles (see :mod:`autopdp.pd.tree`)
distributed            the brute engine's batches on a Dask cluster
result                 ``PDResult``: the stage's output, with JSON round trip
setup                  one call's inputs validated once: options, frame, weights, adapter, plans
selfcheck              every audit's check of the tree path against the model's own predictions
sampling               the ICE rows' sample and its inclusion weights
margin, link, scales   a classifier's margin (log-odds) and the scale each number is on
refits                 the learner-level PDs: the model refitted on resamples
options                ``PDOptions``: a call's settings beyond scikit-learn's parameters; the old keywords
partial_dependence     the public entry: validation once, then the engines above
=====================  ==============================================================

A module here imports only this package and autopdp's base modules (``errors``, ``config``,
``utils``), never a later stage.
"""
