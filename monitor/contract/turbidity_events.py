"""The turbidity events (§ 134-8C): a contrast, its probes' faults, and the times it
could not be checked. Bodies like the rest of the vocabulary (``events.py`` lists
them in ``EVENT_TYPES``); concluded by ``monitor/rules/turbidity/turbidity.py`` and
``monitor/rules/turbidity/unmonitored.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from .body import Body


@dataclass(frozen=True, slots=True, kw_only=True)
class TurbidityContrast(Body):
    """§ 134-8C: the contrast with background was ``exceeded`` long enough, or ``cleared``.

    ``basis`` ``background``: downstream against the upstream probe (``limit_ntu`` is
    the allowed increase); ``absolute``: no usable background, downstream above the
    pair's ``absolute_ntu`` (``limit_ntu``), and the upstream fields are null."""

    TYPE: ClassVar[str] = "turbidity_contrast"
    pair: str
    state: Literal["exceeded", "cleared"]
    basis: Literal["background", "absolute"]
    started_at: str
    upstream_ntu: float | None
    downstream_ntu: float
    delta_ntu: float | None
    limit_ntu: float
    upstream_at: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class BackgroundMissing(Body):
    TYPE: ClassVar[str] = "background_missing"
    sensor: str
    pair: str
    downstream_ntu: float


@dataclass(frozen=True, slots=True, kw_only=True)
class Pegged(Body):
    TYPE: ClassVar[str] = "pegged"
    sensor: str
    pair: str
    ntu: float
    max_ntu: float


@dataclass(frozen=True, slots=True, kw_only=True)
class ProbesSuspect(Body):
    """The upstream (background) probe read more than ``suspect_delta_ntu`` above the
    downstream one for ``hours`` (at least ``suspect_hours``) from ``since``: swapped
    probes, or a probe in a plume. The contrast of § 134-8C cannot be trusted then."""

    TYPE: ClassVar[str] = "probes_suspect"
    pair: str
    upstream_ntu: float
    downstream_ntu: float
    hours: float
    since: str
    upstream: str
    downstream: str
    suspect_delta_ntu: float


#: Why a pair's contrast is unknown (``rules/turbidity/turbidity.py``).
UnknownReason = Literal["background_missing", "downstream_stale", "downstream_pegged"]


@dataclass(frozen=True, slots=True, kw_only=True)
class UncheckedContrast(Body):
    """The fields of the two notices of a contrast that cannot be checked (below)."""

    pair: str
    reason: UnknownReason
    since: str
    upstream: str
    downstream: str
    absolute_ntu: float | None


@dataclass(frozen=True, slots=True, kw_only=True)
class TurbidityUnmonitored(UncheckedContrast):
    """§ 134-8C cannot be checked: the pair's contrast has been unknown for
    ``unknown_notice_hours`` of the site's active period, and a person must look.

    ``reason`` is why it is unknown at the notice: ``background_missing`` (no usable
    upstream reading: none, too old, or pegged), ``downstream_stale`` (no downstream
    reading for the probe's ``stale_after_minutes``, or none yet) or
    ``downstream_pegged`` (the downstream probe at its full scale); ``since`` when it
    became unknown (for a probe not heard from since monitoring began: when it became
    stale). The pair is then *partly* watched at most: with the background missing, a
    downstream reading above ``absolute_ntu`` is still a ``turbidity_contrast``
    (``basis: absolute``), so ``absolute_ntu`` names that level (null when that rule
    is off, or the reason is another); a pegged downstream reading is still compared
    as read, which can only understate the contrast. Below those, an increase over
    natural conditions goes unseen."""

    TYPE: ClassVar[str] = "turbidity_unmonitored"


@dataclass(frozen=True, slots=True, kw_only=True)
class TurbidityMonitored(UncheckedContrast):
    """The contrast of a pair that was ``turbidity_unmonitored`` is known again from
    ``known_at`` (the event's time); the other fields are the notice's."""

    TYPE: ClassVar[str] = "turbidity_monitored"
    known_at: str


@dataclass(frozen=True, slots=True, kw_only=True)
class TurbidityUnknown(Body):
    """A run of event time in which a pair's contrast was unknown for one ``reason``
    (internal: ``rules/turbidity/unmonitored.py`` turns the runs into the notices). ``since``
    null: from before the pair's first reading; ``until`` null: still unknown."""

    TYPE: ClassVar[str] = "_turbidity_unknown"
    pair: str
    reason: UnknownReason
    since: str | None
    until: str | None
