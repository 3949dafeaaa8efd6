"""Line maps: each rule's edit is diffed once, against its input, and the maps chain back to the
user's file."""

import difflib
import random

from migrate.linemap import LineMap, line_opcodes

ORIGINAL = "import torch\n\nx = torch.ones(2).cuda()\ny = x * 2\nprint(y)\n"
# the first rule rewrites line 3 into two lines
FIRST = "import torch\n\ndevice = torch_xla.device()\nx = torch.ones(2).to(device)\ny = x * 2\nprint(y)\n"
# the second one puts a marker above ``print(y)``
SECOND = FIRST.replace("print(y)", "# TODO(tpu-migrate): TPU253 ...\nprint(y)")


def test_an_identity_map_maps_each_line_to_itself():
    same = LineMap(ORIGINAL, ORIGINAL)
    assert [same.line(n) for n in range(1, 6)] == [1, 2, 3, 4, 5]
    assert same.opcodes == []


def test_chained_maps_reach_the_users_lines():
    first = LineMap(FIRST, ORIGINAL)
    second = LineMap(SECOND, FIRST, then=first)
    # import, blank, two lines replacing line 3, y = ..., the marker, print(y)
    assert [second.line(n) for n in range(1, 8)] == [1, 2, 3, 3, 4, 5, 5]
    assert [second.line(n) for n in range(1, 8)] == [
        LineMap(SECOND, ORIGINAL).line(n) for n in range(1, 8)
    ]


def test_an_edit_keeps_its_own_opcodes_and_lines():
    first = LineMap(FIRST, ORIGINAL)
    assert first.new_lines == FIRST.splitlines()
    changed = [op for op in first.opcodes if op[0] != "equal"]
    assert changed == [("replace", 2, 3, 2, 4)]


def test_line_opcodes_turn_the_old_lines_into_the_new():
    """Valid difflib opcodes (each block follows the last, "equal" blocks are equal, no two
    "equal" in a row), the same as difflib's when the versions share no head or tail and no
    line occurs once in each (nothing for the patience diff to anchor on)."""
    rng = random.Random(7)
    for _ in range(3000):
        old = [rng.choice(["a", "b", "", ")"]) for _ in range(rng.randint(0, 12))]
        new = list(old)
        for _ in range(rng.randint(0, 3)):
            at = rng.randint(0, len(new))
            if rng.random() < 0.5 or not new[at:]:
                new.insert(at, rng.choice(["a", "c", ""]))
            else:
                del new[at]
        opcodes = line_opcodes(old, new)
        old_at = new_at = 0
        for (tag, old_start, old_end, new_start, new_end), following in zip(
            opcodes, [*opcodes[1:], None]
        ):
            assert (old_start, new_start) == (old_at, new_at)
            if tag == "equal":
                assert old[old_start:old_end] == new[new_start:new_end]
                assert following is None or following[0] != "equal"
            old_at, new_at = old_end, new_end
        assert (old_at, new_at) == (len(old), len(new))
        once_in_each = {line for line in old if old.count(line) == 1 and new.count(line) == 1}
        if old[:1] != new[:1] and old[-1:] != new[-1:] and not once_in_each:
            matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
            assert opcodes == matcher.get_opcodes()


def test_line_opcodes_change_only_the_edited_lines_of_a_long_file():
    """Edits spread over a file of repeated blank lines and brackets: only the edited lines are
    marked, each where it is (the lines occurring once anchor the rest)."""
    old = []
    for n in range(400):
        old += [f"def f{n}(x):", "    return g(", "        x,", "    )", ""]
    new = list(old)
    new[5 * 100 + 2] = "        x.to(device),"  # replaced
    del new[5 * 250 + 4]  # a blank line deleted
    new.insert(5 * 300, "# TODO(tpu-migrate): marker")  # inserted (after the deletion)
    changed = [op for op in line_opcodes(old, new) if op[0] != "equal"]
    assert changed == [
        ("replace", 502, 503, 502, 503),
        ("delete", 1254, 1255, 1254, 1254),
        ("insert", 1501, 1501, 1500, 1501),
    ]
