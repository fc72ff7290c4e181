"""The run engine's garbage-collector settings while units run, and their restoration."""

from __future__ import annotations

import gc
import weakref

from llmpsych.runs.engine import GC_YOUNG_THRESHOLD, fewer_gc_pauses


def test_settings_apply_inside_and_are_restored_after() -> None:
    """Inside: existing objects frozen, young threshold raised; after: both as before, even on error."""
    before = gc.get_threshold()
    assert gc.get_freeze_count() == 0
    try:
        with fewer_gc_pauses():
            assert gc.get_freeze_count() > 0
            assert gc.get_threshold() == (max(before[0], GC_YOUNG_THRESHOLD), *before[1:])
            raise RuntimeError("a unit crashed the run")
    except RuntimeError:
        pass
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


class _Node:
    """A self-referencing object: only the cyclic collector frees it."""

    def __init__(self) -> None:
        self.me = self


def test_cyclic_garbage_made_while_running_is_still_collected_automatically() -> None:
    """Cycles created inside are freed by automatic collections (larger batches), not leaked."""
    with fewer_gc_pauses():
        refs = [weakref.ref(_Node()) for _ in range(GC_YOUNG_THRESHOLD * 3)]
        alive = sum(ref() is not None for ref in refs)
    assert alive < len(refs) // 2
