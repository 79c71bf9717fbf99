"""Sinkhorn scaling of NeuralSort's matrices to doubly stochastic, with a hand-written backward.

Input: ``log P`` [B, L, L] (row = position, column = document; each query's real n x n block,
every row summing to 1) and ``mask`` [B, L]. allRank's order: normalise the columns, then the
rows, ``max_iter`` times (one iteration = both), stopping early once every row and column sum
of every block is within ``tol`` of 1 (checked every :data:`BLOCK` iterations).

How, and why it is exact and safe:

1. The first column normalisation is done on logarithms: ``A = softmax(log P, dim=-2)``
   (0 outside the block). Whatever the scale of the scores, every column of ``A`` sums to 1
   and every row sums to at least 1/n^2 (row i holds an entry log P_ij >= -log n, and column
   j's log-sum is <= log n), so nothing below divides by an underflowed mass -- the case that
   turned float32 gradients into NaN when every step was done on probabilities.
2. The remaining normalisations keep two scaling vectors instead of rescaling the matrix:
   the iterate is ``diag(r) A diag(c)``; a row step sets ``r = 1 / (A c)``, a column step
   ``c = 1 / (A^T r)`` -- the same iterates as alternating division (Sinkhorn-Knopp), each
   step a batched matrix-vector product instead of a ``logsumexp`` over [B, L, L]. By
   induction each divisor lies in [1/n^2, n]: after a row step the entries are <= 1, so
   column sums are <= n, and each column sum is at least its previous value (1) over n.
3. Every :data:`BLOCK` iterations the scalings are absorbed (``A <- diag(r) A diag(c)``), so
   ``r`` and ``c`` are products of at most ``2 * BLOCK`` such divisors.
4. The backward pass of a block is written out (:class:`_Scaling`): the vectors' gradients
   run the steps in reverse (matrix-vector products again) and the gradient of ``A`` is one
   batched product of the block's T steps' stacked vectors ([B, L, T] x [B, T, L]), instead
   of autograd's T rank-one [B, L, L] products. It is checked against autograd on the
   log-space iterates (the implementation before issue 35) and by
   ``torch.autograd.gradcheck``; it is differentiable once (no double backward).

The memory kept for the backward pass is one [B, L, L] matrix per block plus vectors, so
no recomputation (checkpointing) is needed: 50 iterations keep 12 matrices (the log-space
iterates kept 102, plugins/neural/tests/test_sinkhorn.py).
"""

from __future__ import annotations

import torch
from torch.autograd.function import once_differentiable

__all__ = ["BLOCK", "sinkhorn"]

#: iterations per block: scalings absorbed and the stopping rule checked after each block
BLOCK = 5


def _rows(a: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """``A c`` for a [B, L, L] batch and [B, L] vectors: row sums of ``A diag(c)``."""
    return torch.bmm(a, c.unsqueeze(-1)).squeeze(-1)


def _cols(a: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
    """``A^T r``: column sums of ``diag(r) A``."""
    return torch.bmm(r.unsqueeze(1), a).squeeze(1)


class _Scaling(torch.autograd.Function):
    """``diag(r) A diag(c)`` after the normalisation steps ``steps`` (True = column step,
    False = row step), from r = c = 1. Padding rows and columns of ``A`` must be 0; their
    scalings stay 1 (masked divisors), so they stay 0."""

    @staticmethod
    def forward(ctx, a, mask, steps):
        one = torch.ones((), dtype=a.dtype, device=a.device)
        r = torch.ones(a.shape[:2], dtype=a.dtype, device=a.device)
        c = r
        history = []  # the vector each step produced
        for column in steps:
            if column:
                c = 1.0 / torch.where(mask, _cols(a, r), one)
                history.append(c)
            else:
                r = 1.0 / torch.where(mask, _rows(a, c), one)
                history.append(r)
        ctx.steps = steps
        ctx.save_for_backward(a, mask, *history)
        return r[:, :, None] * a * c[:, None, :]

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        a, mask, *history = ctx.saved_tensors
        steps = ctx.steps
        r = torch.ones(a.shape[:2], dtype=a.dtype, device=a.device)
        c = r
        before = []  # the vector each step used: r before a column step, c before a row step
        for column, new in zip(steps, history, strict=True):
            before.append(r if column else c)
            if column:
                c = new
            else:
                r = new
        # P = r A c: direct term, and the gradients of the final r and c
        grad_a = grad * (r[:, :, None] * c[:, None, :])
        ga = grad * a
        g_r = _rows(ga, c)
        g_c = _cols(ga, r)
        zero = torch.zeros((), dtype=a.dtype, device=a.device)
        left, right = [], []  # grad_a += sum_t left_t right_t^T (one bmm at the end)
        for column, new, used in zip(reversed(steps), reversed(history), reversed(before)):
            if column:  # c = 1 / u, u = A^T r_used
                g_u = torch.where(mask, -g_c * new * new, zero)
                g_c = torch.zeros_like(g_c)
                g_r = g_r + _rows(a, g_u)
                left.append(used)
                right.append(g_u)
            else:  # r = 1 / v, v = A c_used
                g_v = torch.where(mask, -g_r * new * new, zero)
                g_r = torch.zeros_like(g_r)
                g_c = g_c + _cols(a, g_v)
                left.append(g_v)
                right.append(used)
        grad_a = torch.baddbmm(grad_a, torch.stack(left, dim=-1), torch.stack(right, dim=1))
        return grad_a, None, None


def sinkhorn(
    logp: torch.Tensor, mask: torch.Tensor, *, max_iter: int = 50, tol: float = 1e-6
) -> torch.Tensor:
    """Sinkhorn scaling to doubly stochastic of each query's n x n block, from ``log P``
    (see the module docstring). Returns the scaled matrices (not logarithms), 0 outside
    each block."""
    pair_real = mask[:, :, None] & mask[:, None, :]
    a = torch.where(pair_real, torch.softmax(logp, dim=-2), logp.new_zeros(()))
    done = 0
    while done < max_iter:
        n = min(BLOCK, max_iter - done)
        if done == 0:  # iteration 1's column step was the softmax above
            steps = (False,) + (True, False) * (n - 1)
        else:
            steps = (True, False) * n
        a = _Scaling.apply(a, mask, steps)
        done += n
        if done >= max_iter:  # the last block: nothing to decide
            break
        with torch.no_grad():
            err = torch.maximum((a.sum(dim=-1) - 1.0).abs(), (a.sum(dim=-2) - 1.0).abs())
            if bool((torch.where(mask, err, torch.zeros_like(err)) < tol).all()):
                break
    return a
