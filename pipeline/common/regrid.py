"""One grid's fields at another grid's cell centres, interpolated as the server interpolates at
a point (server/artifacts/grid.py, PointGrid.series): bilinear between the four surrounding cells, a cell
whose value is NaN dropping out and the others' weights renormalised, NaN only where all four
are unknown. Points beyond the outer cell centres take the edge values."""

from __future__ import annotations

import numpy as np


class Bilinear:
    """Interpolation from a grid (a contract.Grid spec's axes) to the cells lat x lon."""

    def __init__(self, source: dict, lat: np.ndarray, lon: np.ndarray):
        nlat, nlon, dlon = source["nlat"], source["nlon"], source["dlon"]
        y = np.clip(
            (np.asarray(lat, dtype=np.float64) - source["lat0"]) / source["dlat"], 0.0, nlat - 1.0
        )
        i0 = np.minimum(y.astype(np.intp), max(nlat - 2, 0))
        i1, fy = np.minimum(i0 + 1, nlat - 1), y - i0
        x = ((np.asarray(lon, dtype=np.float64) - source["lon0"]) % 360.0) / dlon
        if source["wraps"]:
            j0 = np.floor(x).astype(np.intp) % nlon
            j1, fx = (j0 + 1) % nlon, x - np.floor(x)
        else:
            # just west of lon0 (within half a cell) counts as west of the first column
            x = np.where(x > nlon - 1 + (360.0 / dlon - nlon + 1) / 2, x - 360.0 / dlon, x)
            x = np.clip(x, 0.0, nlon - 1.0)
            j0 = np.minimum(x.astype(np.intp), max(nlon - 2, 0))
            j1, fx = np.minimum(j0 + 1, nlon - 1), x - j0
        # The source rows needed: a field passed to __call__ holds rows [first_row, stop_row).
        self.first_row, self.stop_row = int(i0.min()), int(i1.max()) + 1
        self.rows = (i0 - self.first_row, i1 - self.first_row)
        self.cols = (j0, j1)
        wy, wx = (1.0 - fy, fy), (1.0 - fx, fx)
        self.weights = np.stack([wy[a][:, None] * wx[b][None, :] for a in (0, 1) for b in (0, 1)])

    def __call__(self, field: np.ndarray) -> np.ndarray:
        """The field at the cells: (..., len(lat), len(lon)) float32."""
        # field is (..., source rows [first_row, stop_row), source columns).
        corners = np.stack(
            [field[..., self.rows[a], :][..., self.cols[b]] for a in (0, 1) for b in (0, 1)]
        ).astype(np.float64)
        known = ~np.isnan(corners)
        weights = self.weights.reshape(4, *(1,) * (field.ndim - 2), *self.weights.shape[1:])
        weights = np.where(known, weights, 0.0)
        total = weights.sum(axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            out = (np.where(known, corners, 0.0) * weights).sum(axis=0) / total
        out[total <= 1e-12] = np.nan
        return out.astype(np.float32)
