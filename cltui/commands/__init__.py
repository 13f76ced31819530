"""One module per CLI subcommand; each imports heavy libraries inside its function."""
