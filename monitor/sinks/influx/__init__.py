"""Sinks that send what the journal holds to other systems (monitor/README.md, "Architecture";
deploy/README.md, "InfluxDB and Grafana").

``influx`` is the InfluxDB exporter (a daemon worker), ``derive`` turns
journal rows, engine state and events into points, ``lineprotocol`` writes
them, ``writers`` sends them to InfluxDB's v1 or v2 write API.
"""
