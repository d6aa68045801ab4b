"""pyarrow values in ferry's JSON rendering (docs/json.md), computed from pyarrow alone: the
independent oracle for ferry's reads and the input of ferry's builders."""
import math

import pyarrow as pa
import pyarrow.types as t


def _float(x):
    if x is None:
        return None
    x = float(x)
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    return x


def render_scalar(s):
    typ = s.type
    if t.is_union(typ):
        return [s.type_code, render_scalar(s.value) if s.value is not None else None]
    if not s.is_valid:
        return None
    if isinstance(typ, pa.ExtensionType) or t.is_dictionary(typ) or t.is_run_end_encoded(typ):
        return render_scalar(s.value)
    if t.is_null(typ):
        return None
    if t.is_floating(typ):
        return _float(s.as_py())
    if t.is_decimal(typ):
        return format(s.as_py(), "f")
    if t.is_binary(typ) or t.is_large_binary(typ) or t.is_fixed_size_binary(typ) or t.is_binary_view(typ):
        return s.as_py().hex()
    if t.is_temporal(typ) and not t.is_interval(typ):
        return s.value
    if typ == pa.month_day_nano_interval():
        v = s.as_py()
        return [v.months, v.days, v.nanoseconds]
    if t.is_map(typ):
        return [[render_scalar(k), render_scalar(v)] for k, v in zip(s.values.field(0), s.values.field(1))]
    if t.is_list(typ) or t.is_large_list(typ) or t.is_fixed_size_list(typ) or t.is_list_view(typ) \
            or t.is_large_list_view(typ):
        return [render_scalar(x) for x in s.values]
    if t.is_struct(typ):
        return {typ.field(i).name: render_scalar(s[i]) for i in range(typ.num_fields)}
    return s.as_py()


def render(arr):
    return [render_scalar(arr[i]) for i in range(len(arr))]
