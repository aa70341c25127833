# %% [markdown]
# # Attention, in pictures
#
# Episode 1 builds attention from four small operations: multiply the queries by the
# keys, scale, softmax, and mix the values. This notebook draws what those operations
# produce. First we look at which words attend to which in three short sentences with
# real word vectors, then at what the scaling step does as vectors get longer. Every
# number written here is checked by an `assert` in the code below it, so if one ever
# changes, the notebook stops with an error instead of telling you something false.

# %%
import base64
import html
import io
import itertools

import matplotlib

matplotlib.use("Agg")  # draw to memory, no window
import matplotlib.pyplot as plt
import numpy as np
from IPython.display import HTML, display

from opbyop import attention_weights, softmax
from opbyop.words import word_vectors

CMAP = plt.get_cmap("viridis")  # readable for colour-blind readers, dark (0) to light (1)


def show(fig, alt):
    """Display a figure as a PNG <img> on a white card, with alt text."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, facecolor="white", bbox_inches="tight")
    plt.close(fig)
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    style = "background:#fff;border-radius:6px;padding:6px;max-width:100%"
    img = f'<img src="data:image/png;base64,{data}" alt="{html.escape(alt)}" style="{style}">'
    display(HTML(img))


def text_colour(rgba):
    """Black or white, whichever contrasts more with a cell of this colour (WCAG)."""
    r, g, b = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgba[:3]]
    luminance = 0.2126 * r + 0.7152 * g + 0.0722 * b
    return "black" if luminance > 0.179 else "white"  # 0.179: both contrasts are equal


def heatmap(weights, words, title):
    """Queries on rows, keys on columns, each cell's weight written in it."""
    n = len(words)
    fig, ax = plt.subplots(figsize=(6, 5))
    image = ax.imshow(weights, cmap=CMAP, vmin=0, vmax=1)
    ax.set_xticks(range(n), words, rotation=45, ha="right")
    ax.set_yticks(range(n), words)
    ax.set_xlabel("key (the word looked at)")
    ax.set_ylabel("query (the word looking)")
    ax.set_title(title)
    for i in range(n):
        for j in range(n):
            colour = text_colour(CMAP(weights[i, j]))  # vmin=0, vmax=1: weight = position
            ax.text(j, i, f"{weights[i, j]:.2f}", ha="center", va="center", fontsize=8, c=colour)
    fig.colorbar(image, ax=ax, label="attention weight")
    fig.tight_layout()
    return fig


# %% [markdown]
# ## Three sentences with "bank"
#
# Each word becomes its real input vector from the all-MiniLM-L6-v2 model: 384 numbers
# per word. As in the episode, the queries, the keys and the values are all the same
# vectors (Q = K = V), and the weights are `softmax(x @ x.T / sqrt(384))`.
# In each picture, a row is one word asking "whom do I look at?", and its cells say how
# much of its attention goes to each word of the sentence. Every row adds up to 1.
# The colour scale runs from 0 to 1, the whole range a weight can take.

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
    scores.extend((x @ x.T / np.sqrt(384)).ravel())  # what softmax sees
    own = np.diag(weights)
    print(f"{sentence!r}: {n} words, 1/n = {1 / n:.3f}")
    print(f"  weights from {weights.min():.3f} to {weights.max():.3f}")
    print(f"  own weight from {own.min():.3f} to {own.max():.3f}")
    show(
        heatmap(weights, words, f"Q = K = V, scaled: {sentence!r}"),
        f"Heatmap of scaled attention weights for {sentence!r}, queries on rows and keys "
        f"on columns: every cell is close to 1/{n} = {1 / n:.2f}, so every word spreads its "
        "attention almost evenly over the sentence; each word's weight for itself, on the "
        "diagonal, is only slightly larger.",
    )

# %% [markdown]
# The pictures are almost flat. In a sentence of n words every weight is close to 1/n
# (about 0.11 for nine words, 0.17 for six), within 10% of it. The largest weight in
# each row is the word's own, on the diagonal, but only just: no word picks out its
# context yet. That is expected: these vectors have lengths between 0.9 and 1.4, so
# after dividing by sqrt(384), about 19.6, every score is between -0.01 and 0.1, and
# softmax of nearly equal scores is nearly uniform. Episode 2, "Where Q, K and V come from", gives
# the queries and keys their own learned projections, and that is what lets a word put
# most of its attention on the words that matter to it.

# %%
for sentence, weights in bank_weights.items():
    n = len(weights)
    assert np.allclose(weights.sum(axis=1), 1), "rows add up to 1"
    assert np.all(np.abs(weights * n - 1) < 0.10), f"{sentence!r}: a weight is 10% off 1/n"
    assert np.all(weights.argmax(axis=1) == np.arange(n)), f"{sentence!r}: own weight not max"
print(f"vector lengths from {min(lengths):.2f} to {max(lengths):.2f}")
print(f"scaled scores from {min(scores):.3f} to {max(scores):.3f}")
assert 0.9 < min(lengths) < max(lengths) < 1.4, "lengths between 0.9 and 1.4"
assert -0.01 < min(scores) < max(scores) < 0.1, "scaled scores between -0.01 and 0.1"
assert round(np.sqrt(384), 1) == 19.6
print("Checked: every weight within 10% of 1/n, and each row's largest is its own word.")

# %% [markdown]
# ## The same sentence without the scaling
#
# For contrast, here is "the blood bank needs more donors" with the division left out:
# `softmax(x @ x.T)`. The scores are now 19.6 times larger, so their differences
# matter. A vector's score with itself is its squared length, larger than its score
# with the other words, so the diagonal stands out: each word gives itself between
# about 0.3 and 0.5 of its attention, and the rest share what is left.

# %%
sentence = "the blood bank needs more donors"
words = sentence.split()
n = len(words)
x = word_vectors(sentence)
unscaled = softmax(x @ x.T)  # [n, n], no division by sqrt(384)
own = np.diag(unscaled)
print(f"own weight unscaled: {np.round(own, 2)}")
print(f"other weights unscaled: {unscaled[~np.eye(n, dtype=bool)].max():.2f} at most")

assert np.allclose(unscaled.sum(axis=1), 1)
assert np.all(unscaled.argmax(axis=1) == np.arange(n)), "own weight is the largest"
assert np.all((own > 0.3) & (own < 0.55)), "own weight between about 0.3 and 0.5"
assert np.all(own > np.diag(bank_weights[sentence])), "scaling flattened the diagonal"

show(
    heatmap(unscaled, words, f"Q = K = V, not scaled: {sentence!r}"),
    f"Heatmap of unscaled attention weights, softmax of x times x transposed, for "
    f"{sentence!r}: the diagonal stands out, each word giving itself between "
    f"{own.min():.2f} and {own.max():.2f} of its attention, while the other cells are "
    f"between {unscaled.min():.2f} and {unscaled[~np.eye(n, dtype=bool)].max():.2f}.",
)

# %% [markdown]
# ## Why divide by sqrt(d)?
#
# Real word vectors are only one case. To see what the scaling does in general, take
# random queries and keys, drawn independently (a trained model's queries and keys are
# different vectors too), with standard normal entries, and let the vector size d grow
# from 8 to 4096, plus 384 and 768, the sizes of MiniLM and of BERT-base or GPT-2 small.
# For each d we draw 200 groups of 10 queries and 10 keys; each query attends over the
# 10 keys of its group. That gives 2000 rows of weights, and we average two measures of
# a row over them:
#
# - the largest weight: 0.1 means spread evenly over the 10 keys, 1 means all on one key;
# - the entropy, in nats: `-sum(w * log(w))`, which is ln(10), about 2.30, when the
#   weight is spread evenly, and 0 when it all sits on one key.

# %%
SIZES = sorted([2**p for p in range(3, 13)] + [384, 768])  # 8, 16, ..., 4096
GROUPS, N_QUERIES, N_KEYS = 200, 10, 10


def entropy(w):  # [..., n] -> [...], in nats; a zero weight adds nothing
    logs = np.log(w, where=w > 0, out=np.zeros_like(w))
    return -(w * logs).sum(axis=-1)


rng = np.random.default_rng(0)
rows = []
for d in SIZES:
    q = rng.standard_normal((GROUPS, N_QUERIES, d))  # [200, 10, d]
    k = rng.standard_normal((GROUPS, N_KEYS, d))  # [200, 10, d]
    spread = (q @ k.swapaxes(-1, -2)).std()  # how big a raw score typically is
    scaled = attention_weights(q, k)  # softmax(q @ k.T / sqrt(d)), [200, 10, 10]
    raw = attention_weights(q, k, scale=1.0)  # softmax(q @ k.T)
    rows.append(
        (
            d,
            spread,
            scaled.max(axis=-1).mean(),
            raw.max(axis=-1).mean(),
            entropy(scaled).mean(),
            entropy(raw).mean(),
        )
    )
table = {d: r for d, *r in rows}

print(f"{'d':>5} {'score std':>9} {'sqrt(d)':>7} | {'max weight':^17} | {'entropy (nats)':^17}")
print(f"{'':>5} {'':>9} {'':>7} | {'scaled':>8} {'unscaled':>8} | {'scaled':>8} {'unscaled':>8}")
for d, spread, max_s, max_u, ent_s, ent_u in rows:
    print(
        f"{d:>5} {spread:>9.1f} {np.sqrt(d):>7.1f} | {max_s:>8.3f} {max_u:>8.3f} |"
        f" {ent_s:>8.3f} {ent_u:>8.3f}"
    )
print(f"most spread-out entropy, ln({N_KEYS}) = {np.log(N_KEYS):.3f}")

# %% [markdown]
# The raw scores `q @ k.T` spread out like sqrt(d): about 28 for d = 768. Softmax turns
# a few points of difference between scores into a large ratio of weights, so without
# the scaling the largest score takes more and more of the weight as d grows: above 0.9
# from d = 128 on, above 0.95 at d = 768, and the entropy falls towards 0 (below 0.05
# at d = 4096). Divided by sqrt(d), the scores keep the same spread at every size, and
# so do the weights: the largest stays near 0.32 and the entropy near 1.92, whatever d is.

# %%
for d, spread, max_s, max_u, ent_s, ent_u in rows:
    assert 0.95 < spread / np.sqrt(d) < 1.05, f"d={d}: scores do not spread like sqrt(d)"
    assert 0.30 < max_s < 0.34, f"d={d}: scaled max weight {max_s:.3f} not near 0.32"
    assert 1.89 < ent_s < 1.96, f"d={d}: scaled entropy {ent_s:.3f} not near 1.92"
    assert max(ent_s, ent_u) < np.log(N_KEYS), "ln(10) is the most spread out"
    if d >= 128:
        assert max_u > 0.9, f"d={d}: unscaled max weight {max_u:.3f} not above 0.9"
assert round(table[768][0]) == 28, "scores spread about 28 at d = 768"
assert table[768][2] > 0.95, "unscaled max weight above 0.95 at d = 768"
assert table[4096][4] < 0.05, "unscaled entropy below 0.05 at d = 4096"
doubling = [table[d] for d in SIZES if d & (d - 1) == 0]  # 8, 16, 32, ..., 4096
assert all(a[2] < b[2] for a, b in itertools.pairwise(doubling)), "unscaled max grows"
assert all(a[4] > b[4] for a, b in itertools.pairwise(doubling)), "unscaled entropy falls"
print("Checked: scaled stays flat; unscaled goes to one key as d grows.")

# %% [markdown]
# The same numbers as pictures. The horizontal axis doubles d at every tick, and a
# vertical line marks d = 768.

# %%
ds = np.array(SIZES)
max_scaled, max_raw = [np.array([r[i] for r in rows]) for i in (2, 3)]
ent_scaled, ent_raw = [np.array([r[i] for r in rows]) for i in (4, 5)]
scaled_style = {"c": "#0072b2", "marker": "o", "markersize": 4}  # blue, circles
unscaled_style = {"c": "#d55e00", "marker": "s", "markersize": 4}  # orange, squares
powers = [d for d in SIZES if d & (d - 1) == 0]


def size_axis(ax):
    """Doubling x axis labelled 8, 16, ..., 4096, and a mark at d = 768."""
    ax.set_xscale("log", base=2)
    ax.set_xticks(powers, [str(d) for d in powers], fontsize=8)
    ax.minorticks_off()
    ax.axvline(768, c="gray", lw=1, ls="-.", label="d = 768 (BERT-base, GPT-2 small)")
    ax.set_xlabel("vector size d (doubling at each tick)")


fig, ax = plt.subplots(figsize=(6, 4))
ax.plot(ds, max_scaled, label="scaled: softmax(q @ k.T / sqrt(d))", **scaled_style)
ax.plot(ds, max_raw, label="unscaled: softmax(q @ k.T)", **unscaled_style)
ax.axhline(1 / N_KEYS, c="gray", lw=1, ls=":", label="0.1: spread evenly over 10 keys")
size_axis(ax)
ax.set_ylim(0, 1.02)
ax.set_ylabel("largest weight in a row (average)")
ax.set_title("How much goes to the top key")
ax.legend(loc="center right", fontsize=8)
fig.tight_layout()
show(
    fig,
    "Line chart of the average largest attention weight against vector size d, from 8 "
    f"to 4096 on a doubling scale, with {N_KEYS} random keys per query. Scaled, the line "
    f"stays flat near {max_scaled.mean():.2f}. Unscaled, it climbs from {max_raw[0]:.2f} "
    f"at d = 8 to {table[768][2]:.2f} at d = 768 and {max_raw[-1]:.2f} at d = 4096: nearly "
    "all the weight goes to one key.",
)

fig, ax = plt.subplots(figsize=(6, 4))
ax.plot(ds, ent_scaled, label="scaled", **scaled_style)
ax.plot(ds, ent_raw, label="unscaled", **unscaled_style)
ax.axhline(np.log(N_KEYS), c="gray", lw=1, ls="--", label="ln(10): most spread out")
size_axis(ax)
ax.set_ylim(0, 2.5)
ax.set_ylabel("entropy of a row, in nats (average)")
ax.set_title("How spread out the weights are")
ax.legend(loc="center right", fontsize=8)
fig.tight_layout()
show(
    fig,
    "Line chart of the average entropy of a row of attention weights against vector "
    f"size d, from 8 to 4096 on a doubling scale, with a dashed line at ln(10) = "
    f"{np.log(N_KEYS):.2f}, the most spread out possible. Scaled, the entropy stays flat "
    f"near {ent_scaled.mean():.2f}. Unscaled, it falls from {ent_raw[0]:.2f} to "
    f"{ent_raw[-1]:.2f}: the weights collapse onto a single key.",
)

# %% [markdown]
# That is the whole reason for the division: without it, bigger vectors would make
# attention look at one word only. The episode shows why that is bad for learning: a
# softmax that sure of itself barely changes when its scores change, so it barely learns.
