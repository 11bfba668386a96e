"""Running PDs on a Dask cluster (``pip install autopdp[dask]``).

Rows are the unit of work (:mod:`autopdp.pd.rows`): each task computes every feature set of a call on one row
partition (the call's grids, model and checked tree plan, beside the partition's rows), so each row's tree tables
are built once on the whole cluster and each worker receives only its rows.  Within :func:`resident_rows` (one
audit) a partition's rows are sent once and stay on a worker for every later call on the same rows (the 1D and 2D
PDs, the PD outside the grid, ALE's sums); the rows travel inside the task that holds them, so the scheduler can
make them again on another worker, and rerun the calls, when a worker is lost.  The few calls that cannot be split by
rows (scikit-learn's recursion method; leaf counting with a sampled spread) run as groups of feature sets on a
setup sent to every worker once.
"""

from __future__ import annotations

import contextlib
import contextvars
import operator
import uuid

from ..errors import ClusterError, InputError, InputTypeError, advice

__all__ = ["run_on_dask", "run_partitions_on_dask", "run_items_on_dask", "run_here_or_on_dask", "dask_workers",
           "resident_rows", "gathered", "cluster_failures"]

#: within resident_rows: {"scheduler", "client", "blocks": {key: (future, refs)}}
_RESIDENT: contextvars.ContextVar = contextvars.ContextVar("autopdp_dask_resident", default=None)


@contextlib.contextmanager
def resident_rows(scheduler):
    """Within: one client for every call on ``scheduler`` (None: nothing to do), and the row partitions sent to it
    kept on its workers until the block exits (then released)."""
    if scheduler is None:
        yield
        return
    client, own = _client(scheduler)
    state = {"scheduler": scheduler, "client": client, "blocks": {}}
    token = _RESIDENT.set(state)
    try:
        yield
    finally:
        _RESIDENT.reset(token)
        state["blocks"].clear()
        if own:
            client.close()


def holds_rows(scheduler) -> bool:
    """Whether ``scheduler``'s row partitions are kept on its workers now (within :func:`resident_rows`)."""
    state = _RESIDENT.get()
    return state is not None and (state["scheduler"] is scheduler or state["client"] is scheduler)


def _client(scheduler):
    state = _RESIDENT.get()
    if state is not None and state["scheduler"] is scheduler:
        return state["client"], False
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


def _failure(exc) -> str | None:
    """What happened to the cluster when ``exc`` says it could not finish (None: ``exc`` is the task's own error)."""
    from concurrent.futures import CancelledError  # distributed's FutureCancelledError (2024.6 on) is one

    from distributed.comm.core import CommClosedError
    from distributed.scheduler import KilledWorker

    if isinstance(exc, KilledWorker):
        return "its workers died while running one of its tasks and the scheduler gave up on it"
    if isinstance(exc, CommClosedError):
        return "the connection to the scheduler was lost"
    if isinstance(exc, CancelledError):
        return ("its tasks were cancelled (the connection to the scheduler was lost, the scheduler restarted, or the "
                "client was closed)")
    return None


@contextlib.contextmanager
def cluster_failures(client=None, futures=()):
    """Within: a failure of the cluster itself (:func:`_failure`) is a :class:`~autopdp.errors.ClusterError` in one
    line saying what to do, ``futures`` cancelled first (nothing of the failed run keeps running); a task's own
    error passes unchanged."""
    try:
        yield
    except Exception as exc:
        what = _failure(exc)
        if what is None:
            raise
        if client is not None:
            try:
                client.cancel(list(futures))
            except Exception:  # noqa: BLE001 - a client whose scheduler is gone cannot cancel: nothing is left to stop
                pass
        remedy = advice(cli="run again, or without --scheduler", python="run again, or with scheduler=None")
        said = " ".join(str(exc).split()).split(". ")[0].rstrip(".")[:300]  # its first sentence
        raise ClusterError(f"the Dask cluster could not finish its work: {what} ({type(exc).__name__}: {said}). "
                           f"Check the workers' logs and memory (a worker that runs out of memory dies), then "
                           f"{remedy}.") from None


def gathered(client, futures) -> list:
    """``client.gather(futures)``, a failure of the cluster as a :class:`~autopdp.errors.ClusterError`."""
    with cluster_failures(client, futures):
        return client.gather(futures)


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
        with cluster_failures(client, futures):
            for fut in as_completed(futures):
                i = position[fut.key]
                results[i] = fut.result()
                on_done(len(groups[i]))
        return results
    finally:
        if own:
            client.close()


def _hold(block):
    """A row partition's rows, held on the worker that made them (a task, so they can be made again elsewhere)."""
    return block


def _rows(block):
    """A row partition's rows, made and held on a worker: the block itself, or read there by its recipe (a
    :class:`~autopdp.pd.partframe.ParquetPart`: the rows never pass through the client or the scheduler)."""
    read = getattr(block, "read_block", None)
    return block if read is None else read()


def _on_rows(fn, shell, block, payload):
    """``fn`` of one row partition: ``shell`` (a setup or source without its rows) with the rows put back."""
    return fn(shell.with_rows(block), payload)


def _refreshed(fn, shell, block, payload):
    """``(rows, result)``: ``fn`` of one row partition returns ``(kept, result)``; the rows come back with ``kept``
    (a dict: their model matrix and raw scores, :func:`autopdp.pd.rows.rows_block`), to stay on the worker in place
    of the first ones."""
    kept, result = fn(shell.with_rows(block), payload)
    return ({**block, **kept} if kept is not None else block), result


def _held_as(blocks: dict, key):
    """The key of the block that serves ``key``: a block asked for without a tree plan (``((frame, None), weights,
    start, stop)``: the rows and weights only) is served by the same rows of the same frame and weights kept for a
    plan (their model matrix and scores beside them), so the rows are sent once; else ``key`` itself."""
    (frame, plan), weights, start, stop = key
    if key in blocks or plan != id(None):
        return key
    return next((k for k in blocks if k[0][0] == frame and k[1:] == (weights, start, stop)), key)


def run_partitions_on_dask(scheduler, fn, parts, payloads, refresh: bool = False, then=None):
    """``[fn(shell.with_rows(rows), payload) ...]`` on the cluster, in order, one task per row partition; with
    ``then``, ``then(*those results)`` as one more task on a worker, and only its result comes here (what needs
    every partition's values at once runs there: :func:`autopdp.pd.kept.on_whole`).

    ``parts``: ``(shell, (key, refs), make_rows)`` per partition (:func:`autopdp.pd.rows.shells`); ``payloads``:
    one per partition.  The rows are sent once per key within :func:`resident_rows` (each partition placed by the
    scheduler, which spreads them over the workers), and the task runs where they are.  ``refresh``: ``fn`` returns ``(kept, result)`` and
    the resident rows are replaced, on their worker, by the rows with ``kept`` (:func:`_refreshed`).
    """
    import warnings

    state = _RESIDENT.get()
    client, own = _client(scheduler)
    blocks = state["blocks"] if state is not None and state["client"] is client else {}
    try:
        futures = []
        with warnings.catch_warnings():  # the rows travel inside the task that holds them (it can run again)
            warnings.filterwarnings("ignore", message=".*[Ll]arge (object|graph).*")
            for (shell, (key, refs), make_rows), payload in zip(parts, payloads):
                key = _held_as(blocks, key)
                if key not in blocks:  # placed by the scheduler, which spreads them over the workers: a task
                    # restricted to a worker's address waits for that address for ever once every worker has died
                    # at once (dask/distributed#7346), even when other workers may take it
                    blocks[key] = (client.submit(_rows, make_rows(), key=f"rows-{uuid.uuid4().hex}"), refs)
                if not refresh:
                    futures.append(client.submit(_on_rows, fn, shell, blocks[key][0], payload, retries=1,
                                                 key=f"{fn.__name__}-{uuid.uuid4().hex}"))
                    continue
                both = client.submit(_refreshed, fn, shell, blocks[key][0], payload, retries=1,
                                     key=f"{fn.__name__}-{uuid.uuid4().hex}")
                rows = client.submit(operator.getitem, both, 0, key=f"ownrows-{uuid.uuid4().hex}")
                blocks[key] = (rows, blocks[key][1])  # the objects its key names (a plan's, when it serves one)
                futures.append(client.submit(operator.getitem, both, 1, key=f"result-{uuid.uuid4().hex}"))
            if then is not None:
                final = client.submit(then, *futures, retries=1, key=f"whole-{uuid.uuid4().hex}")
                with cluster_failures(client, [final, *futures]):  # the partitions' results stay there
                    return final.result()
        return gathered(client, futures)
    finally:
        if own:
            client.close()


def run_items_on_dask(scheduler, fn, shared, items):
    """``[fn(shared, item) for item in items]`` on the cluster, in order: ``shared`` sent once (a task that holds
    it, so it can be made again when its worker is lost), one task per item."""
    import warnings

    client, own = _client(scheduler)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*[Ll]arge (object|graph).*")
            held = client.submit(_hold, shared, key=f"shared-{uuid.uuid4().hex}")
            futures = [client.submit(fn, held, item, retries=1, key=f"{fn.__name__}-{uuid.uuid4().hex}")
                       for item in items]
        return gathered(client, futures)
    finally:
        if own:
            client.close()


def _call(held, _item):
    fn, args = held
    return fn(*args)


def run_here_or_on_dask(scheduler, fn, *args):
    """``fn(*args)``: here when ``scheduler`` is None, else as one task on the cluster.  The calling process of an
    audit on a cluster runs no compiled kernel (it never imports numba, about 130 MB): the few kernel calls on a
    handful of rows or a sample (the trees' constant, the OOD check, StratPD) run on a worker with the rest."""
    if scheduler is None:
        return fn(*args)
    (out,) = run_items_on_dask(scheduler, _call, (fn, args), [None])
    return out
