"""The chapter's Transformer as the parity goldens build it: the classes of
export/pytorch/model.py, the one PyTorch definition of the model (the file `anatomy export`
ships), with the goldens' small config (make_config). The golden generators import this file, so
that this is the one place that knows where model.py lives."""
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "export" / "pytorch"))
import model  # noqa: E402
from model import *  # noqa: E402,F401,F403  (the classes, by the names the goldens use)

# The goldens' model: small enough that a golden file holds every value of a whole model.
SMALL = dict(vocab_size=50, hidden_size=32, num_attention_heads=4, num_hidden_layers=2,
             intermediate_size=64, max_position_embeddings=16)


def make_config(**fields):
    """The goldens' small config with the given fields replaced (the rest: anatomy's defaults)."""
    return model.make_config("the parity goldens' config", **{**SMALL, **fields})
