"""Language tags (BCP 47): which are well-formed, and the tags to look a name up by, in order."""

from __future__ import annotations

import re

FALLBACK = "en"
MAX_CHARS = 64  # longer than any tag a client means; bounds the pattern's work
_SEP = "[-_]"


def _cased(word: str) -> str:
    """`word` in any case, spelled out ([Ee][Nn]): the pattern is published in the OpenAPI
    document, and JavaScript's regular expressions have no inline (?i) group."""
    return "".join(f"[{c.upper()}{c.lower()}]" for c in word)


# RFC 5646's syntax (separators "-" or "_"): language (with extended subtags), script, region,
# variants, extensions, private use; or private use alone (x-pig-latin), an i- tag, or one of
# the irregular grandfathered tags the syntax does not otherwise admit (section 2.1).
PATTERN = (
    rf"(?:(?:[A-Za-z]{{2,3}}(?:{_SEP}[A-Za-z]{{3}}){{0,3}}|[A-Za-z]{{4,8}})"
    rf"(?:{_SEP}[A-Za-z]{{4}})?"
    rf"(?:{_SEP}(?:[A-Za-z]{{2}}|[0-9]{{3}}))?"
    rf"(?:{_SEP}(?:[A-Za-z0-9]{{5,8}}|[0-9][A-Za-z0-9]{{3}}))*"
    rf"(?:{_SEP}[0-9A-WY-Za-wy-z](?:{_SEP}[A-Za-z0-9]{{2,8}})+)*"
    rf"(?:{_SEP}[Xx](?:{_SEP}[A-Za-z0-9]{{1,8}})+)?"
    rf"|[Xx](?:{_SEP}[A-Za-z0-9]{{1,8}})+|[Ii]{_SEP}[A-Za-z]{{3,8}}"
    rf"|{_cased('en')}{_SEP}{_cased('gb')}{_SEP}{_cased('oed')}"
    rf"|{_cased('sgn')}{_SEP}(?:{_cased('be')}{_SEP}(?:{_cased('fr')}|{_cased('nl')})"
    rf"|{_cased('ch')}{_SEP}{_cased('de')}))"
)
TAG = re.compile(PATTERN)

# CLDR's likely script of each language written in more than one (babel's likely_subtags: the
# language's own, and the regions whose differs); tests/server/test_units.py checks this copy
# against babel, which the server does not load (about 5 MiB per worker for this table).
SCRIPTS: dict[str, tuple[str, dict[str, str]]] = {
    "az": ("Latn", {"IQ": "Arab", "IR": "Arab", "RU": "Cyrl"}),
    "bal": ("Arab", {}),
    "bm": ("Latn", {}),
    "bs": ("Latn", {}),
    "en": ("Latn", {}),
    "ff": ("Latn", {}),
    "ha": ("Latn", {"CM": "Arab", "SD": "Arab"}),
    "hi": ("Deva", {}),
    "hnj": ("Hmnp", {}),
    "iu": ("Cans", {}),
    "kaa": ("Cyrl", {}),
    "kk": ("Cyrl", {"AF": "Arab", "CN": "Arab", "IR": "Arab", "MN": "Arab"}),
    "kok": ("Deva", {}),
    "ks": ("Arab", {}),
    "kxv": ("Latn", {}),
    "mn": ("Cyrl", {"CN": "Mong"}),
    "mni": ("Beng", {}),
    "ms": ("Latn", {"CC": "Arab"}),
    "pa": ("Guru", {"PK": "Arab"}),
    "rhg": ("Rohg", {}),
    "sat": ("Olck", {}),
    "sd": ("Arab", {"IN": "Deva"}),
    "shi": ("Tfng", {}),
    "sr": ("Cyrl", {"ME": "Latn", "RO": "Latn", "TR": "Latn"}),
    "su": ("Latn", {}),
    "uz": ("Latn", {"AF": "Arab", "CN": "Cyrl"}),
    "vai": ("Vaii", {}),
    "yue": ("Hant", {"CN": "Hans"}),
    "zh": (
        "Hans",
        {
            r: "Hant"
            for r in (
                "AU",
                "BN",
                "GB",
                "GF",
                "HK",
                "ID",
                "MO",
                "PA",
                "PF",
                "PH",
                "SR",
                "TH",
                "TW",
                "US",
                "VN",
            )
        },
    ),
}


def well_formed(raw: str) -> bool:
    """True for a well-formed BCP 47 tag (with "_" accepted for "-")."""
    return len(raw) <= MAX_CHARS and TAG.fullmatch(raw) is not None


def candidates(raw: str) -> tuple[str, ...]:
    """The tags to look a name up by, most specific first, then English: 'pt-BR' -> pt-BR, pt,
    en; 'zh-TW' -> zh-TW, zh-Hant, en. Never a tag of another script than the one asked for
    (zh-TW is written in Traditional characters; zh alone means Simplified); extensions and
    private use are dropped ('ja-JP-u-ca-japanese' -> ja-JP, ja, en) unless they are all."""
    parts = re.split(_SEP, raw)
    if len(parts[0]) == 1:  # x-pig-latin, i-klingon
        return tuple(dict.fromkeys(("-".join(parts).lower(), FALLBACK)))
    language, script, region, variants = parts[0].lower(), None, None, []
    for part in parts[1:]:
        if len(part) == 1:  # an extension or private use: the rest is not a place
            break
        if len(part) == 3 and part.isalpha() and script is region is None and not variants:
            continue  # an extended language subtag (zh-yue): its prefix decides
        if len(part) == 4 and part.isalpha() and script is region is None:
            script = part.title()
        elif len(part) in (2, 3) and region is None and not variants:
            region = part.upper()
        else:
            variants.append(part.upper())  # as CLDR's identifiers (be-TARASK) have them
    default, by_region = SCRIPTS.get(language, (None, {}))
    likely = by_region.get(region, default)
    wanted = script or likely

    def fits(implied: str | None) -> bool:
        # A script asked for, of a language whose usual script is unknown here (ja-Latn):
        # the language's names without one are not in it.
        return wanted is None or implied == wanted or (implied is None and script is None)

    base = "-".join(p for p in (language, script, region) if p)
    found = ["-".join([base, *variants]), base]
    if region and script and fits(likely):
        found.append(f"{language}-{region}")
    if wanted and wanted != default:  # names in the default script are the language's own
        found.append(f"{language}-{wanted}")
    if fits(default):
        found.append(language)
    found.append(FALLBACK)
    return tuple(dict.fromkeys(found))
