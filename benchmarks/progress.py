"""Progress lines for the benchmarks: each phase is announced on stderr as
it starts, with the seconds since the run began, so a run of minutes shows
where it is while stdout keeps only the results."""
import sys
import time

_BEGIN = time.monotonic()


def phase(text):
    print(f"[{time.monotonic() - _BEGIN:7.1f} s] {text}", file=sys.stderr, flush=True)


def best_ms(run, reset, repeats, sync):
    """The fastest of `repeats` timed runs of `run`, in ms; each starts
    after `reset()` and a `sync()`, and ends with a `sync()`."""
    best = float("inf")
    for _ in range(repeats):
        reset()
        sync()
        start = time.perf_counter()
        run()
        sync()
        best = min(best, (time.perf_counter() - start) * 1e3)
    return best
