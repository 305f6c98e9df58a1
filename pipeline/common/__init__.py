"""What every area's build shares: writers, publishing, grids, geometry."""
