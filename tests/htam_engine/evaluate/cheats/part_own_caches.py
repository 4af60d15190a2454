import tempfile
from pathlib import Path

# This sandbox's own compile caches' folder, <tmp>/htam-candidate-compile-<zygote pid>-*: its TMPDIR points
# inside it (<...>/caches-*/tmp), so tempfile.gettempdir() alone would not find the others; they are beside
# it, in the zygote's temporary folder (SHARED_TMP).
OWN = next((p for p in Path(tempfile.gettempdir()).parents if p.name.startswith("htam-candidate-compile-")),
           Path(tempfile.gettempdir()) / "htam-candidate-compile-0-x")
SHARED_TMP = OWN.parent
