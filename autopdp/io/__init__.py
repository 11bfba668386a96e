"""Reading and writing, beside the pipeline: models, data, results.json, the ICE sidecar and provenance.

Takes paths, URIs and bytes, bounded and checked before anything allocates or compiled code reads them;
gives fitted models, data frames and the records the audit is written as.

=====================  ==============================================================
module                 what
=====================  ==============================================================
loading                ``load_model`` (a model file or an MLflow URI) and ``load_data`` (CSV, Parquet)
model_files            model files read safely: skops' safe loader, a pickle only where it is named
tree_arrays            every tree's node arrays checked against the columns it will see, before anything predicts
boosters               XGBoost and LightGBM trees checked from their text forms, before their library walks them
mlflow_models          models from an MLflow tracking server or registry
audit_json             an ``Audit`` written as results.json and read back (``Audit.to_json``/``from_json``)
results                results.json's column tables and ``read_results`` (plain records for scripts)
tables                 lists of records as column tables (results.json's layout)
ice                    the ICE sidecar (ice.parquet)
provenance             what was audited, with what, where: files, hashes, versions
=====================  ==============================================================

May import the pipeline's stages (for their record types), never the report, the audit, the gate or the CLI.
"""
