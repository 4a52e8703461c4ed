"""``python -m opkit``: the ``opkit`` command."""

import sys

from .cli import main

sys.exit(main())
