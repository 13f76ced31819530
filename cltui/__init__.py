"""cltui: a terminal capture browser, replayer and exporter for OpenCL Intercept Layer dumps."""

__version__ = "0.1.0"
