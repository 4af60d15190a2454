"""htam terminal app (Textual). Presentation and input only: it renders the engine's event
stream and sends the engine commands; it holds no optimization logic.

Configuration (the same TOML file as the model settings, see htam_engine.propose.config):

    [ui]
    refresh_hz = 10            # repaints per second at most; lower it on a slow link
    bell = true                # ring the terminal bell when a decision is pending
    auto_open_approval = true  # open the approval prompt as soon as a candidate waits
    theme = "ansi-dark"        # any Textual theme; ansi-* use the terminal's own colours

    [keys]                     # binding id = key(s); `?` in the app lists every id
    "app.pause" = "P"
    "approval.veto" = "n,v"
"""
