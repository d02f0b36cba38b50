"""``python -m diagnosis_core`` runs the command line."""

from ._cli import main

raise SystemExit(main())
