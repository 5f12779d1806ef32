"""What every layer may use: positions (Location, Span, Document), provenance, findings, errors,
escaping, the safe writer, the expression language and its helpers, the record decorator, the cache."""
