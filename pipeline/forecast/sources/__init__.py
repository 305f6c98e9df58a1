"""Forecast sources: model runs (NetCDF), alerts, generated defaults."""
