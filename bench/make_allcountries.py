"""Write a synthetic GeoNames allCountries.zip at real scale, to measure the pipeline's memory and time.

    python bench/make_allcountries.py --out DIR [--rows 13000000] [--seed 1] [--alternate-names N]

DIR/geonames/ then holds allCountries.zip (member allCountries.txt, deflate) in the exact
19-column dump format, plus countryInfo.txt, admin1CodesASCII.txt and admin2Codes.txt copied from
the real dumps, so `python -m pipeline build --datasets DIR` reads it like the real download.

Rows are derived from the real cities15000 places (kept verbatim too), so codes, admin joins,
timezones, coordinates and scripts are real; names are perturbed so most are distinct. Proportions
follow the real dump: about 4.8 of 13 million rows are feature class P, about 60k are S/AIRP,
most places have 0-3 alternate names and a few have many, populations are mostly 0 and the
elevation column is mostly empty (dem filled). Written chunk by chunk in bounded memory.
With --alternate-names N, alternateNamesV2.zip gets N rows for the generated places, including
post/iata/icao/link/wkdt/abbr/unlc rows a reader must skip.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import shutil
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import polars as pl

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "geonames"
CODE_FILES = ("countryInfo.txt", "admin1CodesASCII.txt", "admin2Codes.txt")
COLUMNS = (
    "geonameid",
    "name",
    "asciiname",
    "alternatenames",
    "latitude",
    "longitude",
    "feature_class",
    "feature_code",
    "country_code",
    "cc2",
    "admin1_code",
    "admin2_code",
    "admin3_code",
    "admin4_code",
    "population",
    "elevation",
    "dem",
    "timezone",
    "modification_date",
)
CHUNK_ROWS = 250_000
# Rows per feature class in the real dump, in millions (13.0 in all).
CLASS_ROWS = {
    "P": 4.80,
    "S": 2.55,
    "H": 2.40,
    "T": 1.90,
    "A": 0.45,
    "L": 0.45,
    "R": 0.30,
    "V": 0.10,
    "U": 0.05,
}
AIRPORTS_PER_13M = 60_000
# Feature codes by class, with relative weights (AIRP is added to S from AIRPORTS_PER_13M).
FEATURE_CODES = {
    "P": {
        "PPL": 930,
        "PPLX": 30,
        "PPLL": 15,
        "PPLA4": 8,
        "PPLA3": 6,
        "PPLA2": 4,
        "PPLQ": 4,
        "PPLF": 2,
        "PPLH": 0.5,
        "PPLW": 0.3,
        "PPLS": 0.2,
    },
    "S": {
        "SCH": 250,
        "CH": 200,
        "FRM": 150,
        "BLDG": 80,
        "HTL": 80,
        "CMTY": 80,
        "MSQE": 30,
        "TMPL": 20,
        "RSTN": 20,
        "HSP": 20,
        "MN": 15,
        "PO": 15,
        "MALL": 10,
    },
    "H": {
        "STM": 450,
        "LK": 120,
        "WLL": 80,
        "RSV": 50,
        "SPNG": 50,
        "PND": 50,
        "STMI": 50,
        "BAY": 30,
        "CNL": 30,
        "LKS": 20,
        "STMS": 20,
    },
    "T": {
        "MT": 400,
        "HLL": 300,
        "VAL": 100,
        "PK": 60,
        "ISL": 50,
        "PASS": 30,
        "CAPE": 30,
        "SLP": 30,
    },
    "A": {
        "ADM4": 300,
        "ADM3": 250,
        "ADMD": 150,
        "ADM2": 100,
        "ADM5": 50,
        "ADM1": 10,
        "ADM2H": 10,
        "PCLI": 0.5,
    },
    "L": {"LCTY": 350, "AREA": 250, "PRK": 150, "FLD": 80, "GRAZ": 60, "RESV": 50, "CMN": 20},
    "R": {"RD": 700, "TRL": 150, "RR": 100, "RDJCT": 50},
    "V": {"FRST": 600, "WOODS": 200, "GRSLD": 100, "SCRB": 100},
    "U": {"SMU": 400, "RDGU": 300, "SHLU": 300},
}
# How generic features are named after a nearby place ("{}" is the place's name).
FEATURE_NAMES = {
    "S": ("Escuela {}", "{} School", "Hotel {}", "{} Church", "{} Farm", "Masjid {}"),
    "H": ("Lake {}", "{} River", "Rio {}", "{} Creek", "Lac de {}", "Wadi {}"),
    "T": ("Mount {}", "Cerro {}", "{} Hill", "Gora {}", "{} Valley"),
    "A": ("{} District", "Municipio de {}", "Gmina {}", "{} Township"),
    "L": ("{} Park", "{} Area", "Lieu-dit {}"),
    "R": ("{} Road", "{} Trail"),
    "V": ("{} Forest", "Bosque {}"),
    "U": ("{} Bank", "{} Ridge"),
    "AIRP": ("{} Airport", "Aeropuerto de {}", "{} International Airport", "{} Airstrip"),
}
PREFIXES = ("San ", "Nueva ", "Kampung ", "Ban ", "Nová ", "Bol'shoye ", "Kafr ", "Sainte-")
SUFFIXES = (
    " Kalan",
    " Khurd",
    " Dos",
    "-Dorf",
    " Village",
    " 2",
    " Norte",
    " Colony",
    "yevka",
    " Mahalleh",
)
TYPO_CHARS = "aeiouynrstlkmhd"
# Alternate-name counts: 0..3 with these probabilities, else 4..9, else the full real list.
ALT_SMALL = {"P": (0.50, 0.22, 0.12, 0.07), "other": (0.75, 0.13, 0.06, 0.03)}
ALT_FULL = {"P": 0.02, "other": 0.005}
ALTNAME_COLUMNS = (
    "alternatenameid",
    "geonameid",
    "isolanguage",
    "alternate_name",
    "is_preferred",
    "is_short",
    "is_colloquial",
    "is_historic",
    "from",
    "to",
)
# alternateNamesV2 rows by kind: "lang" is a language tag, "" an untagged name; the rest are
# codes and links (plus a pseudo-language, fr_1793) that a reader must skip.
ALT_KINDS = {
    "lang": 0.52,
    "": 0.14,
    "post": 0.10,
    "wkdt": 0.11,
    "link": 0.08,
    "iata": 0.01,
    "icao": 0.01,
    "unlc": 0.01,
    "abbr": 0.01,
    "fr_1793": 0.01,
}
LANGUAGES = (
    "en",
    "de",
    "fr",
    "es",
    "ru",
    "it",
    "pl",
    "nl",
    "pt",
    "ja",
    "zh",
    "ar",
    "fa",
    "uk",
    "sv",
    "ceb",
    "zh-CN",
    "zh-Hant",
    "sr-Latn",
    "be-tarask",
)
# Share of language rows flagged preferred, short, colloquial, historic.
ALT_FLAGS = {"is_preferred": 0.06, "is_short": 0.02, "is_colloquial": 0.005, "is_historic": 0.015}
LETTERS = pl.Series(list("ABCDEFGHIJKLMNOPQRSTUVWXYZ"))


def read_templates(folder: Path) -> pl.DataFrame:
    """The real cities15000 rows as text columns plus parsed fields the generator reuses."""
    with zipfile.ZipFile(folder / "cities15000.zip") as archive:
        raw = archive.read("cities15000.txt")
    frame = pl.read_csv(
        raw,
        separator="\t",
        has_header=False,
        new_columns=list(COLUMNS),
        schema_overrides={c: pl.String for c in COLUMNS},
        quote_char=None,
    )
    return frame.with_columns(pl.all().fill_null("")).with_columns(
        lat_e5=(pl.col("latitude").cast(pl.Float64) * 1e5).round(0).cast(pl.Int64),
        lon_e5=(pl.col("longitude").cast(pl.Float64) * 1e5).round(0).cast(pl.Int64),
        dem_m=pl.col("dem").cast(pl.Int64, strict=False).fill_null(0).clip(-500, 9000),
        alts=pl.when(pl.col("alternatenames") == "")
        .then(pl.lit([], pl.List(pl.String)))
        .otherwise(pl.col("alternatenames").str.split(",")),
    )


def admin2_lookup(folder: Path, templates: pl.DataFrame) -> tuple[np.ndarray, np.ndarray, list]:
    """Per template: (start, count) of its admin1 region's admin2 codes in a sorted code list."""
    codes = pl.read_csv(
        folder / "admin2Codes.txt",
        separator="\t",
        has_header=False,
        new_columns=["code", "name", "ascii", "id"],
        quote_char=None,
        schema_overrides={
            "code": pl.String,
            "name": pl.String,
            "ascii": pl.String,
            "id": pl.String,
        },
    )
    parts = codes["code"].str.splitn(".", 3).struct.rename_fields(["cc", "a1", "a2"])
    admin2 = parts.struct.unnest().sort("cc", "a1", "a2").with_row_index("pos")
    spans = admin2.group_by("cc", "a1").agg(start=pl.col("pos").min(), count=pl.len())
    joined = templates.select(cc="country_code", a1="admin1_code").join(
        spans, on=["cc", "a1"], how="left", maintain_order="left"
    )
    return (
        joined["start"].fill_null(0).to_numpy().astype(np.int64),
        joined["count"].fill_null(0).to_numpy().astype(np.int64),
        admin2["a2"].to_list(),
    )


def class_and_codes(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Feature class and code per row in the real dump's proportions."""
    classes = np.array(list(CLASS_ROWS))
    share = np.array(list(CLASS_ROWS.values()))
    cls = classes[rng.choice(len(classes), n, p=share / share.sum())]
    codes = np.empty(n, dtype=object)
    airp_share = AIRPORTS_PER_13M / (CLASS_ROWS["S"] * 1e6)
    for c, weights in FEATURE_CODES.items():
        rows = np.flatnonzero(cls == c)
        names = list(weights)
        w = np.array(list(weights.values()), dtype=float)
        if c == "S":
            names.append("AIRP")
            w = np.append(w / w.sum() * (1 - airp_share), airp_share)
        codes[rows] = np.array(names, dtype=object)[
            rng.choice(len(names), len(rows), p=w / w.sum())
        ]
    return cls, codes


def perturb(name: pl.Expr, op: pl.Expr, u: pl.Expr, pick: pl.Expr) -> pl.Expr:
    """Variant spelling: op 0 keep, 1 one-letter typo, 2 suffix, 3 prefix, 4 typo and suffix."""
    k = (u * name.str.len_chars()).floor().cast(pl.Int64)
    typo = (
        name.str.slice(0, k)
        + pl.lit(pl.Series(list(TYPO_CHARS))).gather(pick % len(TYPO_CHARS))
        + name.str.slice(k + 1)
    )
    suffix = pl.lit(pl.Series(SUFFIXES)).gather(pick % len(SUFFIXES))
    prefix = pl.lit(pl.Series(PREFIXES)).gather(pick % len(PREFIXES))
    return (
        pl.when(op == 1)
        .then(typo)
        .when(op == 2)
        .then(name + suffix)
        .when(op == 3)
        .then(prefix + name)
        .when(op == 4)
        .then(typo + suffix)
        .otherwise(name)
    )


def feature_name(name: pl.Expr, code: pl.Expr, cls: pl.Expr, pick: pl.Expr) -> pl.Expr:
    """Non-P features are named after their template place ("Lake X", "X Airport")."""
    out = name
    for kind, patterns in FEATURE_NAMES.items():
        which = code if kind == "AIRP" else cls
        pats = pl.lit(pl.Series(patterns)).gather(pick % len(patterns))
        before = pats.str.split_exact("{}", 1).struct.field("field_0")
        after = pats.str.split_exact("{}", 1).struct.field("field_1")
        out = pl.when(which == kind).then(before + name + after).otherwise(out)
    return out


def alt_counts(rng: np.random.Generator, cls: np.ndarray) -> np.ndarray:
    """Alternate names per row: mostly 0-3, some 4-9, -1 meaning the template's full list."""
    n = len(cls)
    out = np.zeros(n, dtype=np.int64)
    for kind in ("P", "other"):
        rows = np.flatnonzero(cls == "P") if kind == "P" else np.flatnonzero(cls != "P")
        small = np.array(ALT_SMALL[kind])
        p = np.concatenate([small, [1 - small.sum() - ALT_FULL[kind], ALT_FULL[kind]]])
        bucket = rng.choice(6, len(rows), p=p)
        counts = bucket.copy()
        counts[bucket == 4] = rng.integers(4, 10, int((bucket == 4).sum()))
        counts[bucket == 5] = -1
        out[rows] = counts
    return out


def alternate_names(rng: np.random.Generator, rows: pl.DataFrame) -> pl.Series:
    """The alternatenames column: variants of the name and of the template's real names."""
    small = rows.select("row", "name", "alts", "count").filter(pl.col("count") > 0)
    pairs = small.with_columns(j=pl.int_ranges(0, "count")).explode("j").drop("j")
    m = pairs.height
    pairs = pairs.with_columns(
        src=pl.Series(rng.random(m)),
        u=pl.Series(rng.random(m)),
        pick=pl.Series(rng.integers(0, 1 << 20, m)),
        op=pl.Series(rng.choice(5, m)),
        at=pl.Series(rng.random(m)),
    )
    real = pl.col("alts").list.get(
        (pl.col("at") * pl.col("alts").list.len()).floor().cast(pl.Int64), null_on_oob=True
    )
    base = (
        pl.when((pl.col("src") < 0.5) | (pl.col("alts").list.len() == 0))
        .then("name")
        .otherwise(real)
    )
    op = pl.when(pl.col("src") > 0.8).then(0).otherwise(pl.col("op").clip(1, 4))
    joined = (
        pairs.select("row", alt=perturb(base, op, pl.col("u"), pl.col("pick")))
        .group_by("row")
        .agg(pl.col("alt").str.join(","))
    )
    full = rows.filter(pl.col("count") < 0).select("row", alt=pl.col("alts").list.join(","))
    out = rows.select("row").join(pl.concat([joined, full]), on="row", how="left")
    return out.sort("row")["alt"].fill_null("")


def coordinate(e5: pl.Expr) -> pl.Expr:
    """Degrees with five decimals from integer 1e-5 degrees, as the dump writes them."""
    sign = pl.when(e5 < 0).then(pl.lit("-")).otherwise(pl.lit(""))
    a = e5.abs()
    return sign + (a // 100_000).cast(pl.String) + "." + (a % 100_000).cast(pl.String).str.zfill(5)


def numbers(rng: np.random.Generator, cls: np.ndarray, dem: np.ndarray) -> dict[str, np.ndarray]:
    """Population (mostly 0), elevation (mostly empty), dem (-9999 sometimes), admin3/4."""
    n = len(cls)
    pop_share = np.where(cls == "P", 0.12, np.where(cls == "A", 0.25, 0.0))
    population = np.where(
        rng.random(n) < pop_share, np.round(rng.lognormal(np.log(600), 1.6, n)), 0
    ).astype(np.int64)
    dem = (dem + rng.normal(0, 40, n)).astype(np.int64)
    elevation = np.where(rng.random(n) < 0.12, (dem + rng.normal(0, 10, n)).astype(np.int64), -1)
    dem = np.where(rng.random(n) < 0.02, -9999, dem)
    admin3 = np.where(rng.random(n) < 0.25, rng.integers(1, 99_999, n), -1)
    admin4 = np.where(rng.random(n) < 0.08, rng.integers(1, 9_999_999, n), -1)
    days = rng.integers(0, 7262, n).astype("timedelta64[D]") + np.datetime64("2006-01-01")
    return {
        "population": population,
        "elevation": elevation,
        "dem": dem,
        "admin3": admin3,
        "admin4": admin4,
        "date": days.astype(str),
    }


def generated_rows(
    rng: np.random.Generator, ids: np.ndarray, templates: pl.DataFrame, admin2: tuple
) -> pl.DataFrame:
    """One chunk of synthetic rows in dump column order, derived from random template places."""
    n = len(ids)
    t = rng.integers(0, templates.height, n)
    tm = templates[t]
    cls, codes = class_and_codes(rng, n)
    start, count, a2codes = admin2
    use = (count[t] > 0) & (rng.random(n) < 0.8)
    pick2 = start[t] + np.floor(rng.random(n) * np.maximum(count[t], 1)).astype(np.int64)
    a2 = np.where(
        use,
        np.asarray(a2codes, dtype=object)[np.minimum(pick2, len(a2codes) - 1)],
        tm["admin2_code"].to_numpy(),
    )
    nums = numbers(rng, cls, tm["dem_m"].to_numpy())
    op = np.where(cls == "P", rng.choice(5, n, p=[0.25, 0.35, 0.15, 0.1, 0.15]), rng.choice(2, n))
    frame = tm.select(
        "name", "asciiname", "alts", "country_code", "admin1_code", "timezone", "lat_e5", "lon_e5"
    ).with_columns(
        row=pl.Series(np.arange(n)),
        cls=pl.Series(cls.astype(str)),
        code=pl.Series(codes.astype(str)),
        op=pl.Series(op),
        u=pl.Series(rng.random(n)),
        pick=pl.Series(rng.integers(0, 1 << 20, n)),
        dlat=pl.Series(rng.normal(0, 30_000, n).astype(np.int64)),
        dlon=pl.Series(rng.normal(0, 30_000, n).astype(np.int64)),
        count=pl.Series(alt_counts(rng, cls)),
    )
    named = frame.with_columns(
        name=feature_name(
            perturb(pl.col("name"), pl.col("op"), pl.col("u"), pl.col("pick")),
            pl.col("code"),
            pl.col("cls"),
            pl.col("pick"),
        ),
        asciiname=feature_name(
            perturb(pl.col("asciiname"), pl.col("op"), pl.col("u"), pl.col("pick")),
            pl.col("code"),
            pl.col("cls"),
            pl.col("pick"),
        ),
    )
    alternates = alternate_names(rng, named)
    return _dump_columns(rng, ids, named.with_columns(alternatenames=alternates), a2, nums)


def _dump_columns(
    rng: np.random.Generator, ids: np.ndarray, frame: pl.DataFrame, admin2: np.ndarray, nums: dict
) -> pl.DataFrame:
    """The 19 text columns of the dump for a generated chunk."""
    n = len(ids)
    cc2 = np.where(
        rng.random(n) < 0.01,
        frame["country_code"].sample(n, with_replacement=True, seed=int(ids[0])).to_numpy(),
        "",
    )
    text = lambda a: pl.Series(a).cast(pl.String)  # noqa: E731
    blank_neg = lambda a: pl.Series(a).cast(pl.String).replace("-1", "")  # noqa: E731
    return frame.select(
        geonameid=text(ids),
        name="name",
        asciiname="asciiname",
        alternatenames="alternatenames",
        latitude=coordinate((pl.col("lat_e5") + pl.col("dlat")).clip(-9_000_000, 9_000_000)),
        longitude=coordinate((pl.col("lon_e5") + pl.col("dlon")).clip(-18_000_000, 18_000_000)),
        feature_class="cls",
        feature_code="code",
        country_code="country_code",
        cc2=pl.Series(cc2, dtype=pl.String),
        admin1_code="admin1_code",
        admin2_code=pl.Series(admin2, dtype=pl.String),
        admin3_code=blank_neg(nums["admin3"]),
        admin4_code=blank_neg(nums["admin4"]),
        population=text(nums["population"]),
        elevation=blank_neg(nums["elevation"]),
        dem=text(nums["dem"]),
        timezone="timezone",
        modification_date=pl.Series(nums["date"], dtype=pl.String),
    )


def next_ids(rng: np.random.Generator, after: int, n: int, taken: np.ndarray) -> np.ndarray:
    """n increasing ids above `after` with small random gaps, none of them in `taken`."""
    out = np.empty(0, dtype=np.int64)
    while len(out) < n:
        candidates = after + np.cumsum(rng.integers(1, 3, n - len(out) + 64))
        after = int(candidates[-1])
        out = np.concatenate([out, candidates[~np.isin(candidates, taken)]])
    return out[:n]


def alternate_rows(
    rng: np.random.Generator, chunk: pl.DataFrame, n: int, first_id: int
) -> pl.DataFrame:
    """n alternateNamesV2 rows for the places of one dump chunk (by alternatenameid).

    Populated places, divisions, airports and places with many names get most of them.
    """
    cls, code = chunk["feature_class"].to_numpy(), chunk["feature_code"].to_numpy()
    weight = (
        np.where(np.isin(cls, ["P", "A"]) | (code == "AIRP"), 3.0, 0.5)
        + chunk["alternatenames"].str.count_matches(",").to_numpy()
    )
    rows = rng.choice(chunk.height, n, p=weight / weight.sum())
    kinds = np.array(list(ALT_KINDS))[
        rng.choice(len(ALT_KINDS), n, p=np.array(list(ALT_KINDS.values())))
    ]
    frame = (
        chunk[rows]
        .select(
            "geonameid",
            "name",
            "asciiname",
            "country_code",
            alts=pl.col("alternatenames")
            .str.split(",")
            .list.eval(pl.element().filter(pl.element() != "")),
        )
        .with_columns(
            kind=pl.Series(kinds),
            lang=pl.Series(np.array(LANGUAGES)[rng.integers(0, len(LANGUAGES), n)]),
            u=pl.Series(rng.random(n)),
            pick=pl.Series(rng.integers(0, 1 << 30, n)),
            op=pl.Series(rng.choice(5, n)),
        )
    )
    kind = pl.col("kind")
    flags = {
        f: pl.when((kind == "lang") & pl.Series(rng.random(n) < share))
        .then(pl.lit("1"))
        .otherwise(pl.lit(""))
        for f, share in ALT_FLAGS.items()
    }
    return frame.select(
        alternatenameid=pl.Series(np.arange(first_id, first_id + n)).cast(pl.String),
        geonameid="geonameid",
        isolanguage=pl.when(kind == "lang").then("lang").otherwise(kind),
        alternate_name=_alt_value(kind),
        **flags,
        **{"from": pl.lit(""), "to": pl.lit("")},
    )


def _alt_value(kind: pl.Expr) -> pl.Expr:
    """The alternate_name text of each kind of row."""
    pick, name = pl.col("pick"), pl.col("name")
    letters = [pl.lit(LETTERS).gather((pick // 26**i) % 26) for i in range(4)]
    real = pl.col("alts").list.get(
        (pl.col("u") * pl.col("alts").list.len()).floor().cast(pl.Int64), null_on_oob=True
    )
    spelled = (
        pl.when(pl.col("alts").list.len() > 0)
        .then(real)
        .otherwise(perturb(name, pl.col("op"), pl.col("u"), pick))
    )
    return (
        pl.when(kind.is_in(["lang", ""]))
        .then(spelled)
        .when(kind == "post")
        .then((pick % 100_000).cast(pl.String).str.zfill(5))
        .when(kind == "wkdt")
        .then(pl.lit("Q") + (pick % 130_000_000).cast(pl.String))
        .when(kind == "link")
        .then(
            pl.lit("https://en.wikipedia.org/wiki/") + name.str.replace_all(" ", "_", literal=True)
        )
        .when(kind == "iata")
        .then(pl.concat_str(letters[:3]))
        .when(kind == "icao")
        .then(pl.concat_str(letters))
        .when(kind == "unlc")
        .then(pl.col("country_code") + pl.concat_str(letters[:3]))
        .when(kind == "abbr")
        .then(pl.col("asciiname").str.slice(0, 3).str.to_uppercase())
        .otherwise(name)
    )


def _write_tsv(handle, frame: pl.DataFrame) -> None:
    """Append a frame to a dump file: tab-separated, no header, no quoting."""
    buffer = io.BytesIO()
    frame.write_csv(
        buffer, separator="\t", include_header=False, quote_style="never", line_terminator="\n"
    )
    handle.write(buffer.getvalue())


def write_places(
    out: Path,
    rows: int,
    seed: int,
    alt_out: Path | None = None,
    alt_rows: int = 0,
    folder: Path = SHARED,
) -> int:
    """Stream allCountries.zip (and alt_out) chunk by chunk in id order; returns rows written."""
    rng = np.random.default_rng(seed)
    templates = read_templates(folder)
    admin2 = admin2_lookup(folder, templates)
    # The real places are part of the dump too, in proportion to the rows asked for.
    n_real = min(templates.height, rows, round(templates.height * rows / 13_000_000))
    real = (
        templates.sample(n_real, seed=seed)
        .with_columns(id=pl.col("geonameid").cast(pl.Int64))
        .sort("id")
    )
    real_ids = real["id"].to_numpy()
    remaining, last, written, alt_written = rows - n_real, 0, 0, 0
    with contextlib.ExitStack() as stack:
        handle = _zip_member(stack, out, "allCountries.txt")
        alt_handle = _zip_member(stack, alt_out, "alternateNamesV2.txt") if alt_out else None
        while remaining > 0 or real.height:
            n = min(CHUNK_ROWS, remaining)
            ids = next_ids(rng, last, n, real_ids)
            remaining -= n
            last = int(ids[-1]) if n else last
            mine = real.filter(pl.col("id") <= last) if remaining else real
            real = real.filter(pl.col("id") > last) if remaining else real.clear()
            parts = [mine.select(*COLUMNS, "id")]
            if n:
                chunk = generated_rows(rng, ids, templates, admin2)
                parts.append(chunk.with_columns(id=pl.Series(ids)))
            chunk = pl.concat(parts).sort("id").drop("id")
            _write_tsv(handle, chunk)
            written += chunk.height
            if alt_handle is not None:
                m = round(alt_rows * written / rows) - alt_written
                _write_tsv(alt_handle, alternate_rows(rng, chunk, m, alt_written + 1))
                alt_written += m
            print(f"\r{written:,} rows", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    return written


def _zip_member(stack: contextlib.ExitStack, path: Path, member: str):
    """A deflated, zip64 member of a new zip archive, open for writing until the stack closes.

    Dated now, as GeoNames dates its dumps' members (the reader takes the day a dump was
    written from it: which daily updates apply); a bare name would date it 1980."""
    archive = stack.enter_context(zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED))
    now = time.gmtime()[:6]
    if member == "alternateNamesV2.txt":  # the real archive carries the language code table
        archive.writestr(
            zipfile.ZipInfo("iso-languagecodes.txt", now),
            "ISO 639-3\tISO 639-2\tISO 639-1\tLanguage Name\ndeu\tger\tde\tGerman\n",
            zipfile.ZIP_DEFLATED,
        )
    info = zipfile.ZipInfo(member, now)
    info.compress_type = zipfile.ZIP_DEFLATED
    return stack.enter_context(archive.open(info, "w", force_zip64=True))


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, write DIR/geonames/ and report sizes and time."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=13_000_000, help="place rows (13 million)")
    parser.add_argument("--out", type=Path, required=True, help="datasets directory to write")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--alternate-names",
        type=int,
        default=0,
        metavar="N",
        help="also write alternateNamesV2.zip with N rows (default: none)",
    )
    args = parser.parse_args(argv)
    folder = args.out / "geonames"
    folder.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    for name in CODE_FILES:
        shutil.copyfile(SHARED / name, folder / name)
    alt_out = folder / "alternateNamesV2.zip" if args.alternate_names else None
    if alt_out is None:
        (folder / "alternateNamesV2.zip").unlink(missing_ok=True)  # a stale one would be read
    rows = write_places(
        folder / "allCountries.zip", args.rows, args.seed, alt_out, args.alternate_names
    )
    for path in filter(None, [folder / "allCountries.zip", alt_out]):
        print(f"{path}: {path.stat().st_size / 1e6:,.0f} MB zipped", file=sys.stderr)
    print(
        f"{rows:,} place rows, {args.alternate_names:,} alternate names, "
        f"{time.perf_counter() - started:.0f} s",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
