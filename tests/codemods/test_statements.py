"""codemods/_statements.py: an ``if`` whose body the edits emptied, with its branches, goes when
that cannot change what runs (TPU104 deletes ``torch.cuda.empty_cache()`` for these tests)."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from codemods import rule_by_code
from codemods.testing import apply_rule
from migrate.engine import Selection, run_pipeline

EMPTY = "torch.cuda.empty_cache()"


def _tpu104(body: str) -> str:
    source = "import torch\n\n" + textwrap.dedent(body).replace("EMPTY", EMPTY)
    output, _ = apply_rule(rule_by_code("TPU104"), source)
    assert apply_rule(rule_by_code("TPU104"), output)[0] == output, "not idempotent"
    compile(output, "case.py", "exec")
    return output.removeprefix("import torch\n\n")


def _dedent(text: str) -> str:
    return textwrap.dedent(text)


@pytest.mark.parametrize(
    "test",
    [
        "args.gpu",
        "args.gpu is not None and not args.cpu",
        "step % 100 == 0",
        "device == 'cuda'",
        "torch.cuda.is_available()",
        "torch.distributed.is_initialized() or torch.backends.mps.is_available()",
        "True",
    ],
)
def test_an_emptied_if_with_a_test_without_side_effects_goes(test):
    assert _tpu104(f"if {test}:\n    EMPTY\nx = 1\n") == "x = 1\n"


@pytest.mark.parametrize(
    "test",
    ["setup()", "cfg['gpu']", "(n := count())", "model.ready()", "args.ready(0)"],
)
def test_an_emptied_if_whose_test_may_do_something_keeps_it(test):
    assert _tpu104(f"if {test}:\n    EMPTY\nx = 1\n") == f"if {test}:\n    pass\nx = 1\n"


def test_a_pass_the_user_wrote_is_left():
    source = "if a:\n    pass\nelif b:\n    x = 1\nEMPTY\n"
    assert _tpu104(source) == "if a:\n    pass\nelif b:\n    x = 1\n"


def test_an_emptied_last_elif_goes_before_the_users_pass():
    source = "if a:\n    pass\nelif b:\n    EMPTY\n"
    assert _tpu104(source) == "if a:\n    pass\n"


def test_an_emptied_last_elif_goes():
    source = "if args.cpu:\n    x = 1\nelif args.gpu:\n    EMPTY\ny = 2\n"
    assert _tpu104(source) == "if args.cpu:\n    x = 1\ny = 2\n"


def test_an_emptied_elif_before_a_live_else_stays():
    source = "if a:\n    x = 1\nelif b:\n    EMPTY\nelse:\n    x = 2\n"
    assert _tpu104(source) == "if a:\n    x = 1\nelif b:\n    pass\nelse:\n    x = 2\n"


def test_an_emptied_if_before_a_live_branch_stays():
    assert _tpu104("if a:\n    EMPTY\nelse:\n    x = 2\n") == "if a:\n    pass\nelse:\n    x = 2\n"
    assert (
        _tpu104("if a:\n    EMPTY\nelif b:\n    x = 2\n") == "if a:\n    pass\nelif b:\n    x = 2\n"
    )


def test_an_emptied_else_goes_whatever_the_test():
    assert _tpu104("if setup():\n    x = 1\nelse:\n    EMPTY\n") == "if setup():\n    x = 1\n"


def test_an_emptied_elif_with_a_test_that_may_do_something_stays():
    source = "if a:\n    x = 1\nelif setup():\n    EMPTY\n"
    assert _tpu104(source) == "if a:\n    x = 1\nelif setup():\n    pass\n"


def test_every_branch_emptied_the_statement_goes():
    source = "if a:\n    EMPTY\nelif b:\n    EMPTY\nelse:\n    EMPTY\nx = 1\n"
    assert _tpu104(source) == "x = 1\n"


def test_nested_emptied_ifs_go_together():
    source = "def f(a, b):\n    if a:\n        if b:\n            EMPTY\n    return 1\n"
    assert _tpu104(source) == "def f(a, b):\n    return 1\n"


def test_a_function_left_empty_keeps_its_pass():
    source = "def f(a):\n    if a:\n        EMPTY\n"
    assert _tpu104(source) == "def f(a):\n    pass\n"


def test_the_comments_of_a_dropped_body_move_on():
    source = _dedent("""\
        if a:
            # about the whole block

            EMPTY
        x = 1
        """)
    assert _tpu104(source) == "# about the whole block\nx = 1\n"


def test_the_comments_of_a_dropped_else_move_below_the_statement():
    source = _dedent("""\
        if a:
            x = 1
        # the other way
        else:
            # a note

            EMPTY
        y = 2
        """)
    assert _tpu104(source) == "if a:\n    x = 1\n# the other way\n# a note\ny = 2\n"


def test_the_comments_right_above_a_dropped_if_go_with_it_as_a_statements_do():
    source = "x = 1\n\n# use every GPU\nif a:\n    EMPTY\n\ny = 2\n"
    assert _tpu104(source) == "x = 1\n\ny = 2\n"


def test_a_body_emptied_across_two_rules_goes_with_its_if():
    source = _dedent("""\
        import torch
        import torch.backends.cudnn as cudnn

        net = Net()
        if device == 'cuda':
            net = torch.nn.DataParallel(net)
            cudnn.benchmark = True

        net(x)
        """)
    module = cst.parse_module(source)
    selection = Selection.from_options(["TPU135", "TPU104", "TPU203"])
    output = run_pipeline(module, source, selection, "case.py")[0]
    assert output.endswith(
        "net = Net()\n"
        "# TODO(tpu-migrate): TPU203 nn.DataParallel removed: data parallelism on TPU is one "
        "process per device (torch_xla.launch) or SPMD\n\nnet(x)\n"
    ), "the marker TPU135 put on the statement TPU104 removed is kept"


def test_a_marker_above_a_removed_statement_moves_on():
    source = "if a:\n    x = 1\n    # TODO(tpu-migrate): TPU299 a note\n    EMPTY\n\ny = 2\n"
    expected = "if a:\n    x = 1\n    # TODO(tpu-migrate): TPU299 a note\n\ny = 2\n"
    assert _tpu104(source) == expected
    source = "x = 1\n# TODO(tpu-migrate): TPU299 a note\nEMPTY\n\ny = 2\n"
    assert _tpu104(source) == "x = 1\n# TODO(tpu-migrate): TPU299 a note\n\ny = 2\n"
