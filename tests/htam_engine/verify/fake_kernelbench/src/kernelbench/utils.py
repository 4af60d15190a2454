"""Test double: the imports at the top of KernelBench's utils.py (none is used to evaluate)."""

from dotenv import load_dotenv

load_dotenv()

from litellm import completion  # noqa: E402,F401
from openai import OpenAI  # noqa: E402,F401
from tqdm import tqdm  # noqa: E402,F401
