# %% [markdown]
# # Attention, in pictures
#
# Episode 1 builds attention from four operations: matrix
# multiplication, transposition, scaling and softmax, and then one
# more matrix multiplication that mixes the values. This notebook
# draws what they produce. First, which words attend to which in
# three short sentences with real word vectors; then what the
# scaling step does as vectors get longer. Every number written
# here is checked by an `assert` in the code below it: if one ever
# changes, the notebook stops with an error instead of telling you
# something false.
#
# The pictures come from `opbyop.plot`, which needs matplotlib:
# install the library with its `plot` extra,
# `pip install "opbyop[plot] @ git+https://github.com/opbyop/opbyop"`.

# %%
import itertools
import math

import numpy as np
from IPython.display import display
from matplotlib.figure import Figure
from opbyop import attention_weights, softmax
from opbyop.plot import attention_heatmap, picture
from opbyop.words import word_vectors

# %% [markdown]
# ## Three sentences with "bank"
#
# Each word becomes its real input vector from the all-MiniLM-L6-v2
# model: 384 numbers per word. As in the episode, the queries, the
# keys and the values are all the same vectors (Q = K = V), so the
# weights are `softmax(x @ x.T / math.sqrt(384))`. In each picture,
# a row is one word asking "whom do I look at?", and its cells say
# how much of its attention goes to each word of the sentence.
# Every row adds up to 1. The weights here are all close to each
# other, so the colours of each grid span only its own smallest to
# largest weight: that makes small differences visible, and the
# numbers in the cells give their size.

# %%
SENTENCES = [
    "the bank closed its doors and kept my money",
    "the blood bank needs more donors",
    "we fished from the river bank",
]

bank_weights, lengths, scores = {}, [], []
for sentence in SENTENCES:
    words = sentence.split()
    n = len(words)
    x = word_vectors(sentence)  # [n, 384]
    weights = attention_weights(x, x)  # [n, n]
    bank_weights[sentence] = weights
    lengths.extend(np.linalg.norm(x, axis=1))
    # what softmax sees: the scaled scores
    scores.extend((x @ x.T / math.sqrt(384)).ravel())
    own = np.diag(weights)  # the diagonal: each word's own weight
    print(f"{sentence!r}: {n} words, 1/n = {1 / n:.3f}")
    print(f"  weights {weights.min():.3f} to {weights.max():.3f}")
    print(f"  own weight {own.min():.3f} to {own.max():.3f}")
    figure = attention_heatmap(
        weights,
        words,
        title=sentence,
        value_range=None,  # colours fitted to this grid's weights
        decimals=3,
    )
    display(
        picture(
            figure,
            f"Grid of scaled attention weights for {sentence!r}, "
            "queries on rows and keys on columns: every cell is "
            f"close to 1/{n} = {1 / n:.2f}, so every word spreads "
            "its attention almost evenly over the sentence; each "
            "word's weight for itself, on the diagonal, is only "
            "slightly larger.",
        )
    )

# %% [markdown]
# The numbers are almost flat. In a sentence of n words every
# weight is close to 1/n (about 0.11 for nine words, 0.17 for six),
# within 10% of it. The largest weight in each row is the word's
# own, on the diagonal, but only just: it leads the next one by
# 0.002 or more. No word picks out its context yet. That is
# expected. These vectors are short: their lengths go from 0.93 to
# 1.34, where 384 random numbers from the standard normal
# distribution would have a length of about sqrt(384), 19.6. So
# after dividing by sqrt(384), every score is between -0.01 and
# 0.1, and softmax of nearly equal scores is nearly uniform.
# Episode 2, "Where Q, K and V come from", gives the queries and
# keys their own learned projections, and that is what lets a word
# put most of its attention on the words that matter to it.

# %%
for sentence, weights in bank_weights.items():
    n = len(weights)
    assert np.allclose(weights.sum(axis=1), 1), "rows add up to 1"
    assert np.all(np.abs(weights * n - 1) < 0.10), "10% off 1/n"
    own_is_largest = weights.argmax(axis=1) == np.arange(n)
    assert own_is_largest.all(), f"{sentence!r}: own weight not max"
    second = np.sort(weights, axis=1)[:, -2]  # next largest in a row
    assert np.all(np.diag(weights) - second > 0.002), "own leads"
print(f"lengths from {min(lengths):.2f} to {max(lengths):.2f}")
print(f"scaled scores from {min(scores):.3f} to {max(scores):.3f}")
assert round(min(lengths), 2) == 0.93
assert round(max(lengths), 2) == 1.34
assert -0.01 < min(scores) < max(scores) < 0.1
assert round(math.sqrt(384), 1) == 19.6
print("Checked: every weight within 10% of 1/n, own word largest.")

# %% [markdown]
# ## The same sentence without the scaling
#
# For contrast, here is "the blood bank needs more donors" with the
# division left out: `softmax(x @ x.T)`. The scores are now 19.6
# times larger, so their differences matter. A vector's score with
# itself is its squared length, larger than its score with the
# other words, so the diagonal stands out: each word gives itself
# between 0.31 and 0.52 of its attention, and the rest share what
# is left.
#
# So the grid without scaling looks sharper than the one with it.
# That is no case against scaling: it is made for queries and keys
# whose numbers are about 1 in size, like the random ones further
# down. These vectors have a length of about 1 spread over 384
# numbers, so their raw scores are small already, and dividing by
# sqrt(384) only flattens them more. In a real model, attention
# sees the output of the learned projections of episode 2 instead.

# %%
sentence = "the blood bank needs more donors"
words = sentence.split()
n = len(words)
x = word_vectors(sentence)
unscaled = softmax(x @ x.T)  # [n, n], no division by sqrt(384)
own = np.diag(unscaled)  # the diagonal: each word's own weight
# np.eye(n, dtype=bool) is True on the diagonal; ~ flips it, so
# this takes every weight a word gives to another word
others = unscaled[~np.eye(n, dtype=bool)]
print(f"own weight unscaled: {[round(float(w), 2) for w in own]}")
print(f"other weights unscaled: {others.max():.2f} at most")

assert np.allclose(unscaled.sum(axis=1), 1)
assert np.all(unscaled.argmax(axis=1) == np.arange(n))
assert round(own.min(), 2) == 0.31
assert round(own.max(), 2) == 0.52
scaled_own = np.diag(bank_weights[sentence])
assert np.all(own > scaled_own), "scaling flattens the diagonal"

title = f"not scaled: {sentence}"
figure = attention_heatmap(
    unscaled,
    words,
    title=title,
    value_range=None,  # fitted, as above
)
display(
    picture(
        figure,
        "Grid of unscaled attention weights, softmax of x times x "
        f"transposed, for {sentence!r}: the diagonal stands out, "
        f"each word giving itself between {own.min():.2f} and "
        f"{own.max():.2f} of its attention, while the other cells "
        f"are between {others.min():.2f} and {others.max():.2f}.",
    )
)

# %% [markdown]
# ## Why divide by sqrt(d)?
#
# Real word vectors are only one case. To see what the scaling does
# in general, take random queries and keys, every number drawn on
# its own from the standard normal distribution, and let d, how
# many numbers each query and key holds, grow from 8 to 4096 (plus
# 384 and 768). These numbers are about 1 in size, the case scaling
# is made for. The queries and the keys are different vectors, as
# in a trained model; whether a trained model's queries and keys
# behave like these random ones is measured in episode 2.
#
# d is the size of the vectors one attention head compares. Real
# models split each word's vector into several heads (episode 3):
# GPT-2 small and BERT-base compare 64 numbers per head, and
# all-MiniLM-L6-v2 compares 32. The 768 below is one head that
# sees a whole 768-number vector, as in the episode's example.
#
# For each d we draw 200 groups of 10 queries and 10 keys; each
# query attends over the 10 keys of its group. That gives 2000 rows
# of weights, and we average two measures of a row over them:
#
# - the largest weight: 0.1 means spread evenly over the 10 keys,
#   1 means all on one key;
# - the entropy: `-sum(w * log(w))`, in nats (the unit of the
#   natural logarithm), which is ln(10), about 2.30, when the weight
#   is spread evenly, and 0 when it all sits on one key.
#
# The table also gives `std`, the standard deviation of the raw
# scores: how far, typically, a score is from 0.

# %%
SIZES = sorted([2**p for p in range(3, 13)] + [384, 768])
GROUPS, N_QUERIES, N_KEYS = 200, 10, 10


def entropy(w):  # [..., n] -> [...], in nats
    logs = np.log(w, where=w > 0, out=np.zeros_like(w))
    return -(w * logs).sum(axis=-1)  # a zero weight adds nothing


rng = np.random.default_rng(0)
table = {}  # d -> the measures below
for d in SIZES:
    q = rng.standard_normal((GROUPS, N_QUERIES, d))  # [200, 10, d]
    k = rng.standard_normal((GROUPS, N_KEYS, d))  # [200, 10, d]
    raw_scores = q @ k.swapaxes(-1, -2)  # [200, 10, 10]
    scaled = attention_weights(q, k)  # divided by math.sqrt(d)
    # scale: what the scores are multiplied by; 1.0 leaves them
    # as they are (the default is 1 / math.sqrt(d))
    raw = attention_weights(q, k, scale=1.0)  # not divided
    table[d] = {
        "score std": raw_scores.std(),  # how far scores spread
        "max scaled": scaled.max(axis=-1).mean(),
        "max unscaled": raw.max(axis=-1).mean(),
        "entropy scaled": entropy(scaled).mean(),
        "entropy unscaled": entropy(raw).mean(),
    }

print(
    f"{'d':>5} {'std':>6} {'sqrt(d)':>7} |  largest weight  |"
    "  entropy (nats)"
)
print(f"{'':>20} | scaled unscaled  | scaled unscaled")
for d, row in table.items():
    print(
        f"{d:>5} {row['score std']:>6.1f} {math.sqrt(d):>7.1f} |"
        f" {row['max scaled']:>6.3f} {row['max unscaled']:>8.3f}  |"
        f" {row['entropy scaled']:>6.3f}"
        f" {row['entropy unscaled']:>8.3f}"
    )
print(f"most spread out: ln({N_KEYS}) = {math.log(N_KEYS):.3f}")

# %% [markdown]
# The raw scores `q @ k.T` spread out like sqrt(d): their standard
# deviation is about 27.7 for d = 768. Softmax turns a few points of
# difference between scores into a large ratio of weights, so
# without the scaling the largest score takes more and more of the
# weight as d grows: above 0.9 from d = 128 on, above 0.95 at
# d = 768, and the entropy falls towards 0 (below 0.05 at d = 4096).
# Divided by sqrt(d), the scores keep the same spread at every size,
# and so do the weights: the largest stays near 0.32 and the entropy
# near 1.93, whatever d is (averaged over every d).

# %%
for d, row in table.items():
    assert 0.95 < row["score std"] / math.sqrt(d) < 1.05, d
    assert 0.30 < row["max scaled"] < 0.34, d
    assert 1.89 < row["entropy scaled"] < 1.96, d
    assert row["entropy unscaled"] < math.log(N_KEYS), d
    if d >= 128:
        assert row["max unscaled"] > 0.9, d
assert round(table[768]["score std"], 1) in (27.6, 27.7, 27.8)
assert table[768]["max unscaled"] > 0.95
assert table[4096]["entropy unscaled"] < 0.05
scaled_max = [row["max scaled"] for row in table.values()]
scaled_entropy = [row["entropy scaled"] for row in table.values()]
assert round(np.mean(scaled_max), 2) == 0.32  # averaged over every d
assert round(np.mean(scaled_entropy), 2) == 1.93
doubling = [table[d] for d in SIZES if d & (d - 1) == 0]  # 8 ... 4096
for a, b in itertools.pairwise(doubling):
    assert a["max unscaled"] < b["max unscaled"], "unscaled max grows"
    assert a["entropy unscaled"] > b["entropy unscaled"], "falls"
print("Checked: scaled stays flat; unscaled goes to one key.")

# %% [markdown]
# The same numbers as pictures. The horizontal axis has a tick at
# every d measured: it doubles from 8 to 4096, with 384 and 768 in
# between. Dotted lines mark the head sizes of all-MiniLM-L6-v2
# (32) and of GPT-2 small and BERT-base (64).


# %%
def chart(measure, ylabel, title, floor_or_ceiling):
    """A measure against d, scaled and unscaled, and a level line."""
    figure = Figure(figsize=(6, 4), facecolor="white")
    ax = figure.add_subplot()
    for kind, colour, marker in [
        ("scaled", "#0072b2", "o"),  # blue circles
        ("unscaled", "#d55e00", "s"),  # orange squares
    ]:
        values = [table[d][f"{measure} {kind}"] for d in SIZES]
        ax.plot(SIZES, values, c=colour, marker=marker, label=kind)
    level, label = floor_or_ceiling
    ax.axhline(level, c="gray", lw=1, ls="--", label=label)
    for head in (32, 64):
        ax.axvline(head, c="gray", lw=1, ls=":")
    # one legend entry for both dotted lines
    ax.plot([], [], c="gray", lw=1, ls=":", label="head sizes 32, 64")
    ax.set_xscale("log", base=2)
    ax.set_xticks(SIZES, [str(d) for d in SIZES], fontsize=8)
    ax.tick_params(axis="x", labelrotation=90)
    ax.minorticks_off()
    ax.set_xlabel("d, numbers per query and key")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(loc="center right", fontsize=8)
    figure.set_layout_engine("tight")
    return figure


max_scaled = [table[d]["max scaled"] for d in SIZES]
max_unscaled = [table[d]["max unscaled"] for d in SIZES]
display(
    picture(
        chart(
            "max",
            "largest weight in a row (average)",
            "How much goes to the top key",
            (1 / N_KEYS, "0.1: spread evenly over 10 keys"),
        ),
        "Line chart of the average largest attention weight against "
        "d, from 8 to 4096 on a doubling scale, with 10 random keys "
        "per query. Scaled, the line stays flat near "
        f"{np.mean(max_scaled):.2f}. Unscaled, it climbs from "
        f"{max_unscaled[0]:.2f} at d = 8 to "
        f"{table[768]['max unscaled']:.2f} at d = 768 and "
        f"{max_unscaled[-1]:.2f} at d = 4096: nearly all the weight "
        "goes to one key.",
    )
)

ent_scaled = [table[d]["entropy scaled"] for d in SIZES]
ent_unscaled = [table[d]["entropy unscaled"] for d in SIZES]
display(
    picture(
        chart(
            "entropy",
            "entropy of a row, in nats (average)",
            "How spread out the weights are",
            (math.log(N_KEYS), "ln(10): most spread out"),
        ),
        "Line chart of the average entropy of a row of attention "
        "weights against d, from 8 to 4096 on a doubling scale, with "
        f"a dashed line at ln(10) = {math.log(N_KEYS):.2f}, the most "
        "spread out possible. Scaled, the entropy stays flat near "
        f"{np.mean(ent_scaled):.2f}. Unscaled, it falls from "
        f"{ent_unscaled[0]:.2f} to {ent_unscaled[-1]:.2f}: the "
        "weights collapse onto a single key.",
    )
)

# %% [markdown]
# That is what the division is for: without it, bigger vectors
# would make attention look at one word only. The episode measures
# what that does to the gradient, the signal training follows. At
# d = 768, a softmax that sure of itself barely changes when its
# scores change: most unscaled rows get almost no gradient, rows
# whose best two scores are close get a lot, and every scaled row
# gets a moderate one. At d = 64, a real head size, a typical row
# gets more gradient unscaled, though its weights are still far
# more concentrated. The Transformer paper suspects small
# gradients are why unscaled attention did worse at large d.
