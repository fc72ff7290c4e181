"""Group commit: the run-store writes of one event-loop turn share one SQLite transaction.

Each SQLite commit costs a WAL append (~80 us on these machines), so three commits per work unit were
the largest single CPU cost of a run with many short units. Writers ``await`` their write: it returns
once the transaction holding it is committed, so a unit never goes on (sends its next request, counts
as done) before what it recorded is durable, exactly as with one commit per write. Writes queued in the
same turn of the event loop (many answers arrive together under concurrency) are committed together
at the start of the next turn.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from .store import RunStore, Statement


class GroupCommit:
    """Batches awaited writes to one :class:`RunStore` per event-loop turn."""

    def __init__(self, store: RunStore) -> None:
        self.store = store
        self._pending: list[tuple[list[Statement], asyncio.Future[None] | None]] = []
        self._scheduled = False
        self.transactions = 0  # how many commits the writes needed (for tests and benchmarks)

    async def write(self, statements: Iterable[Statement]) -> None:
        """Queue ``statements`` (one logical write) and wait until they are committed."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        self._pending.append((list(statements), done))
        if not self._scheduled:
            self._scheduled = True
            loop.call_soon(self.flush)
        await done

    def defer(self, statements: Iterable[Statement]) -> None:
        """Queue ``statements`` without waiting: they are committed with the next awaited write.

        For bookkeeping a crash may lose without harm (a unit marked 'running' that is still 'pending'
        in the store is resumed all the same); it costs no commit of its own.
        """
        self._pending.append((list(statements), None))

    def flush(self) -> None:
        """Commit everything queued now, in queue order. Also called when the run stops.

        A writer that was cancelled while waiting (Ctrl-C) still has its write committed: what it
        recorded (say, an answer already paid for) is kept.
        """
        self._scheduled = False
        batch, self._pending = self._pending, []
        if not batch:
            return
        try:
            self.store.write(statement for statements, _ in batch for statement in statements)
        except BaseException as exc:
            for _, done in batch:
                if done is not None and not done.done():
                    done.set_exception(exc)
            if not isinstance(exc, Exception):
                raise
            return
        self.transactions += 1
        for _, done in batch:
            if done is not None and not done.done():
                done.set_result(None)
