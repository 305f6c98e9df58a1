"""wgrib2 inventories and the GFS message selection, on lines in NOAA's format."""

from __future__ import annotations

import pytest

from pipeline.fetch.inventory import Forecast, InventoryError, forecast, parse
from pipeline.forecast.sources.gfs_selection import SELECTION, select

IDX_F006 = """\
1:0:d=2026112812:PRMSL:mean sea level:6 hour fcst:
2:990245:d=2026112812:CLWMR:1 hybrid level:6 hour fcst:
3.1:1500000:d=2026112812:UGRD:10 m above ground:6 hour fcst:
3.2:1500000:d=2026112812:VGRD:10 m above ground:6 hour fcst:
4:2000000:d=2026112812:PRATE:surface:6 hour fcst:
5:2100000:d=2026112812:PRATE:surface:0-6 hour ave fcst:
6:2200000:d=2026112812:APCP:surface:0-6 hour acc fcst:
7:2300000:d=2026112812:APCP:surface:0-6 hour acc fcst:
8:2400000:d=2026112812:TCDC:entire atmosphere:0-6 hour ave fcst:
9:2500000:d=2026112812:TCDC:entire atmosphere:6 hour fcst:
10:2600000:d=2026112812:TMP:2 m above ground:6 hour fcst:ENS=+1
11:2700000:d=2026112812:TMP:2 m above ground:6 hour fcst:
"""


def test_entries_run_to_the_next_offset_and_the_last_to_the_end():
    entries = parse(IDX_F006)
    assert [(e.number, e.start, e.stop) for e in entries[:4]] == [
        ("1", 0, 990245),
        ("2", 990245, 1500000),
        ("3.1", 1500000, 2000000),
        ("3.2", 1500000, 2000000),
    ]
    assert entries[-1].stop is None and entries[-1].size is None
    assert entries[-2].extra == "ENS=+1" and entries[-1].extra == ""
    assert entries[0].date == "2026112812" and entries[0].level == "mean sea level"


def test_forecast_fields():
    assert forecast("anl") == Forecast("anl", 0, 0)
    assert forecast("123 hour fcst") == Forecast("fcst", 123, 123)
    assert forecast("120-123 hour acc fcst") == Forecast("acc", 120, 123)
    assert forecast("0-6 hour ave fcst") == Forecast("ave", 0, 6)
    assert forecast("10 day fcst") == Forecast("fcst", 240, 240)
    assert forecast("0-0 day acc fcst") == Forecast("acc", 0, 0)
    assert forecast("6 hour fcst,ens") == Forecast("other")


def test_an_error_page_is_not_an_inventory():
    with pytest.raises(InventoryError):
        parse("<html><body>503 Service Unavailable</body></html>\n")


def test_selection_takes_instants_and_the_running_total_once():
    picked, missing = select(parse(IDX_F006), 6)
    labels = [(e.number, e.variable, e.forecast) for e in picked]
    assert ("6", "APCP", "0-6 hour acc fcst") in labels  # the first of the two
    assert not any(number == "7" for number, _, _ in labels)
    assert ("9", "TCDC", "6 hour fcst") in labels and ("11", "TMP", "6 hour fcst") in labels
    assert not any(number in ("5", "8", "10") for number, _, _ in labels)
    assert [e.start for e in picked] == sorted(e.start for e in picked)
    assert ("3.1", "UGRD", "6 hour fcst") in labels  # one message, one range
    assert sum(e.start == 1500000 for e in picked) == 1
    assert {w.variable for w in missing} == {w.variable for w in SELECTION} - {
        "PRMSL",
        "UGRD",
        "VGRD",
        "APCP",
        "TCDC",
        "TMP",
        "HGT",
    }  # HGT: from f000 only


def test_at_f000_analyses_count_and_no_total_is_expected():
    idx = (
        "1:0:d=2026112812:TMP:2 m above ground:anl:\n"
        "2:100:d=2026112812:TMP:2 m above ground:1 hour fcst:\n"
    )
    picked, missing = select(parse(idx), 0)
    assert [e.number for e in picked] == ["1"]
    assert "APCP" not in {w.variable for w in missing} and "DPT" in {w.variable for w in missing}
    assert "HGT" in {w.variable for w in missing}
    picked, _ = select(parse(idx), 1)
    assert [e.number for e in picked] == ["2"]
