from . import utils  # as the real package: its utils import the LLM clients at the top
