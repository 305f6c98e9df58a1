"""CAMS sources: Europe, global and the generated default."""
