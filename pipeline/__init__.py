"""Offline batch build: raw inputs in datasets/ become versioned artifacts in build/."""
