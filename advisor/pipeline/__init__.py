"""What builds the results: check, estimate, the probe behind `--verify`, the policy from the
base revision, and which findings block."""
