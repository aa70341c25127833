"""Training a model: AdamW, gradient clipping and the learning-rate schedule.

Parameters and gradients are nested structures of NumPy arrays. The
functions here walk them the same way:

- dicts (their values), lists and tuples (named tuples too) and dataclass
  instances (their fields) are walked into, all the way down;
- every NumPy array found is a parameter (or a gradient), named by its path,
  for example ``blocks.0.attn.weight``;
- everything else (numbers, strings, None, a config) is left alone.

So a model's parameters can carry their config beside their arrays.
Gradients must have arrays at the same paths, with the same shapes; the
containers may differ (a dict's key ``"wte"`` and a field ``wte`` give the
same path), and so may what else they hold. An array found twice (the same
object at two paths) is refused by `AdamW`: it would be updated twice.

References
----------
.. [1] D. P. Kingma and J. Ba, "Adam: A Method for Stochastic Optimization",
   2014, arXiv:1412.6980.
.. [2] I. Loshchilov and F. Hutter, "Decoupled Weight Decay Regularization",
   2017, arXiv:1711.05101.
.. [3] A. Karpathy, nanoGPT, ``train.py`` (its ``get_lr`` and its groups of
   parameters with and without weight decay).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator
from numbers import Real
from typing import Any

import numpy as np
from numpy.typing import NDArray

from opbyop._threads import on_every_core

__all__ = ["AdamW", "clip_grad_norm", "lr_schedule", "named_arrays"]

Array = NDArray[Any]


def named_arrays(tree: object) -> dict[str, Array]:
    """Every NumPy array in `tree`, by path, in the order they are found.

    Parameters
    ----------
    tree : object
        Dicts, lists, tuples and dataclasses, nested to any depth. Anything
        else that is not a NumPy array is skipped.

    Returns
    -------
    dict of str to numpy.ndarray
        The arrays themselves (not copies), keyed by their path: keys,
        indices and field names joined by dots.

    Examples
    --------
    >>> import numpy as np
    >>> from opbyop import optim
    >>> tree = {"wte": np.zeros((3, 2)), "blocks": [{"b": np.zeros(2)}]}
    >>> list(optim.named_arrays(tree))
    ['wte', 'blocks.0.b']
    >>> list(optim.named_arrays({"config": (4, "gelu"), "w": np.ones(1)}))
    ['w']
    """
    return dict(_walk(tree, ""))


def _walk(tree: object, path: str) -> Iterator[tuple[str, Array]]:
    """(path, array) for every array under `tree`, depth first."""
    if isinstance(tree, np.ndarray):
        yield path, tree
        return
    if isinstance(tree, dict):
        children: Any = tree.items()
    elif isinstance(tree, tuple) and hasattr(tree, "_fields"):
        children = zip(tree._fields, tree, strict=True)  # a named tuple
    elif isinstance(tree, (list, tuple)):
        children = enumerate(tree)
    elif dataclasses.is_dataclass(tree) and not isinstance(tree, type):
        fields = dataclasses.fields(tree)
        children = ((f.name, getattr(tree, f.name)) for f in fields)
    else:
        return  # a number, a string, None...: not a parameter
    for key, child in children:
        yield from _walk(child, f"{path}.{key}" if path else str(key))


def _matching(params: dict[str, Array], grads: object) -> dict[str, Array]:
    """The arrays of `grads`, checked to match `params` path by path."""
    found = named_arrays(grads)
    missing = [path for path in params if path not in found]
    extra = [path for path in found if path not in params]
    if missing or extra:
        raise ValueError(
            "grads must have the structure of params: "
            f"missing {missing[:3]}, unexpected {extra[:3]}"
        )
    for path, param in params.items():
        if found[path].shape != param.shape:
            raise ValueError(
                f"grads {path} has shape {found[path].shape}, "
                f"the parameter {param.shape}"
            )
    return found


def _number(value: object, name: str) -> float:
    """`value` as a float, or a TypeError naming `name`."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(f"{name} must be a real number, got {value!r}")
    return float(value)


def _at_least_zero(value: object, name: str) -> float:
    """`value` as a float >= 0, or an error naming `name`."""
    number = _number(value, name)
    if not number >= 0:  # NaN fails too
        raise ValueError(f"{name} must be >= 0, got {value!r}")
    return number


# --8<-- [start:AdamW]
class AdamW:
    """Adam with decoupled weight decay, as ``torch.optim.AdamW`` computes it.

    Each step, for each parameter ``p`` with gradient ``g``, at step ``t``
    (1 for the first step)::

        p *= 1 - lr * weight_decay         # matrices only (2+ dimensions)
        m += (1 - beta1) * (g - m)         # running mean of g
        v = beta2 * v + (1 - beta2) * g*g  # running mean of g squared
        denom = sqrt(v) / sqrt(1 - beta2**t) + eps
        p -= lr / (1 - beta1**t) * m / denom

    As in nanoGPT, the weight decay applies only to parameters of two or
    more dimensions (weight matrices, embeddings); biases and layer-norm
    weights are not decayed.

    Parameters
    ----------
    params : nested structure of numpy.ndarray
        The parameters (see the module's docstring for what is walked). The
        arrays found now are the ones `step` updates, in place; each must be
        a writeable floating-point array, and none may appear twice.
    lr : float, optional
        The learning rate, >= 0. Settable between steps (``opt.lr = ...``),
        as a schedule does. Default 1e-3.
    betas : tuple of two floats, optional
        The decay rates of the running means, each in [0, 1).
        Default (0.9, 0.999).
    eps : float, optional
        Added to the denominator, >= 0. Default 1e-8.
    weight_decay : float, optional
        >= 0. Default 0.01, PyTorch's.

    Attributes
    ----------
    params : dict of str to numpy.ndarray
        The parameters, by path.
    exp_avg, exp_avg_sq : dict of str to numpy.ndarray
        The running means ``m`` and ``v``, by path (what PyTorch names them),
        in the parameters' dtypes.
    steps : int
        How many steps were taken.

    Examples
    --------
    >>> import numpy as np
    >>> from opbyop import optim
    >>> params = {"w": np.array([[1.0, 2.0]]), "b": np.array([0.5])}
    >>> opt = optim.AdamW(params, lr=0.1, weight_decay=0.0)
    >>> opt.step({"w": np.array([[0.3, -4.0]]), "b": np.array([2.0])})
    >>> params["w"].round(6).tolist(), params["b"].round(6).tolist()
    ([[0.9, 2.1]], [0.4])
    """

    def __init__(
        self,
        params: object,
        *,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.01,
    ) -> None:
        self.lr = lr
        self.beta1, self.beta2 = _betas(betas)
        self.eps = _at_least_zero(eps, "eps")
        self.weight_decay = _at_least_zero(weight_decay, "weight_decay")
        self.params = _parameters(params)
        self.exp_avg = {k: np.zeros_like(p) for k, p in self.params.items()}
        self.exp_avg_sq = {k: np.zeros_like(p) for k, p in self.params.items()}
        self.steps = 0

    @property
    def lr(self) -> float:
        """The learning rate of the next step."""
        return self._lr

    @lr.setter
    def lr(self, value: float) -> None:
        self._lr = _at_least_zero(value, "lr")

    def step(self, grads: object) -> None:
        """Update every parameter in place, from its gradient in `grads`.

        Parameters
        ----------
        grads : nested structure of numpy.ndarray
            The same arrays at the same paths as the parameters, with the
            same shapes and dtypes.
        """
        found = _matching(self.params, grads)
        for path, param in self.params.items():
            if found[path].dtype != param.dtype:
                raise TypeError(
                    f"grads {path} has dtype {found[path].dtype}, "
                    f"the parameter {param.dtype}"
                )
        self.steps += 1
        # The update is element-wise: the cores share the parameters out.
        on_every_core(
            lambda path: self._update(self.params[path], found[path], path),
            list(self.params),
            [param.size for param in self.params.values()],
        )

    def _update(self, p: Array, g: Array, path: str) -> None:
        """One AdamW step for one parameter, in place."""
        lr, beta1, beta2, t = self.lr, self.beta1, self.beta2, self.steps
        if p.ndim >= 2:  # decay matrices only, as nanoGPT
            p *= 1 - lr * self.weight_decay
        m, v = self.exp_avg[path], self.exp_avg_sq[path]
        # In place, one scratch array for every line: a new array per
        # operation would cost as much as the operation.
        work = g - m
        work *= 1 - beta1
        m += work  # m += (1 - beta1) * (g - m)
        np.multiply(g, g, out=work)
        work *= 1 - beta2
        v *= beta2
        v += work  # v = beta2 * v + (1 - beta2) * g * g
        denom = np.sqrt(v, out=work)
        denom /= math.sqrt(1 - beta2**t)
        denom += self.eps
        step = np.divide(m, denom, out=work)
        step *= lr / (1 - beta1**t)
        p -= step  # p -= lr / (1 - beta1**t) * m / denom


# --8<-- [end:AdamW]


def _betas(betas: object) -> tuple[float, float]:
    """`betas` as two floats in [0, 1), or an error naming betas."""
    if not isinstance(betas, (tuple, list)) or len(betas) != 2:
        raise ValueError(
            f"betas must be two numbers (beta1, beta2), got {betas!r}"
        )
    beta1, beta2 = (_number(b, "betas") for b in betas)
    if not (0 <= beta1 < 1 and 0 <= beta2 < 1):
        raise ValueError(f"betas must each be in [0, 1), got {betas!r}")
    return beta1, beta2


def _parameters(params: object) -> dict[str, Array]:
    """The arrays of `params`, checked to be writeable floats found once."""
    found = named_arrays(params)
    if not found:
        raise ValueError("params holds no NumPy arrays: nothing to optimise")
    seen: dict[int, str] = {}
    for path, param in found.items():
        if param.dtype.kind != "f":
            raise TypeError(
                f"params {path} must be a floating-point array, "
                f"got dtype {param.dtype}"
            )
        if not param.flags.writeable:
            raise ValueError(
                f"params {path} is read-only: AdamW updates it in place"
            )
        if id(param) in seen:
            raise ValueError(
                f"params holds one array twice, at {seen[id(param)]} and "
                f"{path}: it would be updated twice per step"
            )
        seen[id(param)] = path
    return found


# --8<-- [start:clip_grad_norm]
def clip_grad_norm(grads: object, max_norm: float) -> float:
    """Scale the gradients, in place, to a total norm of at most `max_norm`.

    The total norm is the Euclidean norm of all the gradients' entries
    together. Every gradient is multiplied by
    ``min(1, max_norm / (norm + 1e-6))``, as
    ``torch.nn.utils.clip_grad_norm_`` does, so the direction of the step
    stays the same and only its length shrinks.

    Parameters
    ----------
    grads : nested structure of numpy.ndarray
        The gradients (see the module's docstring for what is walked),
        floating-point and writeable.
    max_norm : float
        The largest total norm allowed, >= 0.

    Returns
    -------
    float
        The total norm before clipping. When it is not finite (an overflow or
        a NaN upstream), the gradients are left untouched, so the caller can
        stop and report it; PyTorch would multiply them by 0 or NaN.

    Examples
    --------
    >>> import numpy as np
    >>> from opbyop import optim
    >>> grads = {"w": np.array([[3.0, 0.0]]), "b": np.array([4.0])}
    >>> optim.clip_grad_norm(grads, 1.0)
    5.0
    >>> grads["w"].round(6).tolist(), grads["b"].round(6).tolist()
    ([[0.6, 0.0]], [0.8])
    """
    max_norm = _at_least_zero(max_norm, "max_norm")
    found = named_arrays(grads)
    for path, grad in found.items():
        if grad.dtype.kind != "f" or not grad.flags.writeable:
            raise TypeError(
                f"grads {path} must be a writeable floating-point array"
            )
    norms = [float(np.linalg.norm(g.reshape(-1))) for g in found.values()]
    total = math.sqrt(sum(n * n for n in norms))
    if not math.isfinite(total):
        return total
    scale = min(1.0, max_norm / (total + 1e-6))
    if scale < 1:
        for grad in found.values():
            grad *= scale
    return total


# --8<-- [end:clip_grad_norm]


# --8<-- [start:lr_schedule]
def lr_schedule(
    step: float, *, max_lr: float, min_lr: float, warmup: float, total: float
) -> float:
    """The learning rate at `step`: a linear warm-up, then a cosine decay.

    nanoGPT's ``get_lr``: ``max_lr * (step + 1) / (warmup + 1)`` while
    ``step < warmup``; then half a cosine from `max_lr` down to `min_lr`,
    reached at ``step == total``; `min_lr` after that.

    Parameters
    ----------
    step : float
        The step, from 0; a float is allowed (an estimated step count, when
        the schedule runs on wall-clock time).
    max_lr, min_lr : float
        The peak and the final learning rates, ``0 <= min_lr <= max_lr``.
    warmup, total : float
        The step where the warm-up ends and the step where the decay ends,
        ``0 <= warmup < total``; the same unit as `step`.

    Returns
    -------
    float

    Examples
    --------
    >>> from opbyop import optim
    >>> schedule = dict(max_lr=1e-3, min_lr=1e-4, warmup=9, total=109)
    >>> steps = [0, 4, 59, 109, 500]
    >>> [round(optim.lr_schedule(s, **schedule), 8) for s in steps]
    [0.0001, 0.0005, 0.00055, 0.0001, 0.0001]
    """
    step = _at_least_zero(step, "step")
    max_lr = _at_least_zero(max_lr, "max_lr")
    min_lr = _at_least_zero(min_lr, "min_lr")
    warmup = _at_least_zero(warmup, "warmup")
    total = _number(total, "total")
    if min_lr > max_lr:
        raise ValueError(
            f"min_lr ({min_lr}) must be at most max_lr ({max_lr})"
        )
    if not total > warmup:
        raise ValueError(
            f"total ({total}) must be more than warmup ({warmup})"
        )
    if step < warmup:
        return max_lr * (step + 1) / (warmup + 1)
    if step > total:
        return min_lr
    done = (step - warmup) / (total - warmup)  # 0 to 1 along the decay
    return min_lr + 0.5 * (1 + math.cos(math.pi * done)) * (max_lr - min_lr)


# --8<-- [end:lr_schedule]
