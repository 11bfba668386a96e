"""Reading and writing, beside the pipeline: models, data, results.json, the ICE sidecar and provenance.

Takes paths, URIs and bytes, bounded and checked before anything allocates or compiled code reads them;
gives fitted models, data frames and the records the audit is written as.

=====================  ==============================================================
module                 what
=====================  ==============================================================
models                 ``load_model``: a model from a file or an MLflow URI
loading                model files (skops, a named pickle) and data files (CSV, Parquet, ...)
tree_arrays            a skops-loaded tree's node arrays checked before anything predicts
mlflow_models          models from an MLflow tracking server or registry
results                results.json: the tables an audit is written as, and their reader
tables                 lists of records as column tables (results.json's layout)
ice                    the ICE sidecar (ice.parquet)
provenance             what was audited, with what, where: files, hashes, versions
=====================  ==============================================================

May import the pipeline's stages (for their record types), never the report, the audit, the gate or the CLI.
"""
