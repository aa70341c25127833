# %% [markdown]
# # Attention, in pictures
#
# The figures that go with episode 1.

# %%
import numpy as np

print(np.round(np.linspace(0, 1, 3), 2))
