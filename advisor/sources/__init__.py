"""Readers, one module per input kind; each returns a Document with typed values and positions."""
