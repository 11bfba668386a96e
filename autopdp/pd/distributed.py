"""Running PDs on a Dask cluster (``pip install autopdp[dask]``).

Rows are the unit of work (:mod:`autopdp.pd.rows`): each task holds one row partition (its rows, the model, the
grids and the checked tree plan) and computes every feature set on it, so each row's tree tables are built once
on the whole cluster and each worker receives only its rows.  A task carries its partition in the task itself, so
the scheduler can run it again on another worker when its worker is lost.  The few calls that cannot be split by
rows (scikit-learn's recursion method; leaf counting with a sampled spread) run as groups of feature sets on a
setup sent to every worker once.
"""

from __future__ import annotations

from ..errors import InputError, InputTypeError

__all__ = ["run_on_dask", "run_partitions_on_dask", "dask_workers"]


def _client(scheduler):
    try:
        from distributed import Client
    except ImportError:
        raise InputError(
            "a Dask scheduler was given but dask.distributed is not installed: pip install 'autopdp[dask]'."
        ) from None
    if isinstance(scheduler, Client):
        return scheduler, False
    if not isinstance(scheduler, str):
        raise InputTypeError(f"scheduler must be an address like 'tcp://host:8786' or a distributed.Client, got {type(scheduler).__name__}.")
    try:
        return Client(scheduler, timeout="20s"), True
    except (OSError, ValueError) as exc:  # ValueError: an address distributed cannot parse
        from ..utils.secrets import redact, secrets_in  # the address may carry a token: CI logs keep stderr

        raise InputError(redact(f"cannot reach the Dask scheduler at {scheduler!r}: {exc}.",
                                also=secrets_in(scheduler))) from None


def dask_workers(scheduler) -> int:
    client, own = _client(scheduler)
    try:
        return max(1, len(client.scheduler_info().get("workers", {})))
    finally:
        if own:
            client.close()


def run_on_dask(scheduler, fn, setup, groups, on_done):
    """``[fn(setup, g) for g in groups]`` on the cluster, in order; ``on_done(n)`` after each group."""
    from distributed import as_completed

    client, own = _client(scheduler)
    try:
        shared = client.scatter(setup, broadcast=True)
        futures = [client.submit(fn, shared, group, pure=False) for group in groups]
        position = {f.key: i for i, f in enumerate(futures)}
        results = [None] * len(groups)
        for fut in as_completed(futures):
            i = position[fut.key]
            results[i] = fut.result()
            on_done(len(groups[i]))
        return results
    finally:
        if own:
            client.close()


def run_partitions_on_dask(scheduler, fn, parts, jobs):
    """``[fn(part, jobs) for part in parts]`` on the cluster, in order, one task per row partition."""
    import warnings

    client, own = _client(scheduler)
    try:
        with warnings.catch_warnings():  # each task carries its rows on purpose (a lost worker's task reruns)
            warnings.filterwarnings("ignore", message=".*[Ll]arge (object|graph).*")
            futures = [client.submit(fn, part, jobs, pure=False, retries=1) for part in parts]
        return client.gather(futures)
    finally:
        if own:
            client.close()
