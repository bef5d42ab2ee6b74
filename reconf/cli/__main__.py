"""`python -m reconf.cli ...`: the `reconf` command, as the live runtime's service and the soak
start it (reconf/runtime_service.py)."""

import sys

from reconf.cli import main

if __name__ == "__main__":
    sys.exit(main())
