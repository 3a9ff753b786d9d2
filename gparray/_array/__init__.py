"""The Array layer: the Array class, the operations its operators and indexing are made of,
and the helpers with which the namespace builds Arrays (see docs/architecture.md)."""
from ._object import Array
from ._build import (_copy, _copy_to_device, _empty, _fill_scalar, _from_host, _from_layout,
                     _from_pickle, _scalar_array, _to_host)

__all__ = ["Array"]
