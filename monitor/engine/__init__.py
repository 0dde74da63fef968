"""The sans-I/O compliance engine: readings and ticks in, monitor/README.md, "Events" events out.

Nothing in this package touches sockets, files or the wall clock; the daemon,
``replay`` and the demo drive the very same ``Engine``.

Its ``__init__`` imports nothing, so that importing one of its modules (the
configuration validates route names against ``events``) does not import the
whole engine: the package's import graph stays acyclic (``tests/test_layout.py``).
"""
