"""Gazetteer sources: real GeoNames dumps and the packaged default."""
