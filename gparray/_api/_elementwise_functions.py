"""Element-wise functions (spec section "Element-wise Functions").

The op objects, one table line and docstring each, are defined in the Array layer
(gparray/_array/_elementwise.py) because Array's operators are built from them; this is the
namespace's section, which exports them.
"""
from .._array._elementwise import *  # noqa: F401,F403
from .._array._elementwise import __all__, kernel_instances  # noqa: F401
