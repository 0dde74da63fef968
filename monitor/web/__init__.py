"""The field app (``stormwatch web``): the inspection form on the phone, the officer's
overview, the API of the offline queue. Reads state as ``status`` does, records
inspections as ``inspect`` does; never runs the engine (``app.py``)."""
