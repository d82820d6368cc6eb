"""Upstream's path for how kernel code spells qd.graph calls."""
from quadrants.lang.graph import is_deprecated_spelling, matches, warn_if_deprecated

__all__ = ["is_deprecated_spelling", "matches", "warn_if_deprecated"]
