"""The commands of ``stormwatch`` (README.md, "Commands"), one module per family.

``cli.py`` builds the argument parser and runs one of them; each ``cmd_*``
takes the parsed arguments and returns the exit code. ``common.py`` holds what
they share: the exit codes, ``UsageError`` (one line on stderr, exit 2), the
standard output that may be full, files written with ``--out``, and the state
directory they read or write.

* ``files.py``   commands on files: ``check-config``, ``replay``, ``backtest``, ``acl``;
* ``state.py``   commands on the state database: ``status``, ``inspect``,
                 ``site close``, ``logbook``, ``report``;
* ``people.py``  the field app's people: ``user add``, ``user link``, ``user token``;
* ``service.py`` commands that run something: ``run``, ``demo``, ``notify-test``.
"""
