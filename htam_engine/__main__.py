from htam_engine.cli import entry

entry()
