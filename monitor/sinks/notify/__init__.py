"""Alerts that reach the qualified professional: routing, messages, delivery, escalation.

The alert path of monitor/README.md, "Architecture" ("Alerts go through a transactional outbox")
and the ``notify`` section of config/README.md. An alert that is lost or late can
cost a site a violation (§ 134-12D: up to $350, each week a separate one),
so every step either succeeds, retries, escalates, or says loudly that it
did not.

``routing``   event → tags, on the engine thread, pure (defaults, overrides, urgency)
``messages``  title and text/Markdown bodies in the site's time zone, pure (the
              ``Message`` value itself is ``contract/message.py``; the signed form
              links alerts carry are ``host/links.py``, which the field app verifies)
``policy``    at delivery time: withheld (catch-up noise, superseded notices,
              corrections), and retry backoff
``targets``   Apprise targets from ``notify.targets`` and ``notify.config_file``;
              one send per target
``worker``    the outbox worker thread: send, receipts, retries, escalation
``console``   the ``console://`` Apprise plugin (alerts in the terminal)
``secrets``   masking of every target's secrets in logs and error messages
``probe``     ``stormwatch notify-test``, and the one mail the field app sends a
              person (a sign-in link, a contractor's action)

``build``     ``build_router`` and ``build_worker``, what ``monitor.sinks.registry`` calls

This package's ``__init__`` imports nothing: importing ``routing`` (as the
configuration does, to check route names) does not pull in Apprise.
"""
