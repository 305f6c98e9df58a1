"""The `webcams` source: `python -m pipeline fetch webcams`.

Two kinds of input in one run: the provider's catalog and its image links, when
WEATHERAPI_WINDY_API_KEY is set (provider.py; WEATHERAPI_WINDY_BASE_URL or --base-url for a
mirror), and the current image of every camera the operator owns (owned.py). A camera that
does not answer is marked, not a failure; a refused key or an unreachable provider is.
"""

from __future__ import annotations

import time
from pathlib import Path

from pipeline.fetch.lock import exclusive
from pipeline.fetch.source import FetchOptions, FetchReport, base_url
from pipeline.webcams.fetch import owned, provider


class WebcamsSource:
    """See the module's docstring."""

    name = "webcams"
    area = "webcams"
    base_url_env = "WEATHERAPI_WINDY_BASE_URL"
    default_base_url = provider.API
    keep_runs = 1  # no runs: prune has nothing to drop

    def __init__(
        self,
        provider_config: provider.ProviderConfig | None = None,
        owned_config: owned.OwnedConfig | None = None,
    ):
        self.provider_config, self.owned_config = provider_config, owned_config

    def held_runs(self, datasets: Path) -> list[str]:
        return []

    def prune(self, datasets: Path, keep: int) -> list[str]:
        return []  # the history window prunes the owned cameras' images

    async def fetch(self, options: FetchOptions) -> FetchReport:
        """One run over the provider and the owned cameras."""
        started = time.monotonic()
        report = FetchReport(self.name)
        provider_config = self.provider_config or provider.ProviderConfig.from_env()
        owned_config = self.owned_config or owned.OwnedConfig.from_env()
        cameras = owned.cameras(options.datasets)
        if options.dry_run:
            if provider.key():
                report.planned.append(
                    f"{base_url(self, options)}{provider.PATH} "
                    f"({', '.join(provider_config.countries) or 'all'})"
                )
            report.planned += [c.url for c in cameras[: owned_config.per_run]]
            report.files = len(report.planned)
            return report
        if provider.key() is None:
            report.notes.append(f"windy: {provider.KEY_ENV} unset: no provider catalog")
        with exclusive(options.datasets / "webcams-cache" / ".lock", "webcams"):
            changed = await provider.fetch(
                base_url(self, options), options.datasets, provider_config, report
            )
            stored = await owned.fetch(options.datasets, owned_config, report)
        report.files = stored + int(changed)
        report.changed = changed or stored > 0
        report.seconds = time.monotonic() - started
        return report


SOURCE = WebcamsSource()
