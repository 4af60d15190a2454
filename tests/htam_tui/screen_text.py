"""Read what the terminal shows, as plain text lines (for assertions)."""

from __future__ import annotations


def screen_text(app) -> str:
    strips = app.screen._compositor.render_strips()
    return "\n".join("".join(seg.text for seg in strip) for strip in strips)
