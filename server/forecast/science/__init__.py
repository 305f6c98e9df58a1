"""Pure science of the forecast: sun, moon, units, weather."""
