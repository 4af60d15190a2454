"""Command palette: one entry per main-screen action, straight from the action table."""

from __future__ import annotations

from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider

from htam_tui.actions import MAIN_ACTIONS, key_label


class HtamCommands(Provider):
    def _entries(self):
        keymap = dict(getattr(self.app, "keymap", {}))
        for spec in MAIN_ACTIONS:
            if spec.action == "command_palette":
                continue
            yield spec, f"{spec.description}", f"key {key_label(keymap.get(spec.id, spec.key))} · {spec.id}"

    async def discover(self) -> Hits:
        for spec, title, help_text in self._entries():
            yield DiscoveryHit(title, partial(self.app.run_action, spec.action), help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for spec, title, help_text in self._entries():
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), partial(self.app.run_action, spec.action), help=help_text)
