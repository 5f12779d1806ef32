"""`record`: the package's dataclass decorator, with the methods a dataclass gets but none compiled
at import, and without importing `dataclasses`.

Why: CPython 3.11's `dataclasses.dataclass` writes each generated method as source and compiles it
(`dataclasses._create_fn`, one `exec` per method: `__init__`, `__repr__`, `__eq__`, `__hash__`, and
`__setattr__`/`__delattr__` when frozen). That is ~0.5 ms a frozen class on the 2-core machine this is
measured on, and `gpu-advise check` defines ~90 of them before it reads a file: about a third of the
pre-commit hook's start-up (benchmarks/check_speed.py); importing `dataclasses` also imports `inspect`
(with dis and tokenize, ~4.5 ms). Here:

- the fields are collected as the stdlib collects them (advisor/core/records/fields.py): annotations in
  order after the record bases' fields, ClassVar skipped, `KW_ONLY`, `field(...)` options, the
  mutable-default and default-order checks; slots as the stdlib's `_add_slots` makes them;
- `__eq__`, `__hash__`, `__repr__` and the frozen `__setattr__`/`__delattr__` are closures over the
  field names (nothing compiled), with the stdlib's semantics: equality on the `compare` fields' tuple
  for objects of the same class, the hash of that tuple for frozen classes, no hash for mutable ones,
  `FrozenInstanceError` on assignment;
- `__init__` binds its arguments in Python for a class's first few instances (`methods.COMPILE_AFTER`)
  and then compiles the class's own, with the stdlib's signature (positional fields, then keyword-only
  ones; defaults; `default_factory`; `__post_init__`): a class built a few times in a run costs no
  compile, one built thousands of times is built as fast as a stdlib dataclass's.

`fields`, `replace`, `asdict` and `is_record` here are the `dataclasses` functions for records (a
record is not a stdlib dataclass: `dataclasses.fields` refuses it). tests/core/test_records.py holds
the behaviour against the stdlib's, option by option, and refuses a stdlib dataclass in `advisor/`.
"""

from advisor.core.records.annotations import field_types
from advisor.core.records.build import record
from advisor.core.records.fields import (
    KW_ONLY,
    MISSING,
    Field,
    FrozenInstanceError,
    asdict,
    field,
    fields,
    is_record,
    replace,
    spec,
)

__all__ = [
    "KW_ONLY",
    "MISSING",
    "Field",
    "FrozenInstanceError",
    "asdict",
    "field",
    "field_types",
    "fields",
    "is_record",
    "record",
    "replace",
    "spec",
]
