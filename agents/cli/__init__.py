"""The one `tooluse` command: its dispatcher, the config loader and a module per subcommand."""
