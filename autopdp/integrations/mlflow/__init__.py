"""autopdp in MLflow (``pip install 'autopdp[mlflow]'``).

=====================  ==============================================================
module                 what
=====================  ==============================================================
evaluator              ``mlflow.models.evaluate(..., evaluators=["autopdp"])``
log                    an audit's outputs and findings logged back to a run (``--mlflow``)
=====================  ==============================================================

Reading a model from MLflow is :mod:`autopdp.io.mlflow_models`.
"""
