"""autopdp inside other tools: :mod:`autopdp.integrations.mlflow`."""
