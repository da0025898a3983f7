"""``python -m hyte.cli`` (what ``torchrun -m hyte.cli train ...`` runs)."""

import sys

from .app import main

sys.exit(main())
