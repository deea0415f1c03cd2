"""Load generators behind one interface (see base.py for the extension seam)."""
