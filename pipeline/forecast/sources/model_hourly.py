"""Model runs (model_netcdf.Scan) normalised to whole hours in SI units, band by band.

Every field is brought to the run's whole hours (states linear in time; accumulated
precipitation de-accumulated to the rate of each hour; flags and shares linear), the humidity,
phase and probability fields are derived, and runs are overlaid with the newest winning
wherever it has a value. The result feeds pipeline.common.grid.write row band by row band.
"""

from __future__ import annotations

import logging

import numpy as np

from contract import HOUR_S
from contract import Forecast as F
from pipeline.common import series
from pipeline.common.grid import one_point_poles
from pipeline.common.io import InputError
from pipeline.forecast import precipitation
from pipeline.forecast.sources.model_netcdf import Run, Scan

log = logging.getLogger("pipeline.forecast")
# Inputs every run needs; a tuple means any one of them.
REQUIRED_INPUTS = ("t2m", ("d2m", "r2"), "u10", "v10", "msl", "tcc", ("tp", "prate"))
REQUIRED_FIELDS = {
    n for need in REQUIRED_INPUTS for n in ((need,) if isinstance(need, str) else need)
}
FLAGS = ("crain", "csnow", "cfrzr", "cicep")
# Visibility is stored up to 10 mi (Dark Sky's cap); the server caps answers at 16 km in
# metric units and 10 mi in miles, so neither shows an odd 16.09 km or 9.94 mi.
VISIBILITY_CAP_M = 16_093.44
OPTIONAL = {"vis": F.VISIBILITY, "gust": F.GUST, "cape": F.CAPE}
TOTALS_ROWS = 64  # rows per read when summing accumulations
# GFS averages prate over 6-hour buckets from the run time (0-1 ... 0-6 h, then 6-7 h ...).
PRATE_BUCKET_S = 6 * HOUR_S


class HourlyFields:
    """The hourly grid's values for any band of rows; also the orography."""

    def __init__(self, scan: Scan):
        self.scan = scan
        self.lat, self.lon = scan.lat, scan.lon
        self.nlat, self.nlon = len(scan.lat), len(scan.lon)
        self.wraps = (
            bool(
                abs(self.nlon * (scan.lon[1] - scan.lon[0]) - 360.0)
                < 1e-3 * abs(scan.lon[1] - scan.lon[0])
            )
            if self.nlon > 1
            else False
        )
        self.run_hours: dict[int, np.ndarray] = {}
        for run in scan.runs:
            _check_inputs(run, scan)
            last = min(int(run.times(_present(run, need)[0])[-1]) for need in REQUIRED_INPUTS)
            self.run_hours[run.run_s] = series.hours(run.run_s, last)
            if len(self.run_hours[run.run_s]) < 2:
                raise InputError(
                    scan.files[0].parent, f"run {_iso(run.run_s)} covers less than one hour"
                )
        self.hours = series.hours(
            min(h[0] for h in self.run_hours.values()), max(h[-1] for h in self.run_hours.values())
        )
        present = {f for run in scan.runs for f in run.pieces}
        self.variables = list(F.REQUIRED) + [v for f, v in OPTIONAL.items() if f in present]
        self.half = precipitation.neighbourhood_cells(
            scan.lat[1] - scan.lat[0] if self.nlat > 1 else 1.0
        )
        self._resets: dict[int, np.ndarray] = {}
        self._known: dict[tuple[int, str], bool] = {}  # (run, field) -> has a value

    def runs(self) -> list[dict]:
        """Each run's time, model, fields and hourly coverage (for the manifest)."""
        return [
            {
                "run_time": _iso(run.run_s),
                "model": "+".join(sorted(run.models)),
                "fields": sorted(run.pieces),
                "first_hour": _iso(int(self.run_hours[run.run_s][0])),
                "last_hour": _iso(int(self.run_hours[run.run_s][-1])),
            }
            for run in self.scan.runs
        ]

    def band(self, start: int, stop: int) -> tuple[np.ndarray, dict[tuple[int, str], bool]]:
        """Values (nvar, nhours, stop - start, nlon) for the ascending rows [start, stop), and
        which required fields had a value there: grid.write's band function, free of side
        effects (it may run on another machine; merge_known takes the facts)."""
        known: dict[tuple[int, str], bool] = {}
        out = np.full(
            (len(self.variables), len(self.hours), stop - start, self.nlon),
            np.nan,
            dtype=np.float32,
        )
        for run in self.scan.runs:  # oldest first: a newer run overwrites where it has values
            hours = self.run_hours[run.run_s]
            k0 = int((hours[0] - self.hours[0]) // HOUR_S)
            values = self._run_band(run, start, stop, known)
            for i, name in enumerate(self.variables):
                new = values.pop(name, None)
                if new is not None:
                    np.copyto(out[i, k0 : k0 + len(hours)], new, where=~np.isnan(new))
        return one_point_poles(out, self.lat[start:stop], self.lon), known

    def prepare(self) -> None:
        """Compute what every band shares (each tp run's bucket resets, from the whole
        field) once, here, before the bands are handed out."""
        for run in self.scan.runs:
            if "tp" in run.pieces:
                self._reset_steps(run)

    def merge_known(self, facts: list[dict[tuple[int, str], bool] | None]) -> None:
        """Take in the bands' facts (band()) for check_known."""
        for known in facts:
            for key, value in (known or {}).items():
                self._known[key] = self._known.get(key, False) or value

    def check_known(self) -> None:
        """Refuse a run whose required field has no value anywhere (all NaN, e.g. a broken
        download): it would publish a forecast of nulls. Call after every band was read."""
        for run in self.scan.runs:
            for name in sorted(REQUIRED_FIELDS & set(run.pieces)):
                if not self._known.get((run.run_s, name), True):
                    piece = run.pieces[name][0]
                    raise InputError(
                        piece.path,
                        f"{piece.name} of run {_iso(run.run_s)} has no "
                        "values (every value is missing)",
                    )

    @staticmethod
    def _read(
        run: Run, name: str, a: int, b: int, known: dict[tuple[int, str], bool]
    ) -> np.ndarray:
        """run.read, noting in `known` whether a required field has any value."""
        values = run.read(name, a, b)
        if name in REQUIRED_FIELDS:
            key = (run.run_s, name)
            known[key] = known.get(key, False) or bool(np.isfinite(values).any())
        return values

    def read_orography(self, start: int, stop: int) -> np.ndarray:
        """Surface height (1, 1, rows, nlon); NaN when the inputs have no orography."""
        if self.scan.orography is None:
            return np.full((1, 1, stop - start, self.nlon), np.nan, dtype=np.float32)
        return one_point_poles(
            self.scan.orography.read(start, stop)[:1][None], self.lat[start:stop], self.lon
        )

    def _run_band(
        self, run: Run, start: int, stop: int, known: dict[tuple[int, str], bool]
    ) -> dict[str, np.ndarray]:
        """One run's hourly fields for the rows, computed on a halo of rows for the
        neighbourhood probability and trimmed (`known` as in _read)."""
        a, b = max(0, start - self.half), min(self.nlat, stop + self.half)
        hours = self.run_hours[run.run_s]

        def hourly(name: str) -> np.ndarray:
            return series.interpolate(run.times(name), self._read(run, name, a, b, known), hours)

        temperature = hourly("t2m")
        if "d2m" in run.pieces:
            dewpoint = hourly("d2m")
        else:
            dewpoint = precipitation.dewpoint_c(temperature, hourly("r2") * 100.0)
        rate = self._rate(run, a, b, hours, known)
        snow, sleet = self._phase(run, a, b, hours, temperature)
        values = {
            F.TEMPERATURE: temperature,
            F.DEWPOINT: np.minimum(dewpoint, temperature),
            F.WIND_U: hourly("u10"),
            F.WIND_V: hourly("v10"),
            F.PRESSURE: hourly("msl"),
            F.CLOUD: np.clip(hourly("tcc"), 0.0, 1.0),
            F.PRECIP: rate,
            F.PRECIP_PROBABILITY: precipitation.probability(rate, self.half, self.wraps),
            F.SNOW: snow,
            F.SLEET: sleet,
        }
        if "vis" in run.pieces:
            values[F.VISIBILITY] = np.clip(hourly("vis"), 0.0, VISIBILITY_CAP_M)
        if "gust" in run.pieces:
            values[F.GUST] = np.maximum(hourly("gust"), 0.0)
        if "cape" in run.pieces:
            values[F.CAPE] = np.maximum(hourly("cape"), 0.0)
        lo = start - a
        return {k: np.ascontiguousarray(v[:, lo : lo + stop - start]) for k, v in values.items()}

    def _rate(
        self, run: Run, a: int, b: int, hours: np.ndarray, known: dict[tuple[int, str], bool]
    ) -> np.ndarray:
        """mm/h for the hour starting at each hour: from accumulated tp when present (exact
        totals), else from prate: bucket averages (GFS) made accumulations, instantaneous
        rates interpolated in time."""
        if "tp" in run.pieces:
            times, accumulated = run.times("tp"), self._read(run, "tp", a, b, known)
            resets = self._reset_steps(run)
        elif all(p.averaged for p in run.pieces["prate"]):
            times, averages = run.times("prate"), self._read(run, "prate", a, b, known)
            if times[0] > run.run_s:  # nothing has accumulated at the run time
                times = np.concatenate([[run.run_s], times])
                averages = np.concatenate([np.zeros_like(averages[:1]), averages])
            accumulated, resets = series.bucket_averages_to_accumulations(
                times, run.run_s, averages, PRATE_BUCKET_S
            )
        else:
            rate = series.interpolate(
                run.times("prate"), self._read(run, "prate", a, b, known), hours
            )
            return np.maximum(rate, 0.0)
        if times[0] > run.run_s:  # accumulations start from zero at the run time
            times = np.concatenate([[run.run_s], times])
            accumulated = np.concatenate([np.zeros_like(accumulated[:1]), accumulated])
        amounts = series.deaccumulate(accumulated, resets)
        return series.interval_rates(times, amounts, hours)

    def _reset_steps(self, run: Run) -> np.ndarray:
        """Bucket resets of the run's tp, from the whole field's total at each step."""
        if run.run_s not in self._resets:
            times = run.times("tp")
            totals = np.zeros(len(times), dtype=np.float64)
            for a in range(0, self.nlat, TOTALS_ROWS):
                block = run.read("tp", a, min(self.nlat, a + TOTALS_ROWS))
                totals += np.nansum(block, axis=(1, 2), dtype=np.float64)
            resets = series.reset_steps(totals)
            if times[0] > run.run_s:
                times = np.concatenate([[run.run_s], times])
                resets = np.concatenate([[False], resets])
            resets = series.bucket_resets(times, run.run_s, resets)
            if resets.any():
                log.info("run %s: tp buckets reset at %d steps", _iso(run.run_s), resets.sum())
            self._resets[run.run_s] = resets
        return self._resets[run.run_s]

    @staticmethod
    def _phase(
        run: Run, a: int, b: int, hours: np.ndarray, temperature: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Snow and sleet shares: from the categorical flags (time-averaged to fractions) or
        the ptype codes (shares at the model steps, then in time), else the temperature."""
        if any(f in run.pieces for f in FLAGS):
            flags = [
                series.interpolate(run.times(f), run.read(f, a, b), hours)
                if f in run.pieces
                else np.zeros_like(temperature)
                for f in FLAGS
            ]
            snow, sleet = precipitation.shares_from_flags(*flags)
        elif "ptype" in run.pieces:
            times = run.times("ptype")
            snow, sleet = (
                series.interpolate(times, share, hours)
                for share in precipitation.shares_from_ptype(run.read("ptype", a, b))
            )
        else:
            snow = sleet = np.full_like(temperature, np.nan)
        return precipitation.fill_shares_by_temperature(snow, sleet, temperature)


def _present(run: Run, need: str | tuple[str, ...]) -> tuple[str, ...]:
    names = (need,) if isinstance(need, str) else need
    return tuple(n for n in names if n in run.pieces)


def _check_inputs(run: Run, scan: Scan) -> None:
    missing = [
        need if isinstance(need, str) else " or ".join(need)
        for need in REQUIRED_INPUTS
        if not _present(run, need)
    ]
    if missing:
        raise InputError(scan.files[0].parent, f"run {_iso(run.run_s)} lacks {', '.join(missing)}")


def _iso(unix_s: int) -> str:
    return np.datetime_as_string(np.datetime64(int(unix_s), "s"), unit="s") + "Z"
