"""Forecast sources: model runs (GRIB2, NetCDF), alerts, generated defaults."""
