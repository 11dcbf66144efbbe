"""``python -m robot_dynamics.cli``: the ``robot-dynamics`` command without its console script."""

import sys

from . import main

sys.exit(main())
