"""Geocoding area: gazetteer source -> tables and server indexes."""

import contract
from pipeline.area import Builder
from pipeline.geocoding import build

BUILDER = Builder(contract.Geocoding.AREA, build.build, ("geonames",))
