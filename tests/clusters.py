"""A real Dask LocalCluster of worker processes for the tests, closed only once it is quiet.

Tests that kill workers (a model that ends its worker's process) leave their nannies restarting them; closing the
cluster then races the restart: the cluster retires a worker the scheduler is still adding, and distributed raises
``KeyError: 'tcp://...'`` from the close (seen once on the 2-core CI).  So the close first waits until every worker
is back and none is running a task.
"""

import contextlib
import time


def _settle(client, n_workers: int, timeout: float = 120.0) -> None:
    """Wait until ``n_workers`` workers are registered, none processing a task, for 1 s in a row."""
    client.wait_for_workers(n_workers, timeout=timeout)
    deadline, quiet_since = time.monotonic() + timeout, None
    while time.monotonic() < deadline:
        info = client.scheduler_info()
        busy = any(client.processing().values())
        if len(info.get("workers", {})) >= n_workers and not busy:
            quiet_since = quiet_since or time.monotonic()
            if time.monotonic() - quiet_since >= 1.0:
                return
        else:
            quiet_since = None
        time.sleep(0.1)
    raise TimeoutError(f"the test cluster did not settle to {n_workers} idle workers in {timeout:.0f} s")


@contextlib.contextmanager
def process_cluster(n_workers: int = 2, config: dict | None = None):
    """Yield ``(cluster, client)``: ``n_workers`` worker processes of one thread each, created under the dask
    ``config`` given; on exit, once the cluster is quiet (:func:`_settle`), the client and cluster are closed."""
    import dask
    import distributed

    with dask.config.set(config or {}):
        cluster = distributed.LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                                           dashboard_address=None)
    client = distributed.Client(cluster)
    try:
        yield cluster, client
    finally:
        try:
            _settle(client, n_workers)
        finally:
            client.close()
            cluster.close()


def assert_same_scores_and_evidence(local, remote) -> None:
    """Two audits' numeric scores agree (rtol 1e-7) and their evidence passes the same criteria."""
    import numpy as np

    numbers = local.scores.select_dtypes("number").columns
    np.testing.assert_allclose(remote.scores[numbers].to_numpy(dtype=float),
                               local.scores[numbers].to_numpy(dtype=float), rtol=1e-7, atol=1e-9)
    assert [(k, e.passed) for k, c in local.evidence.items() for e in c.values()] == \
        [(k, e.passed) for k, c in remote.evidence.items() for e in c.values()]
