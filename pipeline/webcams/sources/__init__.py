"""Webcam catalog sources: a real catalog and the generated default."""
