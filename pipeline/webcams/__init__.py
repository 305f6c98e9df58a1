"""Webcams area: catalog -> tables, indexes, clusters, snapshots; a provider's image links."""

import contract
from pipeline.area import Builder
from pipeline.webcams import build

# A provider's image links expire within minutes: they are a part of their own, rebuilt
# alone (over the previous version's other files) when nothing else changed.
BUILDER = Builder(
    contract.Webcams.AREA,
    build.build,
    ("webcams", "webcam-links"),
    parts=(("catalog", ("webcams",)), ("links", ("webcam-links",))),
    update=build.update,
)
