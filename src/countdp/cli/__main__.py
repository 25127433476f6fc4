"""``python -m countdp.cli``: the same as the ``countdp`` command."""

import sys

from countdp.cli import main

sys.exit(main())
