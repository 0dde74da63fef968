"""The node's own rain counter: ``tips_total`` that never goes backwards.

A gauge's tips reach the node in one of two ways:

* as **edges** (a reed switch on a GPIO pin): the driver counts tips since its
  last read. Tips that fall while no process watches the pin (a restart, a
  reboot) are not seen by anyone and are lost: the kernel keeps no count of
  edges for a pin nobody has open;
* as a **hardware counter** (a Modbus logger's register, the ``tips_total``
  column of a logger's card): the driver reports the raw counter, and the
  node takes the difference to the last raw value it committed. Tips that fell
  during a restart are counted, because the last raw value is in the buffer.

Either way the node adds the tips to its own 64-bit ``tips_total``, committed
with each reading, so the daemon never sees a decrease: not at a reboot, not
when a 16-bit hardware counter wraps, not when the logger is reset.

A logger's per-tip records (a row per tip, the ``csv`` driver) bounce like a
reed switch: a tip that follows the last counted one by ``debounce_s`` or less
is a double tip and is not counted (``is_double_tip``; the daemon's ``replay``
has the same rule in ``monitor/pertip.py``, and a test holds the two together).

Wrap or reset, with the daemon's rule (sensors/README.md, "MQTT contract",
``monitor/rules/rain/rain.py``):
a drop from within 2 % of 2^16 or 2^32 (or of 2^``counter_bits`` when the
width is known) to a value below 2 % of it is a wrap and counts on across it;
any other drop is a reset, and the new value counts from zero.
"""

from __future__ import annotations

from typing import Final

#: A counter within this fraction of its width, dropping below it, wrapped (2 %).
WRAP_FRACTION_DIV: Final = 50
#: The widths a wrap is looked for at when the counter's width is not known.
WRAP_BITS: Final = (16, 32)


def tips_between(before: int | None, after: int, bits: int | None = None) -> int:
    """Tips counted between two raw readings ``before`` and ``after`` of a hardware counter.

    ``before`` None (no earlier reading) is a baseline: no tips. ``bits`` is the
    counter's width when known (a 16-bit register).
    """
    if before is None:
        return 0
    if after >= before:
        return after - before
    for width_bits in (bits,) if bits else WRAP_BITS:
        width = 1 << width_bits
        margin = width // WRAP_FRACTION_DIV
        if width - margin <= before < width and after < margin:
            return after + width - before
    return after  # reset: the counter started again from zero


def is_double_tip(last_tip_ms: int | None, ts_ms: int, debounce_s: float) -> bool:
    """Whether a tip at ``ts_ms`` is the bounce of the counted tip at ``last_tip_ms``:
    it follows it by ``debounce_s`` or less (records have one-second resolution, and a
    double tip is written 1 s after the first); never when ``debounce_s`` is 0."""
    if last_tip_ms is None or debounce_s <= 0:
        return False
    return 0 <= ts_ms - last_tip_ms <= round(debounce_s * 1000)
