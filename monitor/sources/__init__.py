"""What comes in: MQTT ingest in a process of its own (``mqtt.py``, ``mqttproc.py``,
``parse.py``), replay and backtest files (``csvfile.py``, ``filerows.py``,
``pertip.py``), the weather service (``nws.py``), end-to-end confirmation and node
clocks (``confirm.py``, ``nodeclocks.py``), the simulated nodes (``simulate.py``,
``simnodes.py``) and the broker's ACL (``acl.py``). Every input passes the rules of
``monitor/ingest`` on its way to the journal.
"""
