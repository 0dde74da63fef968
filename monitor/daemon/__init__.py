"""The long-running process (``stormwatch run``) and the demo: the loop that takes
MQTT batches into the journal and the engine (``loop.py``, ``batch.py``), the
workers beside it (the sinks' threads, snapshots, archiving, weather polling,
confirmations, systemd's watchdog), and ``stormwatch demo`` on the same parts.
It wires sources, the host and the sinks together; nothing below imports it.
"""
