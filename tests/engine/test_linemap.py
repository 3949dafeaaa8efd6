"""Line maps: each rule's edit is diffed once, against its input, and the maps chain back to the
user's file."""

from migrate.linemap import LineMap

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
