"""The packaging smoke test (scripts/test_packaging.sh runs it from outside the repository, in a
fresh virtual environment): the installed `ferry` imports from site-packages, not python/, and
moves an array to the guarded device and back and through the IPC format, against pyarrow."""
import os
import sys

import pyarrow as pa

import ferry

source = os.path.join(os.path.abspath(sys.argv[1]), "python")
where = os.path.abspath(ferry.__file__)
assert "site-packages" in where and not where.startswith(source + os.sep), where
values = pa.array(["a", None, "ccc"])
arr = ferry.array(values)
arr.validate(ferry.ValidationLevel.FULL)
guarded = ferry.Device.resolve(ferry.DeviceType.EXT_DEV, 0)
back = arr.copy_to(guarded).copy_to(ferry.Device.cpu())
assert pa.array(back).equals(values)
table = pa.table({"x": [1, 2, 3], "s": ["p", None, "q"]})
data = ferry.ipc.write_stream(table)
assert pa.ipc.open_stream(pa.py_buffer(data)).read_all().equals(table)
print(f"packaging smoke: ferry from {where}: OK")
