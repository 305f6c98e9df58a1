"""Geocoding benchmarks: lookup by id, reverse, countries and search under load, and search
latency in-process (no HTTP) over the same query mix. The plug-in interface is in bench/run.py."""

from __future__ import annotations

import random
import statistics
import urllib.parse

from bench.harness import Context, CpuMeter, Target, Workload, log, now_s, percentile, table

AREA = "geocoding"

# ---- targets (from the issue) ---------------------------------------------------------------

RATIO_TARGET = 0.6           # lookup by id, reverse, countries, country detail vs /health
SEARCH_P50_MS = 3.0
BUILD_S = 60.0               # issue 2's default build, when it was geocoding alone

# ---- the search query mix -------------------------------------------------------------------
# (label, query parameters). Every label is unique; the HTTP rotation and the in-process run use
# the same list.

SEARCH_MIX: list[tuple[str, dict[str, str]]] = []


def _q(text: str, **extra: str) -> None:
    label = text + "".join(f" [{k}={v}]" for k, v in extra.items())
    SEARCH_MIX.append((label, {"q": text, **extra}))


for _text in (
    # capitals and large cities, English names
    "London", "Paris", "Berlin", "Madrid", "Rome", "Tokyo", "Beijing", "Moscow", "Cairo",
    "New York", "Los Angeles", "Mumbai", "Istanbul", "Buenos Aires", "Sydney", "Mexico City",
    "Toronto", "Bangkok", "Lagos", "Jakarta",
    # local names
    "München", "Wien", "Roma", "Praha", "Warszawa", "Köln", "Genève", "Lisboa", "København",
    "Firenze", "Bruxelles", "São Paulo", "Zürich", "Москва", "東京",
    # alternate names
    "Zurigo", "Muenchen", "Peking", "Bombay", "Mailand", "Londres", "Nueva York", "Cologne",
    # typos
    "Zurihc", "Londn", "Amsterdma", "Nwe York", "Barcelnoa", "Frankfrut", "Edinbrugh", "Berln",
    # accents omitted
    "zurich", "sao paulo", "geneve", "malmo", "bogota", "reykjavik", "koln", "medellin",
    # prefixes
    "new yo", "lond", "san fr", "amst", "ber", "rio de j", "kuala l",
    # context after a comma
    "paris, texas", "san jose, costa rica", "portland, oregon", "cambridge, ma",
    "london, ontario", "springfield, il", "frankfurt, brandenburg",
):
    _q(_text)
for _text in ("springfield illinois", "paris texas", "cambridge massachusetts",
              "san jose california", "portland maine", "zurich switzerland"):
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
    log(f"index loaded in-process in {load_s:.2f} s; searching for "
        f"{ctx.args.search_seconds:.0f} s")
    search = inprocess_search(index, ctx.args.search_seconds, 500)
    search["index_load_s"] = round(load_s, 3)
    refused = unlookupable_ids(index)
    warnings = []
    if refused:
        warnings.append(
            f"{len(refused)} ids in the index are refused (400) by GET /geocoding/lookup?id= "
            f"because they do not match its id pattern, e.g. {', '.join(refused[:5])}; they "
            "are left out of the lookup rotation")
    return {"inprocess_search": search, "search_queries": [label for label, _ in SEARCH_MIX],
            "unlookupable_ids": refused, "warnings": warnings}


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
        coords.append((float(index.lat[r]) + rng.uniform(-0.05, 0.05),
                       float(index.lon[r]) + rng.uniform(-0.05, 0.05)))
    for _ in range(200):  # anywhere, oceans included
        coords.append((rng.uniform(-89.9, 89.9), rng.uniform(-179.9, 179.9)))
    rng.shuffle(coords)
    codes = list(index.country_codes)
    rng.shuffle(codes)
    searches = ["/geocoding/lookup?" + urllib.parse.urlencode(p) for _, p in SEARCH_MIX]
    return [
        Workload(AREA, "lookup_id", "lookup ?id= (1000 ids)",
                 [f"/geocoding/lookup?id={i}" for i in ids], ratio_target=RATIO_TARGET),
        Workload(AREA, "reverse", "reverse limit=1 (1000 pts)",
                 [f"/geocoding/reverse?lat={lat:.5f}&lon={lon:.5f}&limit=1"
                  for lat, lon in coords], ratio_target=RATIO_TARGET),
        Workload(AREA, "countries", "countries (list)", ["/geocoding/countries"],
                 ratio_target=RATIO_TARGET),
        Workload(AREA, "country", f"countries/{{code}} ({len(codes)})",
                 [f"/geocoding/countries/{c}" for c in codes], ratio_target=RATIO_TARGET),
        Workload(AREA, "search", f"search ?q= ({len(searches)} queries)", searches),
        Workload(AREA, "search_c1", "search ?q=, 1 connection", searches, connections=1),
    ]


def targets(report: dict) -> list[Target]:
    """Search p50 in-process (the target) and over one HTTP connection (for information), and
    geocoding's share of the build. The throughput ratios come from the workloads."""
    out = []
    build_s = (report.get("build") or {}).get("area_s", {}).get(AREA)
    if build_s is not None:
        out.append(Target("geocoding build (from the build log)", build_s, "s",
                          f"<= {BUILD_S:g} s", build_s <= BUILD_S))
    search = report["areas"][AREA].get("inprocess_search")
    if search:
        out.append(Target("search p50, in-process", search["p50_ms"], "ms",
                          f"<= {SEARCH_P50_MS:g} ms", search["p50_ms"] <= SEARCH_P50_MS))
    one = next((s for s in report["servers"] if s["workers"] == 1 and "ready_s" in s), None)
    c1 = next((r for r in one["endpoints"] if r["area"] == AREA and r["name"] == "search_c1"),
              None) if one else None
    if c1:
        out.append(Target("search p50, HTTP 1 connection (info)", c1["p50_ms"], "ms",
                          f"<= {SEARCH_P50_MS:g} ms", c1["p50_ms"] <= SEARCH_P50_MS,
                          "includes HTTP and the thread-pool hop"))
    return out


def print_section(report: dict) -> None:
    """The in-process search figures, query by query."""
    search = report["areas"][AREA].get("inprocess_search")
    if not search:
        return
    print(f"\n## Search in-process (no HTTP), {len(SEARCH_MIX)} queries x {search['rounds']} "
          f"rounds, limit=10")
    print(table(["query", "median ms", "max ms", "cold ms", "results", "top result"],
                [[q["query"], f"{q['median_ms']:.3f}", f"{q['max_ms']:.2f}",
                  f"{q['cold_ms']:.2f}", q["results"], q["top"]]
                 for q in search["per_query"]], "lrrrrl"))
    print(f"overall: p50 {search['p50_ms']:.3f} ms, p99 {search['p99_ms']:.3f} ms, "
          f"mean {search['mean_ms']:.3f} ms over {search['samples']} searches; other "
          f"processes used {search['cpu']['other_pct']:.0f}% of a core meanwhile")


# ---- helpers --------------------------------------------------------------------------------

def unlookupable_ids(index) -> list[str]:
    """Ids in the index that GET /geocoding/lookup?id= refuses with 400 (its id pattern)."""
    from server.geocoding.handlers import ID
    return [i for i in (raw.decode() for raw in index.ids) if not ID.match(i)]


def inprocess_search(index, max_seconds: float, max_rounds: int) -> dict:
    """Latency of each query of SEARCH_MIX, cold and then repeated for max_seconds."""
    from server.geocoding.search import search

    def run(params: dict[str, str]) -> list[int]:
        return search(index, params["q"], field_all=params.get("field") == "all",
                      country=params.get("country"), limit=10)

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
        top = (f"{index.name[rows[0]].as_py()}, {index.cc[rows[0]].as_py()}" if rows else "-")
        per_query.append({"query": label, "median_ms": round(statistics.median(samples[label]), 3),
                          "max_ms": round(max(samples[label]), 3),
                          "cold_ms": round(cold[label], 3), "results": len(rows), "top": top})
    cpu = meter.stop()
    everything = [v for values in samples.values() for v in values]
    return {"cpu": cpu, "rounds": rounds, "samples": len(everything),
            "p50_ms": round(percentile(everything, 50), 3),
            "p99_ms": round(percentile(everything, 99), 3),
            "mean_ms": round(statistics.fmean(everything), 3),
            "per_query": per_query}
