"""Bad input gets a ValueError that names the field or the request, in both reference samplers."""
import pytest
import torch

from course import problems
from course.loader import load_solution
from course.sampling_params import SamplingParams

SAMPLERS = [(name, problems.get(name).sampler_class) for name in ("p08", "p08-fast")]


@pytest.mark.parametrize("kwargs,field", [
    (dict(temperature=-0.1), "temperature"), (dict(temperature=float("nan")), "temperature"),
    (dict(temperature=float("inf")), "temperature"), (dict(top_p=0.0), "top_p"), (dict(top_p=1.5), "top_p"),
    (dict(top_p=float("nan")), "top_p"), (dict(repetition_penalty=0.0), "repetition_penalty"),
    (dict(repetition_penalty=-2.0), "repetition_penalty"), (dict(top_k=2.5), "top_k"), (dict(top_k=True), "top_k"),
    (dict(top_k="5"), "top_k"), (dict(seed=1.5), "seed"), (dict(seed="7"), "seed")])
def test_sampling_params_rejects_bad_values_naming_the_field(kwargs, field):
    with pytest.raises(ValueError, match=field):
        SamplingParams(**kwargs)


def test_sampling_params_accepts_the_edges():
    SamplingParams(temperature=0.0, top_k=0, top_p=1.0, repetition_penalty=1e-3, seed=0)
    SamplingParams(top_k=-1, top_p=1e-9, seed=2**63 - 1)


def bad_calls():
    ok = [SamplingParams(), SamplingParams(seed=1)]
    two = torch.zeros(2, 5)
    return [
        ("1-D logits", (torch.zeros(5), ["a"], ok[:1], [[]]), "2-D"),
        ("integer logits", (torch.zeros(2, 5, dtype=torch.long), ["a", "b"], ok, [[], []]), "floating"),
        ("not a tensor", ([[0.0] * 5], ["a"], ok[:1], [[]]), "logits"),
        ("too few req_ids", (two, ["a"], ok, [[], []]), "req_ids"),
        ("too many params", (two, ["a", "b"], ok + ok, [[], []]), "params"),
        ("too few prev_tokens", (two, ["a", "b"], ok, [[]]), "prev_tokens"),
        ("a req_id twice", (two, ["a", "a"], ok, [[], []]), "'a'"),
        ("token id >= V", (two, ["a", "b"], ok, [[], [5]]), "'b'"),
        ("negative token id", (two, ["a", "b"], ok, [[-1], []]), "'a'"),
        ("params of the wrong type", (two, ["a", "b"], [ok[0], {"seed": 1}], [[], []]), "'b'"),
    ]


@pytest.mark.parametrize("problem,cls", SAMPLERS)
@pytest.mark.parametrize("label,args,named", bad_calls(), ids=[c[0] for c in bad_calls()])
def test_sample_rejects_malformed_batches_naming_the_culprit(problem, cls, label, args, named):
    sampler = getattr(load_solution(problems.get(problem)), cls)()
    with pytest.raises(ValueError, match=named):
        sampler.sample(*args)


@pytest.mark.parametrize("problem,cls", SAMPLERS)
def test_an_empty_batch_and_a_free_of_an_unknown_id_are_fine(problem, cls):
    sampler = getattr(load_solution(problems.get(problem)), cls)()
    out = sampler.sample(torch.zeros(0, 5), [], [], [])
    assert out.dtype == torch.long and out.shape == (0,)
    sampler.free("never-seen")
