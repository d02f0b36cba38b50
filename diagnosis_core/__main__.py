"""``python -m diagnosis_core`` runs the command line."""

from .cli import main

raise SystemExit(main())
