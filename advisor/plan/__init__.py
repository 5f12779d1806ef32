"""Runs and their merged view: discover (seed paths -> runs), RunPlan (one run, every value with
its provenance), and the base revision a check compares with."""
