"""CAP alerts through `python -m pipeline build --only forecast`, then found by the server's
point-in-polygon index (AlertIndex) read from the build: circles around a pole and across the
antimeridian, CAP 1.1, and XML that is not CAP 1.2 or 1.1."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

import contract
from server.forecast.data import AlertIndex
from tests.support import forecast_inputs as fi

pytestmark = pytest.mark.slow  # they build with the pipeline

CAP_1_1 = "urn:oasis:names:tc:emergency:cap:1.1"
CAP_1_2 = "urn:oasis:names:tc:emergency:cap:1.2"
ONSET = "2030-01-01T00:00:00+00:00"
DURING = 1893456000 + 3600  # an hour after ONSET


def cap(namespace: str, ident: str, event: str, circle: str) -> str:
    """A CAP alert in `namespace` whose one area is `circle` ('lat,lon radius_km')."""
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<alert xmlns="{namespace}">
  <identifier>{ident}</identifier><sender>test@example.org</sender><sent>{ONSET}</sent>
  <status>Actual</status><msgType>Alert</msgType><scope>Public</scope>
  <info>
    <language>en-GB</language><category>Met</category><event>{event}</event>
    <urgency>Expected</urgency><severity>Severe</severity><certainty>Likely</certainty>
    <onset>{ONSET}</onset><expires>2030-01-02T00:00:00+00:00</expires>
    <area><areaDesc>{event} area</areaDesc><circle>{circle}</circle></area>
  </info>
</alert>
"""


def build(pipeline_cli, datasets: Path, out: Path):
    fi.write_gfs_run(datasets / "forecast", fi.last_run(), 6, fi.KNOWN)
    return pipeline_cli("build", "--datasets", datasets, "--out", out, "--only", "forecast")


@pytest.fixture(scope="module")
def index(module_tmp, pipeline_cli) -> AlertIndex:
    root = module_tmp("alerts")
    folder = root / "d" / "alerts"
    folder.mkdir(parents=True)
    for name, namespace, event, circle in [
        ("north.xml", CAP_1_2, "North", "89.5,0 200"),
        ("south.cap", CAP_1_2, "South", "-90,0 300"),
        ("dateline.xml", CAP_1_2, "Dateline", "0,179.5 200"),
        ("beyond.xml", CAP_1_2, "Beyond", "10,725 100"),  # 725° E is 5° E
        ("zurich.xml", CAP_1_1, "Zurich", "47.37,8.54 20"),
    ]:
        (folder / name).write_text(cap(namespace, name, event, circle))
    result = build(pipeline_cli, root / "d", root / "out")
    assert result.returncode == 0, result.stderr[-3000:]
    return AlertIndex(contract.current_version_dir(root / "out"))


def titles(index: AlertIndex, lat: float, lon: float) -> list[str]:
    return [a["title"] for a in orjson.loads(index.json_at(lat, lon, DURING))]


@pytest.mark.parametrize(
    "lat, lon, inside",
    [
        (89.9, 0, True),
        (89.9, 90, True),
        (89.9, 180, True),
        (89.9, -90, True),
        (90, 0, True),
        (88.5, 0, True),
        (88.0, 45, True),
        (88.5, 180, False),
        (87.0, 0, False),
        (88.0, -135, False),
    ],
)
def test_a_circle_around_the_north_pole_covers_the_cap_around_it(index, lat, lon, inside):
    # 200 km is 1.8°: from 89.5° N on 0° the circle reaches 88.7° N on 180°, 87.7° N on 0°.
    assert titles(index, lat, lon) == (["North"] if inside else [])


@pytest.mark.parametrize(
    "lat, lon, inside",
    [
        (-89.9, 0, True),
        (-89, 45, True),
        (-87.5, -170, True),
        (-90, 10, True),
        (-87, 0, False),
        (-86, 120, False),
    ],
)
def test_a_circle_at_the_south_pole_covers_every_longitude(index, lat, lon, inside):
    # 300 km is 2.7° around the pole itself.
    assert titles(index, lat, lon) == (["South"] if inside else [])


@pytest.mark.parametrize(
    "lat, lon, inside",
    [
        (0, 179.5, True),
        (0, -179.5, True),
        (0, 179.9, True),
        (1, -179.9, True),
        (0, -177, False),
        (0, 177, False),
        (0, 0.5, False),
    ],
)
def test_a_circle_across_the_antimeridian_covers_both_sides(index, lat, lon, inside):
    assert titles(index, lat, lon) == (["Dateline"] if inside else [])


def test_a_circle_centred_past_180_east_is_where_its_longitude_points(index):
    assert titles(index, 10, 5) == ["Beyond"] and titles(index, 10, 0) == []


def test_cap_1_1_alerts_are_read(index):
    assert titles(index, 47.37, 8.54) == ["Zurich"] and titles(index, 47.0, 8.0) == []


def test_an_alert_of_another_cap_version_fails_the_build_naming_the_file(pipeline_cli, tmp_path):
    path = tmp_path / "d" / "alerts" / "old.xml"
    path.parent.mkdir(parents=True)
    path.write_text(cap("http://www.incident.com/cap/1.0", "old", "Old", "47.37,8.54 20"))
    result = build(pipeline_cli, tmp_path / "d", tmp_path / "out")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert (
        f"{path}: an alert in namespace 'http://www.incident.com/cap/1.0', not CAP 1.2 or "
        f"1.1 ({CAP_1_2} or {CAP_1_1})"
    ) in result.stderr, result.stderr[-2000:]


def test_xml_without_a_cap_alert_is_said_in_the_log(pipeline_cli, tmp_path):
    path = tmp_path / "d" / "alerts" / "feed.xml"
    path.parent.mkdir(parents=True)
    path.write_text('<feed xmlns="http://www.w3.org/2005/Atom"><title>empty</title></feed>')
    result = build(pipeline_cli, tmp_path / "d", tmp_path / "out")
    assert result.returncode == 0, result.stderr[-3000:]
    assert (
        f"alerts: {path} has no CAP 1.2 or 1.1 alert (its root element is "
        "{http://www.w3.org/2005/Atom}feed); nothing is read from it"
    ) in result.stderr
