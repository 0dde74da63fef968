"""What goes out: alerts to people (``notify/``) and points to InfluxDB
(``influx/``), each a worker the daemon runs, listed once in ``registry.py``. A
sink reads the journal, the events and the outbox; it never feeds the engine.
"""
