"""Progress lines for the benchmarks: each phase is announced on stderr as
it starts, with the seconds since the run began, so a run of minutes shows
where it is while stdout keeps only the results."""
import sys
import time

_BEGIN = time.monotonic()


def phase(text):
    print(f"[{time.monotonic() - _BEGIN:7.1f} s] {text}", file=sys.stderr, flush=True)
