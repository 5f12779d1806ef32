"""Rules over facts: loading rule files and checking them against the fact catalogue, the
expression evaluator, selectors, suppressions, the baseline and fixes."""
