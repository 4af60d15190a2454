"""Cheating and honest candidates for the integrity checks, with tiny problems to run them on."""
