"""Screens and modal prompts of the app."""
