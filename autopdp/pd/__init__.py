"""Stage 1, partial dependence: data + model -> feature specs and grids -> PD/ICE results.

Takes the validated data (:class:`~autopdp.pd.data.Frame`), a fitted model or callable and the
features; gives :class:`~autopdp.pd.result.PDResult` objects (average, std, stderr, ICE).

=====================  ==============================================================
module                 what
=====================  ==============================================================
data                   the validated frame every stage reads (``as_frame``)
grids                  feature kinds and grids (quantiles, levels, custom values)
response               model adapters: the response (probability, margin, ...) as an array
engine                 brute force: memory-bounded batches of augmented rows, any model
pipeline_blocks        brute force through a column-separable Pipeline: preprocess once,
                       substitute each feature's encoded columns (the same numbers)
trees                  exact averaging tree path (leaf counts) for tree ensembles
tree_extract           the trees of any supported library as one node table, with the model's link
tree_ice               exact per-row (ICE-level) tree path; boosted classifiers' links
tree_moves             ALE's reads: each row's response at its own interval's ends (cell's corners)
tree_kernels           the compiled kernels of both tree paths (numba)
tree_pair_kernels      the compiled kernels of the per-row 2D ICE (numba)
fastpath               which PDs take which tree path, and why not
distributed            the brute engine's batches on a Dask cluster
result                 ``PDResult``: the stage's output, with JSON round trip
setup                  one call's inputs validated once: options, frame, weights, adapter, plans
exact_ice              ``ExactICE``: exact per-row ICE and ALE's moved reads on any grids
partial_dependence     the public entry: validation once, then the engines above
=====================  ==============================================================

A module here imports only this package and autopdp's base modules (``errors``, ``config``,
``_io``, ``_progress``), never a later stage.
"""
