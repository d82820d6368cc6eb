"""The demo's loss curve: examples/pendulum_control.py run for its default
iterations, plotted by the demo itself. usage: demo_loss.py OUT_DIR"""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "examples"))

import pendulum_control  # noqa: E402  pylint: disable=wrong-import-position

pendulum_control.main(["--plot", os.path.join(sys.argv[1], "demo_loss.png")])
