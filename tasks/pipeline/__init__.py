"""The whole pipeline as one run: its config (curate → collect → replay → score → report)."""
