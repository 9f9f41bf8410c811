"""Writes <name>.pbtxt next to every <name>.<full message name>.binpb in this
directory: str(message), what TensorBoard's graphs plugin serves (it is
not text_format.MessageToString: with the C++ backend, str() writes float
fields as the repr of their double value and every map entry's key and
value, zero or not).

Usage (see README.md): PYTHONPATH=<protoc --python_out dir> python3 golden.py
"""

import importlib
import os
import pathlib
import sys

from google.protobuf import symbol_database


def import_generated_modules():
    """Imports every *_pb2 module found on PYTHONPATH's first entry."""
    root = pathlib.Path(os.environ["PYTHONPATH"].split(os.pathsep)[0])
    for path in sorted(root.rglob("*_pb2.py")):
        module = ".".join(path.relative_to(root).with_suffix("").parts)
        importlib.import_module(module)


def main():
    here = pathlib.Path(__file__).resolve().parent
    import_generated_modules()
    db = symbol_database.Default()
    for binpb in sorted(here.glob("*.binpb")):
        name, full_name = binpb.stem.split(".", 1)
        message = db.GetSymbol(full_name)()
        message.ParseFromString(binpb.read_bytes())
        out = binpb.with_suffix(".pbtxt")
        out.write_text(str(message))
        print(f"wrote {out.name}", file=sys.stderr)


if __name__ == "__main__":
    main()
