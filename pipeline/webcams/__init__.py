"""Webcams area: catalog -> tables, indexes, clusters, snapshots."""

import contract
from pipeline.area import Builder
from pipeline.webcams import build

BUILDER = Builder(contract.Webcams.AREA, build.build, ("webcams",))
