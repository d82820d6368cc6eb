import sys

from tools.gradfuzz.runner import main

sys.exit(main())
