"""The shell logic the daemon, the commands and the field app share: the engine
restored from the store and kept in step with the journal (``engine.py``,
``rows.py``, ``window.py``, ``snapshots.py``, ``tickclock.py``), inspections and
corrective-action steps recorded the one way (``inspections.py``,
``actionsteps.py``, ``evidence.py``), the signed links alerts carry and the field
app verifies (``links.py``), what a backlog or an archive run may take
(``backlog.py``, ``archiving.py``).
"""
