"""Geocoding benchmarks: lookup by id, reverse, countries and search under load, search and
reverse latency in-process (no HTTP), and with --heavy a full-size GeoNames build, its daily
update and a server over it (bench/geonames_full.py). The plug-in interface is in bench/run.py."""

from __future__ import annotations

import random
import shutil
import statistics
import tempfile
import urllib.parse
from pathlib import Path

from bench.harness import Context, CpuMeter, Target, Workload, log, now_s, percentile, table

AREA = "geocoding"

# ---- targets (from the issue) ---------------------------------------------------------------

RATIO_TARGET = 0.6  # lookup by id, reverse, countries, country detail vs /health
# Against the bare aiohttp app (issue 27): lookup by id and countries, reverse, the search mix
# (whose p99 at 32 connections is bounded too).
BARE_TARGET, REVERSE_BARE, SEARCH_BARE, SEARCH_P99_MS = 0.6, 0.5, 0.1, 30.0
SEARCH_P50_MS = 3.0
BUILD_S = 60.0  # issue 2's default build, when it was geocoding alone
# Issue 25, over a full-size allCountries (about 5 million places; --heavy):
UPDATE_S = 120.0  # a daily GeoNames update against the held dumps
UPDATE_BYTES = 5_000_000  # ... moving at most 5 MB
FULL_BUILD_PEAK_MIB = 3.1 * 1024  # the full-size build's peak as first measured: hold it
FULL_READY_S = 30.0
FULL_WORKER_USS_MIB = 1.5 * 1024  # "1.5 GB" private memory per worker, read as GiB
FULL_SEARCH_P50_MS = 5.0
FULL_REVERSE_P50_MS = 1.0

# ---- the search query mix -------------------------------------------------------------------
# (label, query parameters). Every label is unique; the HTTP rotation and the in-process run use
# the same list.

SEARCH_MIX: list[tuple[str, dict[str, str]]] = []


def _q(text: str, **extra: str) -> None:
    label = text + "".join(f" [{k}={v}]" for k, v in extra.items())
    SEARCH_MIX.append((label, {"q": text, **extra}))


for _text in (
    # capitals and large cities, English names
    "London",
    "Paris",
    "Berlin",
    "Madrid",
    "Rome",
    "Tokyo",
    "Beijing",
    "Moscow",
    "Cairo",
    "New York",
    "Los Angeles",
    "Mumbai",
    "Istanbul",
    "Buenos Aires",
    "Sydney",
    "Mexico City",
    "Toronto",
    "Bangkok",
    "Lagos",
    "Jakarta",
    # local names
    "München",
    "Wien",
    "Roma",
    "Praha",
    "Warszawa",
    "Köln",
    "Genève",
    "Lisboa",
    "København",
    "Firenze",
    "Bruxelles",
    "São Paulo",
    "Zürich",
    "Москва",
    "東京",
    # alternate names
    "Zurigo",
    "Muenchen",
    "Peking",
    "Bombay",
    "Mailand",
    "Londres",
    "Nueva York",
    "Cologne",
    # typos
    "Zurihc",
    "Londn",
    "Amsterdma",
    "Nwe York",
    "Barcelnoa",
    "Frankfrut",
    "Edinbrugh",
    "Berln",
    # accents omitted
    "zurich",
    "sao paulo",
    "geneve",
    "malmo",
    "bogota",
    "reykjavik",
    "koln",
    "medellin",
    # prefixes
    "new yo",
    "lond",
    "san fr",
    "amst",
    "ber",
    "rio de j",
    "kuala l",
    # context after a comma
    "paris, texas",
    "san jose, costa rica",
    "portland, oregon",
    "cambridge, ma",
    "london, ontario",
    "springfield, il",
    "frankfurt, brandenburg",
):
    _q(_text)
for _text in (
    "springfield illinois",
    "paris texas",
    "cambridge massachusetts",
    "san jose california",
    "portland maine",
    "zurich switzerland",
):
    _q(_text, field="all")
_q("Springfield", country="US")
_q("San Jose", country="CR")


# ---- the hooks ------------------------------------------------------------------------------


def prepare(ctx: Context) -> dict:
    """Search in-process (before any server runs) and find ids the lookup endpoint refuses."""
    from server.geocoding.index import GeocodingIndex

    t0 = now_s()
    index = GeocodingIndex(ctx.version_dir)
    load_s = now_s() - t0
    log(f"index loaded in-process in {load_s:.2f} s; searching for {ctx.args.search_seconds:.0f} s")
    search = inprocess_search(index, ctx.args.search_seconds, 500)
    search["index_load_s"] = round(load_s, 3)
    reverse = inprocess_reverse(index, ctx.args.search_seconds, ctx.seed)
    refused = unlookupable_ids(index)
    warnings = []
    if refused:
        warnings.append(
            f"{len(refused)} ids in the index are refused (400) by GET /geocoding/lookup?id= "
            f"because they do not match its id pattern, e.g. {', '.join(refused[:5])}; they "
            "are left out of the lookup rotation"
        )
    return {
        "inprocess_search": search,
        "inprocess_reverse": reverse,
        "search_queries": [label for label, _ in SEARCH_MIX],
        "unlookupable_ids": refused,
        "warnings": warnings,
    }


def heavy(ctx: Context) -> dict:
    """A full-size allCountries (bench/geonames_full.py): a day's update, the build, a server
    (--allcountries DIR reuses a bench/make_allcountries.py folder; else one is generated)."""
    from bench import geonames_full

    scratch = Path(tempfile.mkdtemp(prefix="geonames-full-"))
    try:
        free = shutil.disk_usage(scratch).free / 2**30
        if free < 12:
            return {
                "skipped": f"only {free:.0f} GiB free in {scratch.parent}; 12 GiB needed",
                "warnings": ["geocoding heavy run skipped: not enough disk"],
            }
        return geonames_full.measure(
            scratch, ctx.args.allcountries, seconds=ctx.args.search_seconds, seed=ctx.seed
        )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def workloads(ctx: Context) -> list[Workload]:
    """1000 ids, 1000 points (near places and anywhere), every country, the search mix."""
    from server.geocoding.handlers import ID
    from server.geocoding.index import GeocodingIndex

    index = GeocodingIndex(ctx.version_dir)
    rng = random.Random(ctx.seed)
    rows = rng.sample(range(index.size), min(1000, index.size))
    ids = [index.ids[r].decode() for r in rows]
    ids = [i for i in ids if ID.match(i)]  # see unlookupable_ids(): reported separately
    coords = []
    for r in rows[:800]:  # near real places, jittered
        coords.append(
            (
                float(index.lat[r]) + rng.uniform(-0.05, 0.05),
                float(index.lon[r]) + rng.uniform(-0.05, 0.05),
            )
        )
    for _ in range(200):  # anywhere, oceans included
        coords.append((rng.uniform(-89.9, 89.9), rng.uniform(-179.9, 179.9)))
    rng.shuffle(coords)
    codes = list(index.country_codes)
    rng.shuffle(codes)
    searches = ["/geocoding/lookup?" + urllib.parse.urlencode(p) for _, p in SEARCH_MIX]
    return [
        Workload(
            AREA,
            "lookup_id",
            "lookup ?id= (1000 ids)",
            [f"/geocoding/lookup?id={i}" for i in ids],
            ratio_target=RATIO_TARGET,
            bare_target=BARE_TARGET,
        ),
        Workload(
            AREA,
            "lookup_id_key",
            "lookup ?id= with a key (1000 ids)",
            [f"/geocoding/lookup?id={i}&api_key={ctx.api_key}" for i in ids],
        ),
        Workload(
            AREA,
            "reverse",
            "reverse limit=1 (1000 pts)",
            [f"/geocoding/reverse?lat={lat:.5f}&lon={lon:.5f}&limit=1" for lat, lon in coords],
            ratio_target=RATIO_TARGET,
            bare_target=REVERSE_BARE,
        ),
        Workload(
            AREA,
            "countries",
            "countries (list)",
            ["/geocoding/countries"],
            ratio_target=RATIO_TARGET,
            bare_target=BARE_TARGET,
        ),
        Workload(
            AREA,
            "country",
            f"countries/{{code}} ({len(codes)})",
            [f"/geocoding/countries/{c}" for c in codes],
            ratio_target=RATIO_TARGET,
            bare_target=BARE_TARGET,
        ),
        Workload(
            AREA,
            "search",
            f"search ?q= ({len(searches)} queries)",
            searches,
            bare_target=SEARCH_BARE,
            p99_target_ms=SEARCH_P99_MS,
        ),
        Workload(AREA, "search_c1", "search ?q=, 1 connection", searches, connections=1),
    ]


def targets(report: dict) -> list[Target]:
    """Search p50 in-process (the target) and over one HTTP connection (for information), and
    geocoding's share of the build. The throughput ratios come from the workloads."""
    out = []
    build_s = (report.get("build") or {}).get("area_s", {}).get(AREA)
    if build_s is not None:
        out.append(
            Target(
                "geocoding build (from the build log)",
                build_s,
                "s",
                f"<= {BUILD_S:g} s",
                build_s <= BUILD_S,
            )
        )
    search = report["areas"][AREA].get("inprocess_search")
    if search:
        out.append(
            Target(
                "search p50, in-process",
                search["p50_ms"],
                "ms",
                f"<= {SEARCH_P50_MS:g} ms",
                search["p50_ms"] <= SEARCH_P50_MS,
            )
        )
    reverse = report["areas"][AREA].get("inprocess_reverse")
    if reverse:
        out.append(
            Target(
                "reverse p50, in-process (info)",
                reverse["p50_ms"],
                "ms",
                f"<= {FULL_REVERSE_P50_MS:g} ms",
                reverse["p50_ms"] <= FULL_REVERSE_P50_MS,
                "the default build",
            )
        )
    out += full_size_targets(report["areas"][AREA].get("heavy") or {})
    one = next((s for s in report["servers"] if s["workers"] == 1 and "ready_s" in s), None)
    c1 = (
        next((r for r in one["endpoints"] if r["area"] == AREA and r["name"] == "search_c1"), None)
        if one
        else None
    )
    if c1:
        out.append(
            Target(
                "search p50, HTTP 1 connection (info)",
                c1["p50_ms"],
                "ms",
                f"<= {SEARCH_P50_MS:g} ms",
                c1["p50_ms"] <= SEARCH_P50_MS,
                "includes HTTP (long typo passes: a thread)",
            )
        )
    return out


def full_size_targets(heavy: dict) -> list[Target]:
    """Issue 25's targets over the full-size build (--heavy)."""
    if not heavy.get("build"):
        return []
    update, build, server, fast = (
        heavy["update"],
        heavy["build"],
        heavy["server"],
        heavy["inprocess"],
    )
    peak = max(build["peak_rss_mib"], build["tree_peak_rss_mib"])
    uss = max(server["worker_uss_mib"])
    rows = [
        ("full size: daily update (fetch)", update["fetch_s"], "s", UPDATE_S, ""),
        (
            "full size: daily update bytes",
            update["bytes_moved"],
            "B",
            UPDATE_BYTES,
            f"{update['modified_rows']:,} modified and {update['deleted_rows']:,} deleted rows "
            "of each kind",
        ),
        ("full size: build peak RSS", peak, "MiB", FULL_BUILD_PEAK_MIB, f"{build['wall_s']:.0f} s"),
        ("full size: server ready (2 workers)", server["ready_s"], "s", FULL_READY_S, ""),
        (
            "full size: private memory (USS) per worker",
            uss,
            "MiB",
            FULL_WORKER_USS_MIB,
            "largest of the workers",
        ),
        (
            "full size: search p50, in-process",
            fast["search_p50_ms"],
            "ms",
            FULL_SEARCH_P50_MS,
            f"{fast['places']:,} places",
        ),
        (
            "full size: reverse p50, in-process",
            fast["reverse_p50_ms"],
            "ms",
            FULL_REVERSE_P50_MS,
            "limit 1",
        ),
    ]
    return [
        Target(name, value, unit, f"<= {goal:g} {unit}", value <= goal, note)
        for name, value, unit, goal, note in rows
    ]


def print_section(report: dict) -> None:
    """The in-process search figures, query by query."""
    search = report["areas"][AREA].get("inprocess_search")
    if not search:
        return
    print(
        f"\n## Search in-process (no HTTP), {len(SEARCH_MIX)} queries x {search['rounds']} "
        f"rounds, limit=10"
    )
    print(
        table(
            ["query", "median ms", "max ms", "cold ms", "results", "top result"],
            [
                [
                    q["query"],
                    f"{q['median_ms']:.3f}",
                    f"{q['max_ms']:.2f}",
                    f"{q['cold_ms']:.2f}",
                    q["results"],
                    q["top"],
                ]
                for q in search["per_query"]
            ],
            "lrrrrl",
        )
    )
    print(
        f"overall: p50 {search['p50_ms']:.3f} ms, p99 {search['p99_ms']:.3f} ms, "
        f"mean {search['mean_ms']:.3f} ms over {search['samples']} searches; other "
        f"processes used {search['cpu']['other_pct']:.0f}% of a core meanwhile"
    )
    heavy = report["areas"][AREA].get("heavy") or {}
    if heavy.get("update"):
        update, fast = heavy["update"], heavy["inprocess"]
        print(f"\n## Full size ({fast['places']:,} places, artifacts {heavy['artifacts_gib']} GiB)")
        print(
            table(
                ["day file", "bytes"],
                [[n, f"{b:,}"] for n, b in update["day_file_bytes"].items()],
                "lr",
            )
        )
        print(
            f"update: {update['fetch_s']} s, {update['bytes_moved']:,} bytes moved in "
            f"{update['requests']} requests; search p50/p99 {fast['search_p50_ms']}/"
            f"{fast['search_p99_ms']} ms, reverse p50/p99 {fast['reverse_p50_ms']}/"
            f"{fast['reverse_p99_ms']} ms in-process; workers' USS "
            f"{heavy['server']['worker_uss_mib']} MiB"
        )


# ---- helpers --------------------------------------------------------------------------------


def unlookupable_ids(index) -> list[str]:
    """Ids in the index that GET /geocoding/lookup?id= refuses with 400 (its id pattern)."""
    from server.geocoding.handlers import ID

    return [i for i in (raw.decode() for raw in index.ids) if not ID.match(i)]


def inprocess_reverse(index, max_seconds: float, seed: int) -> dict:
    """Latency of reverse geocoding (limit 1, the default language's JSON, as the handler
    answers) at 1000 points: 800 near places, 200 anywhere."""
    rng = random.Random(seed)
    rows = rng.sample(range(index.size), min(800, index.size))
    points = [
        (
            float(index.lat[r]) + rng.uniform(-0.05, 0.05),
            float(index.lon[r]) + rng.uniform(-0.05, 0.05),
        )
        for r in rows
    ]
    points += [(rng.uniform(-89.9, 89.9), rng.uniform(-179.9, 179.9)) for _ in range(200)]
    points = [(max(-90.0, min(90.0, lat)), lon) for lat, lon in points]

    def once(lat: float, lon: float) -> bytes:
        row, _ = index.nearest(lat, lon, 1)[0]
        return index.location_json(row, detail=True)

    for lat, lon in points[:50]:  # compiled code and caches warm
        once(lat, lon)
    samples: list[float] = []
    started = now_s()
    while now_s() - started < max_seconds and len(samples) < 100 * len(points):
        for lat, lon in points:
            t0 = now_s()
            once(lat, lon)
            samples.append((now_s() - t0) * 1000)
    return {
        "samples": len(samples),
        "p50_ms": round(percentile(samples, 50), 4),
        "p99_ms": round(percentile(samples, 99), 4),
    }


def inprocess_search(index, max_seconds: float, max_rounds: int) -> dict:
    """Latency of each query of SEARCH_MIX, cold and then repeated for max_seconds."""
    from server.geocoding.search import search

    def run(params: dict[str, str]) -> list[int]:
        return search(
            index,
            params["q"],
            field_all=params.get("field") == "all",
            country=params.get("country"),
            limit=10,
        )

    cold = {}
    for label, params in SEARCH_MIX:  # first call per query (caches cold)
        t0 = now_s()
        run(params)
        cold[label] = (now_s() - t0) * 1000
    for _ in range(2):
        for _, params in SEARCH_MIX:
            run(params)
    samples: dict[str, list[float]] = {label: [] for label, _ in SEARCH_MIX}
    meter = CpuMeter()
    started, rounds = now_s(), 0
    while rounds < max_rounds and now_s() - started < max_seconds:
        for label, params in SEARCH_MIX:
            t0 = now_s()
            run(params)
            samples[label].append((now_s() - t0) * 1000)
        rounds += 1
    per_query = []
    for label, params in SEARCH_MIX:
        rows = run(params)
        top = f"{index.name[rows[0]].as_py()}, {index.cc[rows[0]].as_py()}" if rows else "-"
        per_query.append(
            {
                "query": label,
                "median_ms": round(statistics.median(samples[label]), 3),
                "max_ms": round(max(samples[label]), 3),
                "cold_ms": round(cold[label], 3),
                "results": len(rows),
                "top": top,
            }
        )
    cpu = meter.stop()
    everything = [v for values in samples.values() for v in values]
    return {
        "cpu": cpu,
        "rounds": rounds,
        "samples": len(everything),
        "p50_ms": round(percentile(everything, 50), 3),
        "p99_ms": round(percentile(everything, 99), 3),
        "mean_ms": round(statistics.fmean(everything), 3),
        "per_query": per_query,
    }
