"""What the input files may hold, and the JSON schema of it: rule files (rules.py), project settings
(settings.py), hardware descriptors (hardware.py), the GPU catalog (advisor.sources.gpu_catalog).

Each input type is declared once, as a record (advisor/core/records): the rule specs in
advisor.engine.rulespec,
the settings in advisor.core.settings_types, machines in advisor.sources.machine_types, GPUs in
advisor.sources.gpu_types. A field's checks (the file key, bounds, length, pattern, hooks) and its
description are part of its declaration (`records.spec(...)`); advisor.core.datacodec.validate checks a
file's mapping against it and raises one error, `Invalid`, that carries every problem with its key
path, which the readers map to file:line. jsonschema.py writes `gpu-advise schema` from the same
records. The modules here hold what is not a field: the rule file's `severity`/`message` mappings
and `let` names (checked against the fact catalogue), the settings' source, the entry points.
The records are also what the on-disk cache (advisor/core/cache.py) stores, through advisor.core.datacodec's
encode/decode, so validating and reading a cached value need no third-party library.
"""
