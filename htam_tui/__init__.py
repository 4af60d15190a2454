"""htam terminal app (Textual). Presentation and input only."""
