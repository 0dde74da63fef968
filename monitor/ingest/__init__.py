"""What a message must hold to become an engine input: the rules every input passes.

``checks.py`` holds the field, timestamp and site rules of readings (MQTT payloads
and replay rows alike); ``inspections.py`` an inspection's own rules on top of
them. Both are pure: the sources (MQTT, CSV), the ``inspect`` command, replay and
the field app parse through them, so one input is accepted or refused for the same
reason wherever it comes in (sensors/README.md, "MQTT contract").
"""
