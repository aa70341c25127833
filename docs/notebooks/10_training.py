# %% [markdown]
# # Training, in pictures
#
# Episode 10 trains a GPT for a few seconds on the page and reads
# two longer runs from their logs: the recorded 5-minute run of
# `python -m opbyop.train` (2 blocks, 64 wide) and the run that
# made the model the library ships (4 blocks, 128 wide, 10,000
# steps). This notebook draws more of those logs: the training
# loss of both runs step by step, the learning rate along the
# shipped run, and what each run wrote at each tenth of its run.
# Nothing here trains. Every number written here is checked by an
# `assert` in the code below it.
#
# The 5-minute log is in the repository
# (`benchmarks/results/train_5min.json`): run this notebook from a
# clone. The pictures need matplotlib
# (`pip install "opbyop[plot]"`).

# %%
import json
import math
from pathlib import Path

import numpy as np
import opbyop
from IPython.display import display
from opbyop import gpt, optim
from opbyop.plot import line_chart, picture

root = Path(opbyop.__file__).resolve().parents[2]  # the clone
results = root / "benchmarks" / "results" / "train_5min.json"
five_minutes = json.loads(results.read_text())
folder = gpt.load().folder
shipped = json.loads((folder / "log.json").read_text())
LOGS = {"5 minutes": five_minutes, "shipped": shipped}

# %% [markdown]
# ## The training loss, step by step
#
# Each log keeps the training loss about 200 times along its run:
# the mean over the steps since the last point, in nats per byte.
# Divided by ln 2 it is bits per byte. Read at the same steps, from
# step 100 to step 7,500, the two runs can be drawn together.

# %%
steps = np.arange(100, 7501, 100)
curves = {}
for name, log in LOGS.items():
    logged = np.array([[s, loss] for s, _, loss in log["train"]])
    bits = np.interp(steps, logged[:, 0], logged[:, 1]) / math.log(2)
    curves[name] = bits.round(3).tolist()

at = {s: i for i, s in enumerate(steps.tolist())}
for name, bits in curves.items():
    print(
        f"{name}: step 1,000 {bits[at[1000]]:.2f}, "
        f"step 7,500 {bits[at[7500]]:.2f} bits per byte"
    )

display(
    picture(
        line_chart(
            steps,
            curves,
            title="Training loss of both runs, by step",
            x_label="step",
            y_label="bits per byte, training batches",
        ),
        "Line chart of the training loss in bits per byte against "
        "the step, from 100 to 7,500, for the 5-minute run and the "
        "shipped model's run. At step 1,000: "
        f"{curves['5 minutes'][at[1000]]:.2f} and "
        f"{curves['shipped'][at[1000]]:.2f}; at step 7,500: "
        f"{curves['5 minutes'][at[7500]]:.2f} and "
        f"{curves['shipped'][at[7500]]:.2f}.",
    )
)

# %% [markdown]
# Step for step, the larger model learns faster: at step 1,000 it
# is 0.2 bits per byte lower, and the gap grows to 0.6 by
# step 7,500. Each of its steps also costs about 14 times as much
# (95 minutes for 10,000 steps, against 5 minutes for 7,543), which
# is why a 5-minute run uses the small one.

# %%
small, large = curves["5 minutes"], curves["shipped"]
assert round(small[at[1000]] - large[at[1000]], 1) == 0.2
assert round(small[at[7500]] - large[at[7500]], 1) == 0.6
per_step = {
    name: log["final"]["seconds"] / log["final"]["step"]
    for name, log in LOGS.items()
}
assert round(per_step["shipped"] / per_step["5 minutes"]) == 14

# %% [markdown]
# ## The learning rate along the shipped run
#
# `fit` sets every step's learning rate with
# `optim.lr_schedule`: up in a straight line for 100 steps, then
# half a cosine down to a tenth of the peak at the last step.

# %%
recipe = shipped["recipe"]
total = shipped["budget"]["steps"]
along = list(range(0, total + 1, 20))
rates = [
    optim.lr_schedule(
        s,
        max_lr=recipe["lr"],
        min_lr=recipe["min_lr"],
        warmup=recipe["warmup"],
        total=total,
    )
    for s in along
]
display(
    picture(
        line_chart(
            along,
            {"learning rate": rates},
            title="The shipped run's learning rate",
            x_label="step",
            y_label="learning rate",
        ),
        "Line chart of the learning rate against the step for the "
        f"shipped run: up to {max(rates):.0e} by step 100, then "
        f"down along half a cosine to {rates[-1]:.0e} at step "
        f"{total:,}.",
    )
)
assert (recipe["lr"], recipe["min_lr"], recipe["warmup"]) == (
    3e-3,
    3e-4,
    100,
)
assert math.isclose(max(rates), 3e-3)
assert math.isclose(rates[-1], 3e-4)

# %% [markdown]
# ## What each run wrote, along the way
#
# At each tenth of a run, `fit` lets the model write 60 bytes after
# `def `, always at the same seed. Below, the first 52 of them at
# every checkpoint (a newline shows as ↵, any other unprintable
# byte as ·). The shipped run goes from noise to letters, to words,
# to lines that look like Python; the 5-minute run stops around
# the words.


# %%
def shown(text):
    """↵ for a newline, · for other unprintable bytes."""
    return "".join(
        "↵" if b == 10 else chr(b) if 32 <= b < 127 else "·"
        for b in text.encode()
    )


for name, log in LOGS.items():
    print(name)
    for sample in log["samples"][:11]:
        line = shown(sample["text"])[:52]
        print(f"{sample['step']:>6}: def {line}")

# %%
checkpoints = [s["step"] for s in shipped["samples"][:11]]
assert checkpoints == list(range(0, 10001, 1000))
assert all(s["prompt"] == "def " for s in shipped["samples"][:11])
assert len(five_minutes["samples"]) == len(shipped["samples"]) == 14
