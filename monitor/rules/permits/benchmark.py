"""The dewatering turbidity benchmark: a probe's weekly average against the permit's
NTU (EPA CGP 2022 Part 3.3.1; above it, corrective action under Part 5.2.2).

The permit asks for at least one turbidity sample a day from each dewatering
discharge point and compares the week's average with 50 NTU. A probe is no grab
sample: it reads every minute or so, 1440 readings a day. So each local day of
the site gives **one** value, the day's sample: the mean of that day's readings.
The mean, not the first reading nor the median, because it uses every reading
the probe took (a composite of the day, where the first reading is whatever the
water was at midnight), because one fouled reading among hundreds moves it by a
few hundredths of an NTU at most, and because it needs a sum and a count only
(a median would keep a whole day of readings in every hourly checkpoint). The
sum is in integer milli-NTU, so the value is the same whatever the order the
readings came in. A day with fewer readings than the rule's
``min_samples_per_day`` has no sample.

Weeks are the site's local calendar weeks, Monday 00:00 to the next Monday
00:00 in its time zone. Once event time passes a week's end (a reading of a
later week, or a tick), the week is judged on the days that have a sample:
their values are averaged, and above the benchmark one
``turbidity_benchmark_exceeded`` follows, at the week's end, per permit whose
benchmark watches the probe. A week with fewer sampled days than the permit
wants is still judged on the samples it has (a day without discharge has no
sample to take); a week without any is not judged at all.

Memory: the current week's days only, each a sum and a count (at most seven);
a week is judged when it is left, and nothing of it is kept after.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, timedelta
from fractions import Fraction
from typing import Any
from zoneinfo import ZoneInfo

from ...config import SensorConfig, SiteConfig
from ...contract.events import Fact, make_id
from ...contract.inputs import Reading
from ...contract.permit_events import TurbidityBenchmarkExceeded
from ...contract.times import iso
from ..active import end_of_local_day_ms, local_day
from ..family import FoldInputs
from .duties import permits_of

#: The turbidity family's integer unit (``rules/turbidity/contrast.py``), said again here:
#: importing that family from the permits family closes an import cycle through
#: ``rules/readout.py`` and the clocks family, which reads the permits' deadlines.
MILLI_PER_NTU = 1000


def milli(ntu: float) -> int:
    """NTU as integer milli-NTU, as the turbidity family counts them."""
    return round(ntu * MILLI_PER_NTU)

#: mean_ntu is reported, and compared with the benchmark, to the milli-NTU.
DIGITS = 3


@dataclass(frozen=True, slots=True)
class Watch:
    """One permit's benchmark on the probe: its NTU, what makes a day sampled, its part."""

    permit: str
    ntu: float
    min_samples_per_day: int
    section: str


@dataclass
class BenchmarkState:
    """The current week (its Monday, as a date ordinal) and its days: for each local
    date (ordinal), the sum of its readings in milli-NTU and how many there were."""

    week: int | None = None
    days: dict[int, tuple[int, int]] = field(default_factory=dict)


@dataclass(frozen=True)
class BenchmarkFold:
    """The fold of one dewatering turbidity probe (``timeline.Fold``)."""

    site: str
    sensor: str
    zone: ZoneInfo
    watches: tuple[Watch, ...]

    def initial(self) -> BenchmarkState:
        return BenchmarkState()

    def key(self, item: Reading) -> tuple[Any, ...]:
        # Two readings of one instant with different values are two inputs, so the
        # facts do not depend on which of them came first.
        return (item.ts_ms, 0, milli(item.ntu)) if item.ntu is not None else (item.ts_ms, 1, 0)

    def step(self, state: BenchmarkState, item: Reading, out: list[Fact]) -> None:
        if item.ntu is None:
            return
        day = local_day(self.zone, item.ts_ms)
        monday = (day - timedelta(days=day.weekday())).toordinal()
        if state.week is not None and monday > state.week:
            self._judge(state, out)
            state.days = {}
        state.week = monday
        total, count = state.days.get(day.toordinal(), (0, 0))
        state.days[day.toordinal()] = (total + milli(item.ntu), count + 1)

    def advance(self, state: BenchmarkState, now_ms: int, out: list[Fact]) -> None:
        """A week is judged once time passes its end, without waiting for a reading."""
        if state.week is not None and now_ms >= self._end_ms(state.week):
            self._judge(state, out)

    def _end_ms(self, week: int) -> int:
        """The next Monday's first instant at the site."""
        return end_of_local_day_ms(self.zone, date.fromordinal(week + 6)) + 1

    def _judge(self, state: BenchmarkState, out: list[Fact]) -> None:
        assert state.week is not None
        start_ms = end_of_local_day_ms(self.zone, date.fromordinal(state.week - 1)) + 1
        end_ms = self._end_ms(state.week)
        for watch in self.watches:
            values = [Fraction(total, count) for _, (total, count) in sorted(state.days.items())
                      if count >= watch.min_samples_per_day]
            if not values:
                continue
            mean_ntu = float(round(sum(values, Fraction(0)) / len(values) / MILLI_PER_NTU, DIGITS))
            if mean_ntu <= watch.ntu:
                continue
            week_from = iso(start_ms)
            out.append(Fact(self.site, end_ms, make_id(TurbidityBenchmarkExceeded.TYPE,
                                                       self.site, self.sensor, week_from,
                                                       watch.permit),
                            TurbidityBenchmarkExceeded(
                                sensor=self.sensor, week_from=week_from, week_to=iso(end_ms),
                                mean_ntu=mean_ntu, samples=len(values),
                                benchmark_ntu=watch.ntu, permit=watch.permit,
                                section=watch.section)))

    def copy(self, state: BenchmarkState) -> BenchmarkState:
        return BenchmarkState(state.week, dict(state.days))

    def dump(self, state: BenchmarkState) -> Any:
        return {"week": state.week, "days": [[d, t, n] for d, (t, n) in state.days.items()]}

    def load(self, data: Any) -> BenchmarkState:
        return BenchmarkState(data["week"], {int(d): (int(t), int(n)) for d, t, n in data["days"]})


def watches(site: SiteConfig) -> dict[str, tuple[Watch, ...]]:
    """The site's dewatering turbidity probes, each with the benchmarks that watch it.

    A listed id that is no turbidity probe of the site watches nothing here
    (``check-config`` says so)."""
    found: dict[str, list[Watch]] = {}
    for permit in permits_of(site):
        duty = permit.benchmark
        if duty is None:
            continue
        for sensor_id in duty.sensors:
            sensor = site.sensor(sensor_id)
            if sensor is not None and sensor.kind == "turbidity":
                found.setdefault(sensor_id, []).append(Watch(
                    permit.key, duty.ntu, duty.min_samples_per_day, duty.cite.section))
    return {sensor_id: tuple(w) for sensor_id, w in found.items()}


def folds(site: SiteConfig) -> dict[str, FoldInputs]:
    """``permit:benchmark@<probe>``: one fold per dewatering probe."""
    return {f"permit:benchmark@{sensor_id}": (BenchmarkFold(site.id, sensor_id, site.zone, w),
                                              (sensor_id,), ())
            for sensor_id, w in watches(site).items()}


def routes(site: SiteConfig, sensor: SensorConfig) -> tuple[str, ...]:
    """A dewatering probe's readings go to its benchmark fold."""
    return (f"permit:benchmark@{sensor.id}",) if sensor.id in watches(site) else ()
