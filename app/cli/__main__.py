"""`python -m app.cli`: the same command as `irlens`."""

import sys

from app.cli import main

sys.exit(main())
