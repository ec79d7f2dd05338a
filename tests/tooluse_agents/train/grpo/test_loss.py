"""The clipped objective, KL and token-level aggregation against hand-computed numbers."""

from __future__ import annotations

import math

import pytest
import torch

from tooluse_agents.train.grpo.loss import clipped_token_losses, describe, kl_k3, loss_terms


def _t(values):
    return torch.tensor(values, dtype=torch.float64)


def test_unclipped_tokens():
    # ratio 0.5/0.4 = 1.25 (inside [0.8, 1.28]) with A=+1 -> -1.25; ratio 1 with A=-2 -> +2
    losses, clipped = clipped_token_losses(
        _t([math.log(0.5), math.log(0.6)]), _t([math.log(0.4), math.log(0.6)]), _t([1.0, -2.0])
    )
    assert losses.tolist() == pytest.approx([-1.25, 2.0])
    assert clipped.tolist() == [False, False]


def test_separate_low_and_high_clip():
    ratios = [1.5, 0.5, 0.5, 1.5]
    adv = [1.0, -1.0, 1.0, -1.0]
    lp = torch.log(_t(ratios)).requires_grad_(True)
    losses, clipped = clipped_token_losses(lp, torch.zeros(4, dtype=torch.float64), _t(adv), 0.2, 0.28)
    # A>0, ratio 1.5: capped at 1 + 0.28; A<0, ratio 0.5: capped at 1 - 0.2; the other two are pessimistic-unclipped
    assert losses.tolist() == pytest.approx([-1.28, 0.8, -0.5, 1.5])
    assert clipped.tolist() == [True, True, False, False]
    losses.sum().backward()
    # d/dlogp of -ratio*A is -ratio*A; clipped tokens get no gradient
    assert lp.grad.tolist() == pytest.approx([0.0, 0.0, -0.5, 1.5])


def test_kl_k3():
    # d = log(0.25) - log(0.5) = -log 2: exp(d) - d - 1 = 0.5 + 0.6931 - 1
    assert kl_k3(_t([math.log(0.5)]), _t([math.log(0.25)])).item() == pytest.approx(0.5 + math.log(2) - 1)
    assert kl_k3(_t([-1.3]), _t([-1.3])).item() == 0.0


def test_token_level_aggregation_over_micro_batches():
    # 4 tokens split 3 + 1: the long sequence's tokens each weigh 1/4 (a sequence mean would give 1/6 and 1/2)
    lp = _t([0.0, 0.0, 0.0, 0.0]).requires_grad_(True)
    adv = _t([1.0, 1.0, 1.0, -3.0])
    a = loss_terms(lp[:3], lp[:3].detach(), adv[:3], normalizer=4)
    b = loss_terms(lp[3:], lp[3:].detach(), adv[3:], normalizer=4)
    (a.loss + b.loss).backward()
    assert lp.grad.tolist() == pytest.approx([-0.25, -0.25, -0.25, 0.75])
    assert (a.loss + b.loss).item() == pytest.approx((-1 - 1 - 1 + 3) / 4)
    stats = describe([a, b])
    assert stats["loss/policy"] == pytest.approx(0.0) and stats["loss/clip_frac"] == 0.0


def test_kl_and_entropy_terms_enter_the_loss():
    lp = _t([math.log(0.5)])
    terms = loss_terms(
        lp,
        lp,
        _t([0.0]),
        normalizer=1,
        ref_logprobs=_t([math.log(0.25)]),
        kl_coef=0.1,
        entropy=_t([2.0]),
        entropy_coef=0.01,
    )
    assert terms.loss.item() == pytest.approx(0.1 * (0.5 + math.log(2) - 1) - 0.01 * 2.0)
    assert describe([terms])["loss/entropy"] == pytest.approx(2.0)
    with pytest.raises(ValueError):
        loss_terms(lp, lp, _t([0.0]), normalizer=0)
