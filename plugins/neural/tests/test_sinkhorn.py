"""Sinkhorn scaling (losses/_sinkhorn.py) against the log-space iterates it replaced.

The reference below is the implementation before issue 35 (column then row normalisation by
``logsumexp`` on logarithms, autograd for the gradient), without its checkpointing, which
recomputed the same iterates. The new one must give the same matrices and gradients.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from ltr_bench_neural.losses import _sinkhorn  # noqa: E402
from ltr_bench_neural.losses._ndcg_terms import PAD_SCORE  # noqa: E402
from ltr_bench_neural.losses._sinkhorn import sinkhorn  # noqa: E402
from ltr_bench_neural.losses.neuralndcg import neural_sort, neuralndcg  # noqa: E402


def reference_sinkhorn(logp, mask, *, max_iter=50, tol=1e-6):
    pair_real = mask[:, :, None] & mask[:, None, :]
    neg = torch.full_like(logp, PAD_SCORE)
    done = 0
    while done < max_iter:
        n = min(5, max_iter - done)
        for _ in range(n):
            logp = torch.where(pair_real, logp - torch.logsumexp(logp, dim=-2, keepdim=True), neg)
            logp = torch.where(pair_real, logp - torch.logsumexp(logp, dim=-1, keepdim=True), neg)
        done += n
        if done >= max_iter:
            break
        with torch.no_grad():
            q = torch.where(pair_real, logp.exp(), torch.zeros_like(logp))
            err = torch.maximum((q.sum(dim=-1) - 1.0).abs(), (q.sum(dim=-2) - 1.0).abs())
            if bool((torch.where(mask, err, torch.zeros_like(err)) < tol).all()):
                break
    return torch.where(pair_real, logp.exp(), torch.zeros_like(logp))


def _inputs(seed, dtype, scale=1.0, B=5, L=17):
    """Scores and a mask with a full query, a short one, a 1-document and a 2-document one."""
    gen = torch.Generator().manual_seed(seed)
    s = scale * torch.randn(B, L, generator=gen, dtype=torch.float64)
    mask = torch.ones(B, L, dtype=torch.bool)
    mask[1, 11:] = False
    mask[2, 1:] = False
    mask[3, 2:] = False
    return s.to(dtype), mask


@pytest.mark.parametrize("max_iter", [1, 2, 5, 7, 12, 50])
@pytest.mark.parametrize("scale,temperature", [(1.0, 1.0), (30.0, 0.1), (1e4, 1.0)])
def test_sinkhorn_equals_the_log_space_iterates_in_float64(max_iter, scale, temperature):
    s, mask = _inputs(max_iter, torch.float64, scale)
    logp = neural_sort(s, mask, temperature, log=True)
    got = sinkhorn(logp, mask, max_iter=max_iter, tol=0.0)
    want = reference_sinkhorn(logp, mask, max_iter=max_iter, tol=0.0)
    torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-13)


@pytest.mark.parametrize("scale,temperature", [(1.0, 1.0), (30.0, 0.1), (1e4, 1.0), (1e6, 0.01)])
def test_sinkhorn_in_float32_is_as_close_to_float64_as_the_log_space_iterates(scale, temperature):
    # the float32 error at large scales comes from NeuralSort's logits, the same for both
    s, mask = _inputs(3, torch.float64, scale, B=4, L=60)
    exact = reference_sinkhorn(neural_sort(s, mask, temperature, log=True), mask, max_iter=12)
    s32 = s.float().requires_grad_(True)
    logp32 = neural_sort(s32, mask, temperature, log=True)
    got = sinkhorn(logp32, mask, max_iter=12)
    old = reference_sinkhorn(logp32.detach(), mask, max_iter=12)
    (got * torch.arange(60.0)).sum().backward()
    got = got.detach()
    assert float((got - old).abs().max()) <= 1e-6
    error, old_error = ((t.double() - exact).abs().max() for t in (got, old))
    assert float(error) <= float(old_error) + 1e-6
    assert torch.isfinite(s32.grad).all()


@pytest.mark.parametrize("max_iter,tol", [(1, 0.0), (5, 0.0), (7, 0.0), (12, 0.0), (50, 1e-6)])
def test_sinkhorn_gradient_equals_autograd_through_the_log_space_iterates(max_iter, tol):
    s, mask = _inputs(10 + max_iter, torch.float64)
    gen = torch.Generator().manual_seed(1)
    w = torch.randn(5, 17, 17, generator=gen, dtype=torch.float64)

    def grad(fn):
        x = s.clone().requires_grad_(True)
        (
            fn(neural_sort(x, mask, 0.5, log=True), mask, max_iter=max_iter, tol=tol) * w
        ).sum().backward()
        return x.grad

    torch.testing.assert_close(grad(sinkhorn), grad(reference_sinkhorn), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("max_iter", [1, 3, 6])
def test_sinkhorn_gradcheck(max_iter):
    s, mask = _inputs(20, torch.float64, B=4, L=6)
    mask[1, 4:] = False
    logp = neural_sort(s, mask, 1.0, log=True).detach().requires_grad_(True)
    assert torch.autograd.gradcheck(
        lambda t: sinkhorn(t, mask, max_iter=max_iter, tol=0.0), (logp,), atol=1e-6
    )


def test_neuralndcg_value_and_gradient_are_those_of_the_log_space_sinkhorn(monkeypatch):
    from ltr_bench_neural.losses import neuralndcg as module

    s, mask = _inputs(30, torch.float64, 2.0, B=6, L=25)
    gen = torch.Generator().manual_seed(2)
    y = torch.where(mask, torch.randint(0, 5, mask.shape, generator=gen).double(), -1.0)

    def value_and_grad():
        x = s.clone().requires_grad_(True)
        loss = neuralndcg(x, y, mask, max_iter=5)
        loss.backward()
        return loss.detach(), x.grad

    new = value_and_grad()
    monkeypatch.setattr(module, "sinkhorn", reference_sinkhorn)
    old = value_and_grad()
    torch.testing.assert_close(new, old, rtol=1e-10, atol=1e-13)


def test_sinkhorn_keeps_one_matrix_per_block_for_the_backward_pass():
    B, L, max_iter = 4, 30, 50
    s, mask = _inputs(40, torch.float64, B=B, L=L)
    logp = neural_sort(s.requires_grad_(True), mask, 1.0, log=True).detach().requires_grad_(True)
    saved = {}

    def pack(t):
        saved[(t.data_ptr(), t.shape)] = t.numel()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        sinkhorn(logp, mask, max_iter=max_iter, tol=0.0)
    matrices = sum(n for n in saved.values() if n == B * L * L)
    # 10 blocks: their inputs, the softmax's output and a few products (12 here; the
    # log-space iterates kept 102, hence their checkpointing above 2**24 elements)
    assert matrices <= (max_iter // _sinkhorn.BLOCK + 4) * B * L * L
