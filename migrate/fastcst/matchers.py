"""The attributes libcst's matcher decorators (``@m.visit``, ``@m.call_if_inside``...) put on a
method. The rules' fast dispatch ignores them, so ``TpuCodemod`` refuses a rule that uses one."""

from libcst.matchers._decorators import (  # private: tests/engine/test_fast_paths.py pins it
    CONSTRUCTED_LEAVE_MATCHER_ATTR,
    CONSTRUCTED_VISIT_MATCHER_ATTR,
    VISIT_NEGATIVE_MATCHER_ATTR,
    VISIT_POSITIVE_MATCHER_ATTR,
)

MATCHER_ATTRIBUTES = (
    VISIT_POSITIVE_MATCHER_ATTR,
    VISIT_NEGATIVE_MATCHER_ATTR,
    CONSTRUCTED_VISIT_MATCHER_ATTR,
    CONSTRUCTED_LEAVE_MATCHER_ATTR,
)
