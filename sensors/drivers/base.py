"""The one interface every driver meets: ``Driver.read()`` gives ``Sample``s.

A driver knows its hardware and nothing else: no clock for timestamps (unless
the data carries its own), no sequence numbers, no buffer, no MQTT. The node
(``sensors/node.py``) calls ``read()`` every ``every_s`` (or, for a driver that
paces itself, when ``wait_s()`` says), and commits each sample to the buffer
with the state the driver asked to keep, in one transaction.

Adding a sensor is one module in this package with a ``Driver`` subclass and
one line in ``REGISTRY`` (``__init__.py``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True, slots=True)
class Sample:
    """What one read of a sensor gave.

    ``fields`` are payload fields of sensors/README.md, "MQTT contract" (``ntu``, ``distance_in``
    ...);
    empty means nothing to publish this time (the counts may still say why).
    Rain comes as ``tips`` (tips since the last read, from counting edges) or as
    ``counter`` (a hardware counter's raw value, ``counter_bits`` wide when
    known); the node turns either into its own ``tips_total``.
    """

    fields: Mapping[str, float] = field(default_factory=dict)
    #: The reading's own time in Unix ms (a logger's card); None: the node's clock now.
    ts_ms: int | None = None
    tips: int | None = None
    counter: int | None = None
    counter_bits: int | None = None
    #: Driver state to commit with this sample (the csv driver's file offset).
    state: str | None = None
    #: Values outside the sensor's calibrated range, not published.
    out_of_range: int = 0
    #: Values thrown away as noise (a ping outside the range, a garbled frame).
    discarded: int = 0

    @property
    def publishes(self) -> bool:
        return bool(self.fields) or self.tips is not None or self.counter is not None


class Driver(ABC):
    """One sensor's hardware, read on demand."""

    #: Whether samples carry their own ``ts_ms`` (then a wrong system clock is no reason
    #: to stop reading; see ``sensors/clock.py``).
    own_timestamps: bool = False

    def restore(self, state: str | None) -> None:  # noqa: B027 - optional hook
        """The last ``Sample.state`` committed, given once before the first read."""

    @abstractmethod
    def read(self) -> Sequence[Sample]:
        """Read the sensor now; raise ``OSError`` (or the bus library's error) when it fails."""

    def wait_s(self) -> float | None:
        """Seconds until this driver has something to read; None: read every ``every_s``."""
        return None

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release the hardware."""


class SerialPort(Protocol):
    """What the serial drivers use of a ``serial.Serial`` (tests pass a fake)."""

    def read(self, size: int = 1) -> bytes: ...

    def reset_input_buffer(self) -> None: ...

    def close(self) -> None: ...
