"""quadrants.math: `import quadrants.math` and `from quadrants.math import
vec3, pi` give the module qd.math is (quadrants.lang.mathlib)."""
import sys

from quadrants.lang import mathlib as _mathlib

sys.modules[__name__] = _mathlib
