"""``stormwatch report``: one HTML file (or PDF) of a site's period: what the rules
concluded (``rows.py``, ``tables.py``, ``owed.py``, ``actionchain.py``, ``weather.py``),
the plots of what the engine saw (``samples.py``, ``plots.py``), the photos, and
one stylesheet (``style.py``); ``build.py`` puts them together.
"""
