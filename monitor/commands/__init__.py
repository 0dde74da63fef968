"""The commands of ``stormwatch`` (README.md, "Commands"), one module per family.

``cli.py`` builds the argument parser from each family's ``add_parsers`` and
runs one command; each ``cmd_*`` takes the parsed arguments and returns the exit
code, and raises the one error family of ``monitor/errors.py`` (``cli.py`` maps it
to exit codes in one place). ``common.py`` holds what they share: loading the
configuration, the standard output that may be full, files written with
``--out``, and the state directory they read or write.

* ``files.py``    commands on files: ``check-config``, ``replay``, ``backtest``, ``acl``;
* ``state.py``    commands on the state database: ``status``, ``inspect``,
                  ``site close``, ``logbook``, ``report``;
* ``people.py``   the field app's people: ``user add``, ``user list``, ``user link``,
                  ``user token``, ``user revoke``;
* ``service.py``  commands that run something: ``run``, ``demo``, ``simulate``,
                  ``notify-test``;
* ``archive.py``  ``archive``: final journal rows into compressed files;
* ``weather.py``  ``weather``: fetch the forecast and the reference once, and say
                  what follows;
* ``web.py``      ``web``: the field app;
* ``duties.py``   ``duties``: each duty of a site's permits, its source and state now;
* ``helptext.py`` the long ``--help`` of every command, one table of wording.
"""
