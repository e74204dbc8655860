"""A lab's cell file: the example loads, and every mistake is refused naming file, cell and key."""

from pathlib import Path

import pytest
from robohal.testing.cells import CONTRACT_SUITE, CellFileError, load_cells

EXAMPLE = Path(__file__).parents[3] / "hil" / "cells.example.toml"
GOOD = """
[lab]
coordinator = "127.0.0.1:20408"
lock_timeout = 5
history = "history.jsonl"

[cells.one]
uri = "sim://?model=generic.planar2&realtime=0"
speed = 0.5
workspace = { min = [0.0, -0.5, -0.1], max = [1.0, 0.5, 0.1] }
contact = "someone"

[cells.two]
uri = "sim://?model=generic.planar2&realtime=0"
suites = ["robohal.testing.suite"]
place = "the-second"
"""


def write(tmp_path, text):
    path = tmp_path / "cells.toml"
    path.write_text(text)
    return path


def test_the_example_names_the_three_bundled_simulators():
    lab = load_cells(EXAMPLE)
    assert list(lab.cells) == ["franka-sim", "abb-sim", "planar-sim", "so101-sim"]
    assert all(cell.simulated and cell.safety.workspace is not None and cell.contact for cell in lab.cells.values())
    assert all("scenarios" in cell.suites for cell in lab.cells.values())
    assert [cell.name for cell in lab.select(["all"])] == list(lab.cells)


def test_a_good_file_gives_its_settings_and_defaults(tmp_path):
    lab = load_cells(write(tmp_path, GOOD))
    assert (lab.coordinator, lab.lock_timeout, lab.history) == ("127.0.0.1:20408", 5.0, tmp_path / "history.jsonl")
    one, two = lab.cells["one"], lab.cells["two"]
    assert one.safety.speed == 0.5 and one.safety.workspace.upper.tolist() == [1.0, 0.5, 0.1]
    assert one.suites == (CONTRACT_SUITE,) and one.place == "one"  # no family suite for sim://
    assert two.place == "the-second" and two.safety.workspace is None and two.safety.speed == 1.0
    assert [cell.name for cell in lab.select(["two", "all"])] == ["two", "one"]


@pytest.mark.parametrize("change, message", [
    (("[cells.one]", "[cells.one]\nspeed2 = 1"), "cell 'one' has unknown key(s) ['speed2']"),
    (('uri = "sim://?model=generic.planar2&realtime=0"\nspeed', 'uri = "nosuch://x"\nspeed'),
     "cell 'one': uri 'nosuch://x': unknown backend scheme 'nosuch'"),
    (('uri = "sim://?model=generic.planar2&realtime=0"\nspeed', 'uri = "sim://?model=no.model"\nspeed'),
     "unknown model 'no.model'"),
    (("speed = 0.5", "speed = 1.5"), "cell 'one': speed factor must be a fraction in (0, 1]"),
    (("speed = 0.5", 'speed = "fast"'), "speed factor must be a number"),
    (("max = [1.0, 0.5, 0.1]", "max = [1.0, -0.5, 0.1]"), "workspace box is empty"),
    (("max = [1.0, 0.5, 0.1]", "max = [1.0, 0.5]"), "three finite numbers"),
    (('suites = ["robohal.testing.suite"]', 'suites = ["no_such_suite"]'),
     "suite 'no_such_suite' is neither a folder next to the cell file nor an installed package"),
    (("lock_timeout = 5", "lock_timeout = -1"), "lock_timeout must be seconds"),
    (('place = "the-second"', 'place = "one"'), "labgrid place 'one' locks more than one cell"),
    (("[cells.two]", "[cells.all]"), "a cell name is letters"),
    (("[lab]", "[labs]"), "unknown table(s) ['labs']"),
    (("[lab]", "[lab"), "is not valid TOML"),
    (("contact = \"someone\"", "bringup = true"), "the sim backend brings no robot up"),
    (("contact = \"someone\"", "bringup = 1"), "bringup is true or false"),
])
def test_mistakes_are_refused_with_the_reason(tmp_path, change, message):
    old, new = change
    assert old in GOOD
    with pytest.raises(CellFileError) as refused:
        load_cells(write(tmp_path, GOOD.replace(old, new, 1)))
    assert message in str(refused.value) and str(tmp_path) in str(refused.value)


def test_two_cells_naming_one_real_robot_are_refused(tmp_path):
    text = '[cells.a]\nuri = "franka://172.16.0.2"\n[cells.b]\nuri = "franka://172.16.0.2"\n'
    with pytest.raises(CellFileError, match=r"robot franka://172\.16\.0\.2 is named by more than one cell"):
        load_cells(write(tmp_path, text))


def test_an_unknown_cell_names_the_cells_there_are(tmp_path):
    lab = load_cells(write(tmp_path, GOOD))
    with pytest.raises(CellFileError, match="unknown cell 'three'; the cells are: one, two"):
        lab.select(["three"])


def test_a_missing_file_is_said_plainly(tmp_path):
    with pytest.raises(CellFileError, match="No such file"):
        load_cells(tmp_path / "nope.toml")


def test_a_franka_cell_asks_for_bring_up(tmp_path):
    cell = load_cells(write(tmp_path, '[cells.fr3]\nuri = "franka://172.16.0.2?desk_credentials=lab-fr3"\n'
                                      'bringup = true\n')).cells["fr3"]
    assert cell.bringup
