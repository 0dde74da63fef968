"""The vocabulary every part of stormwatch shares, and nothing else: the engine's
inputs (``inputs.py``) and events (``events.py`` and the event modules beside it),
instants and their local words (``times.py``, ``localtime.py``, ``clocknames.py``,
``figures.py``, ``sentences.py``), reject reasons (``rejects.py``), route keys
(``routes.py``), the one ingest rule (``admission.py``) and a message for a person
(``message.py``). It imports nothing of the rest of ``monitor``: everything may
import it (monitor/README.md, "Architecture").
"""
