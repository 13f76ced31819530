"""The pure capture model: reading an Intercept Layer dump (stdlib, numpy, pcpp only)."""
