"""Driving a run: the one driver of every workflow, its options, effects and observers.

``options`` holds :class:`RunOptions` and the drivers' keywords (loaded with the
package), ``effects`` the agents' typed protocols and their checks, ``observe`` the
observers, ``loop`` the step loop both workflows share, and ``driver`` the driver
itself: run options, journaling, resume, store (loaded at the first run). Driving is
the top floor of the kernel: it may import every room but ``scenario``, and no room
imports it; ``tests/test_layout.py`` holds that rule.
"""
