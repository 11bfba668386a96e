"""The exact tree path: a tree ensemble's PD and ICE computed from its trees, equal to brute force.

Takes a fitted tree model (scikit-learn, XGBoost, LightGBM; alone or at the end of a Pipeline whose other
steps map each explained column elementwise) and the validated data; gives the same PD and ICE numbers as
predicting the augmented rows, without predicting them.

=====================  ==============================================================
module                 what
=====================  ==============================================================
extract                the trees of any supported library as one node table, with the model's link
exact_pd               exact averaging tree path (leaf counts) for tree ensembles
ice                    exact per-row (ICE-level) tree path, row chunks, leaf-code cache
kernels                the compiled kernels of both tree paths (numba)
pair_kernels           the compiled kernels of the per-row 2D ICE (numba)
moves                  ALE's reads: each row's response at its own interval's ends (cell's corners)
exact_ice              ``ExactICE``: exact per-row ICE and ALE's moved reads on any grids
fastpath               which PDs take which tree path, and why not
errors                 why the tree path does not apply (``TreePathUnavailable``)
=====================  ==============================================================
"""
