"""Known-buggy variants ("mutants") of the reference samplers, written as text patches, and the check
each one must fail. A patch that no longer applies makes the self-test fail loudly."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Mutant:
    name: str
    aimed_at: str          # the check id that must catch it
    patches: tuple         # ((old, new), ...) applied to the solution's text; each old must occur once
    bug: str               # what a learner would have done
    phrase: str | tuple = ""  # words the failure report (English) must contain: the diagnosis, not just the check;
    #                           a tuple lists every cause the grader may establish first (e.g. on another CPU's BLAS)

    wrong: str = ""        # a wrong cause an earlier grader named for this bug: the report must not say it

    def phrases(self) -> tuple:
        return self.phrase if isinstance(self.phrase, tuple) else (self.phrase,)

    def named_in(self, text: str) -> bool:
        """Does the report name one of the causes this mutant has, and not the wrong one it once got?"""
        return (any(p.lower() in text.lower() for p in self.phrases())
                and not (self.wrong and self.wrong.lower() in text.lower()))


SAMPLE_DRAW = "            tokens[i] = torch.multinomial(probs, 1, generator=generator)[0]          # scalar\n"

# patches that more than one mutant uses (the same bug, aimed at several checks)
IN_PLACE_DIVISION = (
    ("    out = logits.clone()                                                        # [V], never the caller's\n"
     "    if penalty == 1.0 or len(prev_tokens) == 0:\n        return out\n",
     "    if penalty == 1.0 or len(prev_tokens) == 0:\n        return logits\n    out = logits.clone()\n"),
    ("row = row / p.temperature", "row /= p.temperature"))
PENALTY_IN_PLACE = (("    out = logits.clone()                                                        # [V], never the caller's",
                     "    out = logits"),)
EMPTY_HISTORY_CRASHES = (("    if penalty == 1.0 or len(prev_tokens) == 0:\n        return out\n", ""),
                         ("torch.as_tensor(prev_tokens, dtype=torch.long, device=logits.device)",
                          "torch.tensor(prev_tokens, device=logits.device)"))        # torch.tensor([]) is float
DIVIDE_BEFORE_GREEDY = ((
    "            if p.temperature < GREEDY_TEMPERATURE:\n"
    "                tokens[i] = torch.argmax(row)\n"
    "                continue\n"
    "            row = row / p.temperature\n",
    "            row = row / p.temperature\n"
    "            if p.temperature < GREEDY_TEMPERATURE:\n"
    "                tokens[i] = torch.argmax(row)\n"
    "                continue\n"),)
TEMPERATURE_AFTER_FILTERS = (
    ("            row = row / p.temperature                                                # step 3: [V]\n", ""),
    ("            probs = torch.softmax(row, dim=-1)                                       # step 6: [V]\n",
     "            probs = torch.softmax(row / p.temperature, dim=-1)\n"))
TOP_P_BEFORE_TOP_K = ((
    "            row = apply_top_k(row, p.top_k)                                          # step 4: [V]\n"
    "            row = apply_top_p(row, p.top_p)                                          # step 5: [V]\n",
    "            row = apply_top_p(row, p.top_p)\n            row = apply_top_k(row, p.top_k)\n"),)
PENALTY_AFTER_TOP_K = (
    ("            row = apply_repetition_penalty(row, prev_tokens[i], p.repetition_penalty)  # step 1: [V]\n", ""),
    ("            row = apply_top_k(row, p.top_k)                                          # step 4: [V]\n",
     "            row = apply_top_k(row, p.top_k)\n"
     "            row = apply_repetition_penalty(row, prev_tokens[i], p.repetition_penalty)\n"),
    ("                tokens[i] = torch.argmax(row)\n",
     "                tokens[i] = torch.argmax(apply_repetition_penalty(row, prev_tokens[i], p.repetition_penalty))\n"))
TOP_P_BY_GATHER = (("remove = torch.empty_like(remove_sorted).scatter_(0, order, remove_sorted)", "remove = remove_sorted[order]"),)
BATCH_MAX_TOP_K = (("row = apply_top_k(row, p.top_k)", "row = apply_top_k(row, max(q.top_k for q in params))"),)
TOP_K_EXACTLY_K = (('return logits.masked_fill(logits < kth_value, float("-inf"))',
                    'keep = torch.topk(logits, top_k).indices\n'
                    '    return torch.full_like(logits, float("-inf")).index_copy(0, keep, logits[keep])'),)

P08 = [
    Mutant("penalty_twice", "E1.penalty", ((
        "    seen = torch.unique(torch.as_tensor(prev_tokens, dtype=torch.long, device=logits.device))  # [n] distinct\n"
        "    values = out[seen]                                                          # [n]\n"
        "    out[seen] = torch.where(values > 0, values / penalty, values * penalty)    # [n]\n",
        "    for t in prev_tokens:\n"
        "        out[t] = out[t] / penalty if out[t] > 0 else out[t] * penalty\n"),), "penalises a repeated token once per occurrence", phrase='de-duplicate'),
    Mutant("divide_negatives", "E1.penalty", (("torch.where(values > 0, values / penalty, values * penalty)",
                                               "values / penalty"),), "divides negative logits too", phrase='negatives must be multiplied'),
    Mutant("penalty_in_place", "I2", PENALTY_IN_PLACE, "edits the caller's logits in place", phrase="fix E1.penalty first"),
    Mutant("top_k_in_place", "I2", (('return logits.masked_fill(logits < kth_value, float("-inf"))',
                                     'return logits.masked_fill_(logits < kth_value, float("-inf"))'),), "masks top-k in place", phrase='in place'),
    Mutant("drop_crossing_token", "E2.top_p", (("mass_before = torch.cumsum(probs, dim=-1) - probs",
                                                "mass_before = torch.cumsum(probs, dim=-1)"),
                                               ("remove_sorted = mass_before >= top_p", "remove_sorted = mass_before > top_p")),
           "removes the token that crosses top_p (cumsum > top_p)", phrase="the token that crosses top_p was removed"),
    Mutant("empty_keep_set", "I4", (("mass_before = torch.cumsum(probs, dim=-1) - probs",
                                     "mass_before = torch.cumsum(probs, dim=-1)"),
                                    ("    remove_sorted[0] = False                                                    # at least one token\n", "")),
           "can remove every token (tiny top_p -> NaN)", phrase='fix E2.top_p first'),
    Mutant("top_p_no_order_mapping", "E2.top_p", (("remove = torch.empty_like(remove_sorted).scatter_(0, order, remove_sorted)",
                                                   "remove = remove_sorted"),), "forgets to map the sorted decision back", phrase='expected {1, 3}'),
    Mutant("top_k_minus_one_only", "E2.top_k", (("if not 0 < top_k < vocab:", "if top_k == -1:"),), "treats only -1 as off", phrase='mean off'),
    Mutant("top_k_at_least_V", "E2.top_k", (("if not 0 < top_k < vocab:", "if top_k <= 0:"),), "crashes for top_k > V", phrase=''),
    Mutant("top_k_off_by_one", "E2.top_k", (("torch.topk(logits, top_k).values[-1]", "torch.topk(logits, min(top_k + 1, vocab)).values[-1]"),),
           "keeps k + 1 tokens", phrase='expected {0, 1}'),
    Mutant("greedy_before_penalty", "E1.greedy", (("tokens[i] = torch.argmax(row)", "tokens[i] = torch.argmax(logits[i])"),),
           "greedy rows skip the penalty", phrase='penalty comes after the greedy test'),
    Mutant("divide_before_greedy", "I3", DIVIDE_BEFORE_GREEDY,
        "divides by the temperature before the greedy test", phrase='before the greedy test'),
    Mutant("one_generator_for_batch", "I1", (("generator = self._generator(req_id, p, logits.device)",
                                              "generator = self._generator(req_ids[0], params[0], logits.device)"),),
           "one generator (the first row's) for the whole batch", phrase='its own generator'),
    Mutant("generator_per_seed", "I1", (("        if req_id not in self._seeded:\n"
                                         "            self._seeded[req_id] = torch.Generator(device=device).manual_seed(params.seed)\n"
                                         "        return self._seeded[req_id]\n",
                                         "        if params.seed not in self._seeded:\n"
                                         "            self._seeded[params.seed] = torch.Generator(device=device).manual_seed(params.seed)\n"
                                         "        return self._seeded[params.seed]\n"),), "shares a generator between requests with the same seed", phrase='not one per seed'),
    Mutant("global_rng", "I5", (("torch.multinomial(probs, 1, generator=generator)", "torch.multinomial(probs, 1)"),),
           "draws from torch's global RNG", phrase=''),
    Mutant("global_rng_seen_alone", "E3", (("torch.multinomial(probs, 1, generator=generator)", "torch.multinomial(probs, 1)"),),
           "draws from torch's global RNG: E3's second sampler differs before any peer",
           phrase="follow torch's global random state", wrong="class attribute"),
    Mutant("new_generator_every_step", "I5", (("        if req_id not in self._seeded:\n", "        if True:\n"),),
           "re-creates (re-seeds) the generator at every step", phrase='re-seeded every step'),
    Mutant("free_keeps_generator", "I5", (("        self._seeded.pop(req_id, None)", "        pass"),), "free() keeps the generator", phrase='free must drop'),
    Mutant("generators_shared_by_samplers", "I5", (("class Sampler:\n", "_ALL = {}\n\n\nclass Sampler:\n"),
                                                    ("        self._seeded = {}", "        self._seeded = _ALL")),
           "keeps the generators in a module-level dict", phrase='shared by all'),
    Mutant("unseeded_reseeded_every_step", "I6", (("            if device not in self._shared:\n", "            if True:\n"),),
           "unseeded requests get a fresh generator at every step", phrase='shared generator is rebuilt'),
    Mutant("one_multinomial_over_batch", "I1", (
        ("        tokens = torch.empty(len(req_ids), dtype=torch.long, device=logits.device)  # [B]\n",
         "        tokens = torch.empty(len(req_ids), dtype=torch.long, device=logits.device)  # [B]\n"
         "        rows = torch.zeros(len(req_ids), logits.shape[1], device=logits.device)\n"),
        ("            tokens[i] = torch.argmax(row)\n", "            rows[i, torch.argmax(row)] = 1.0\n"),
        ("            generator = self._generator(req_id, p, logits.device)\n" + SAMPLE_DRAW,
         "            rows[i] = probs\n"),
        ("        return tokens\n",
         "        g = self._generator(req_ids[0], params[0], logits.device)\n"
         "        return torch.multinomial(rows, 1, generator=g)[:, 0]\n")), "one multinomial over the whole [B, V]", phrase='its own generator'),
    Mutant("float_output", "S6", (("tokens = torch.empty(len(req_ids), dtype=torch.long", "tokens = torch.empty(len(req_ids), dtype=torch.float32"),),
           "returns float tokens", phrase='LongTensor'),
    Mutant("column_output", "S6", (("        return tokens\n", "        return tokens[:, None]\n"),), "returns [B, 1]", phrase='drop the last dim'),
    Mutant("rows_sorted_by_id", "S6", (("        return tokens\n",
                                        "        return tokens[sorted(range(len(req_ids)), key=lambda i: str(req_ids[i]))]\n"),),
           "returns rows sorted by request id", phrase='order is not'),
    Mutant("low_precision_math", "S0", (("row = logits[i].float()", "row = logits[i].clone()"),), "computes in bf16/fp16", phrase='the same row given in fp32 is right'),
    Mutant("top_p_before_top_k", "S1-5", TOP_P_BEFORE_TOP_K, "top-p before top-k", phrase='top-p before top-k'),
    Mutant("temperature_after_filters", "S1-5", TEMPERATURE_AFTER_FILTERS, "tempers after the filters", phrase='the temperature after top-k/top-p'),
    Mutant("penalty_after_top_k", "S1-5", PENALTY_AFTER_TOP_K,
        "penalises after top-k", phrase='top-k before the penalty'),
    Mutant("temperature_ignored", "E2.temperature", (("            row = row / p.temperature                                                # step 3: [V]\n", ""),),
           "forgets the temperature", phrase='does not use the temperature'),
    Mutant("temperature_multiplied", "E2.temperature", (("row = row / p.temperature", "row = row * p.temperature"),),
           "multiplies by the temperature", phrase='multiplied by the temperature'),
    Mutant("history_ignored", "E1.greedy", (("apply_repetition_penalty(row, prev_tokens[i], p.repetition_penalty)",
                                             "apply_repetition_penalty(row, [], p.repetition_penalty)"),), "sample() ignores prev_tokens", phrase='does not apply the penalty'),
    Mutant("seeded_by_request_id", "I5", (("self._seeded[req_id] = torch.Generator(device=device).manual_seed(params.seed)",
                                           "self._seeded[req_id] = torch.Generator(device=device).manual_seed(sum(map(ord, str(req_id))))"),),
           "seeds the generator from the req_id, not from params.seed", phrase='decided by the seed alone'),
    Mutant("reseeded_with_call_count", "I5", (
        ("        validate_sample_inputs(logits, req_ids, params, prev_tokens)\n",
         "        validate_sample_inputs(logits, req_ids, params, prev_tokens)\n        self.calls = getattr(self, 'calls', 0) + 1\n"),
        ("            generator = self._generator(req_id, p, logits.device)\n",
         "            generator = self._generator(req_id, p, logits.device)\n"
         "            generator.manual_seed(p.seed + self.calls) if p.seed is not None else None\n")),
        "re-seeds with seed + the number of sample() calls", phrase=''),
    Mutant("forgets_absent_requests", "I1", (
        ("        validate_sample_inputs(logits, req_ids, params, prev_tokens)\n",
         "        validate_sample_inputs(logits, req_ids, params, prev_tokens)\n"
         "        self._seeded = {r: g for r, g in self._seeded.items() if r in req_ids}\n"),),
        "drops the generators of requests not in this batch (a preempted request restarts its stream)", phrase='its own generator'),
    # issue 9's blind spots ------------------------------------------------------------------------------
    Mutant("greedy_only_at_zero", "I3.edges", (("if p.temperature < GREEDY_TEMPERATURE:", "if p.temperature == 0:"),),
           "treats only T == 0 as greedy", phrase="is greedy too"),
    Mutant("greedy_at_threshold", "I3.edges", (("if p.temperature < GREEDY_TEMPERATURE:", "if p.temperature <= GREEDY_TEMPERATURE:"),),
           "treats T = 1e-5 as greedy", phrase="is not greedy"),
    Mutant("temperature_floored", "E2.small_t", (("row = row / p.temperature", "row = row / max(p.temperature, 0.01)"),),
           "clamps the temperature to at least 0.01", phrase="clamped up to 0.01"),
    Mutant("penalty_min_trick", "E1.penalty", (("torch.where(values > 0, values / penalty, values * penalty)",
                                                "torch.minimum(values / penalty, values * penalty)"),),
           "min(v / p, v * p): right for p > 1 only", phrase="penalty < 1"),
    Mutant("penalty_recent_history_only", "E1.penalty", (("torch.as_tensor(prev_tokens, dtype=torch.long",
                                                          "torch.as_tensor(list(prev_tokens)[-64:], dtype=torch.long"),),
           "penalises only the last 64 tokens", phrase="whole history"),
    Mutant("penalty_in_low_precision", "E1.history", (
        ("            row = logits[i].float()                                                  # step 0: [V] fp32\n"
         "            row = apply_repetition_penalty(row, prev_tokens[i], p.repetition_penalty)  # step 1: [V]\n",
         "            row = apply_repetition_penalty(logits[i], prev_tokens[i], p.repetition_penalty).float()\n"),),
           "applies the penalty before converting to fp32", phrase="low precision"),
    Mutant("penalty_pads_histories_with_zero", "E1.history", (
        ("apply_repetition_penalty(row, prev_tokens[i], p.repetition_penalty)",
         "apply_repetition_penalty(row, list(prev_tokens[i]) + [0] * (max(len(h) for h in prev_tokens) - len(prev_tokens[i])), "
         "p.repetition_penalty)"),), "pads the histories to one length with token 0, which then gets penalised",
           phrase="pad"),
    Mutant("top_k_exactly_k", "E2.top_k", TOP_K_EXACTLY_K,
           "keeps exactly k tokens, dropping ties with the k-th", phrase="tied with the k-th"),
    Mutant("top_p_strict_boundary", "E2.top_p", (("remove_sorted = mass_before >= top_p", "remove_sorted = mass_before > top_p"),),
           "removes a token only when the mass before it exceeds top_p", phrase="not >"),
    Mutant("seed_zero_is_unseeded", "I1", (("if params.seed is None:", "if not params.seed:"),), "if not seed: seed 0 counts as no seed",
           phrase="0 is a seed"),
    Mutant("unseeded_share_a_constant_seed", "I5", ((
        "            if device not in self._shared:\n"
        "                self._shared[device] = torch.Generator(device=device).manual_seed(torch.initial_seed())\n"
        "            return self._shared[device]\n",
        "            return torch.Generator(device=device).manual_seed(1234)\n"),),
        "every unseeded row gets a new generator with one constant seed", phrase="share the sampler's one generator"),
    Mutant("batch_wide_max", "I1", (("            probs = torch.softmax(row, dim=-1)                                       # step 6: [V]\n",
                                     "            e = torch.exp(row - logits.float().max())\n            probs = e / e.sum()\n"),),
           "subtracts the batch's max, not the row's, before exp", phrase="over the whole batch"),
    Mutant("output_in_sorted_id_order", "E3", (("        return tokens\n",
                                                "        return tokens[sorted(range(len(req_ids)), key=lambda j: str(req_ids[j]))]\n"),),
           "returns the tokens sorted by request id; E3 sees it first and must blame the order, not the generators",
           phrase="fix S6 first"),
    Mutant("greedy_last_of_tied_maxima", "I3.edges", (("tokens[i] = torch.argmax(row)", "tokens[i] = (row == row.max()).nonzero()[-1, 0]"),),
           "greedy takes the last of equal maxima, not torch.argmax's first", phrase="first of equal maxima"),
    Mutant("generator_rebuilt_on_new_seed", "I5", (("        if req_id not in self._seeded:",
                                                    "        if req_id not in self._seeded or self._seeded[req_id].initial_seed() != params.seed:"),),
           "makes a new generator when a request's seed changes without free", phrase="a later seed for the same id changes nothing"),
    Mutant("free_of_unknown_id_raises", "I1", (("        self._seeded.pop(req_id, None)", "        del self._seeded[req_id]"),),
           "free() raises KeyError for an id that has no generator (an unseeded peer leaving)", phrase="does nothing"),
    Mutant("sample_clamps_top_k_zero_to_one", "E2.off", (("row = apply_top_k(row, p.top_k)", "row = apply_top_k(row, max(p.top_k, 1))"),),
           "sample() turns top_k = 0 (off) into 1 before calling a correct apply_top_k", phrase="treats top_k = 0 as top_k = 1"),
    Mutant("sample_top_k_keeps_one_more", "E1.history", (("row = apply_top_k(row, p.top_k)",
                                                          "row = apply_top_k(row, p.top_k + 1 if 0 < p.top_k < row.numel() - 1 else p.top_k)"),),
           "sample() keeps k + 1 tokens although apply_top_k alone is right", phrase="sample() filters differently"),
    Mutant("sample_empties_tiny_top_p", "I3", (("row = apply_top_p(row, p.top_p)",
                                                "row = apply_top_p(row, p.top_p) if p.top_p > 1e-6 else torch.full_like(row, float('-inf'))"),),
           "sample() removes every token when top_p is tiny", phrase="does sample() remove every token"),
    Mutant("greedy_argmax_of_divided_row", "I3.edges", (("tokens[i] = torch.argmax(row)", "tokens[i] = torch.argmax(row / max(p.temperature, 1e-5))"),),
           "greedy takes the argmax of row / max(T, 1e-5): huge values overflow and tie", phrase="overflow to inf"),
    Mutant("batch_wide_top_k", "E3", (("row = apply_top_k(row, p.top_k)",
                                       "row = apply_top_k(row, min([q.top_k for q in params if q.top_k > 0], default=p.top_k))"),),
           "applies the smallest top_k in the batch to every row", phrase="one peer with top_k=3, seed=99 does"),
    Mutant("int32_output", "S6", (("tokens = torch.empty(len(req_ids), dtype=torch.long,", "tokens = torch.empty(len(req_ids), dtype=torch.int32,"),),
           "returns int32 token ids", phrase="its dtype is int32"),
    Mutant("tensor_history_through_set", "E1.penalty", ((
        "    seen = torch.unique(torch.as_tensor(prev_tokens, dtype=torch.long, device=logits.device))  # [n] distinct\n"
        "    values = out[seen]                                                          # [n]\n"
        "    out[seen] = torch.where(values > 0, values / penalty, values * penalty)    # [n]\n",
        "    for t in set(prev_tokens):\n"
        "        out[t] = out[t] / penalty if out[t] > 0 else out[t] * penalty\n"),),
        "de-duplicates with set(), which keeps a tensor history's equal ids apart", phrase="read a tensor history like a list"),
    Mutant("divides_in_place_on_the_callers_row", "I2", IN_PLACE_DIVISION,
           "a shortcut returns the caller's row, then the temperature is divided in place", phrase="untouched"),
    Mutant("divides_in_place_seen_by_i6", "I6", IN_PLACE_DIVISION,
           "the same in-place division: I6 reuses one logits tensor for 2500 steps and must blame I2, not the draws",
           phrase="fix I2 first"),
    Mutant("free_drops_prefixed_ids", "I5", (("        self._seeded.pop(req_id, None)",
                                              "        for other in [r for r in self._seeded if str(r).startswith(str(req_id))]:\n"
                                              "            self._seeded.pop(other)"),),
           "free('r1') also drops 'r10' (ids matched by prefix)", phrase="free drops that one req_id only"),
    Mutant("top_p_by_gather", "E2.top_p", TOP_P_BY_GATHER,
           "maps the sorted decision back with the permutation (a gather), not its inverse (a blind-round file)",
           phrase="back with a gather"),
    Mutant("top_p_gather_seen_by_s6", "S6", TOP_P_BY_GATHER,
           "maps the sorted decision back with the permutation, not its inverse: S6 must blame top-p, not the order",
           phrase="fix E2.top_p first"),
    Mutant("top_p_gather_crash_seen_by_i4", "I4", TOP_P_BY_GATHER,
           "the same: a row with -inf keeps only -inf and multinomial raises; the crash is explained by top-p",
           phrase="fix E2.top_p first"),
    Mutant("top_p_strict_seen_by_i6", "I6", (("remove_sorted = mass_before >= top_p", "remove_sorted = mass_before > top_p"),),
           "the strict boundary: I6's four equal tokens must blame apply_top_p, not a filter of sample()'s own",
           phrase="fix E2.top_p first"),
    Mutant("batch_max_top_k_seen_by_i6", "I6", BATCH_MAX_TOP_K,
           "applies the batch's largest top_k to every row (top-k off rows too)", phrase="batches of rows with its own params fits"),
    Mutant("batch_max_top_k_seen_by_i1", "I1", BATCH_MAX_TOP_K,
           "the same, in I1: the peers' params, not the random numbers", phrase="peers with its own params do not change it"),
    Mutant("top_k_exactly_k_seen_by_i3_edges", "I3.edges", TOP_K_EXACTLY_K,
           "drops ties with the k-th: I3.edges' top_k=1 over two maxima must blame apply_top_k, not an argmax shortcut",
           phrase="fix E2.top_k first"),
    Mutant("greedy_tokens_first", "I1", (("        return tokens\n",
                                          "        first = [i for i, p in enumerate(params) if p.temperature < GREEDY_TEMPERATURE]\n"
                                          "        return tokens[first + [i for i in range(len(params)) if i not in first]]\n"),),
           "returns the greedy rows' tokens first, then the sampled ones: I1 must blame the order", phrase="fix S6 first"),
    Mutant("penalty_with_every_history", "I1", (("row = apply_repetition_penalty(row, prev_tokens[i], p.repetition_penalty)",
                                                 "row = apply_repetition_penalty(row, [t for h in prev_tokens for t in h], p.repetition_penalty)"),),
           "penalises each row with the union of the batch's histories", phrase="its own repetition_penalty off"),
    Mutant("appends_to_prev_tokens", "S1-5", ((SAMPLE_DRAW, SAMPLE_DRAW +
                                               "            if isinstance(prev_tokens[i], list):\n"
                                               "                prev_tokens[i].append(int(tokens[i]))\n"),),
           "appends each drawn token to the caller's history: S1-5 must blame I2, not the order of the steps",
           phrase="fix I2 first"),
    # feedback v3: two bugs that passed, and a wrong cause
    Mutant("top_k_minus_two_crashes", "E2.top_k", (("if not 0 < top_k < vocab:", "if top_k in (-1, 0) or top_k >= vocab:"),),
           "treats only -1 and 0 as off, so top_k = -2 reaches torch.topk and raises", phrase="any other negative value"),
    Mutant("top_k_minus_two_crashes_in_sample", "E2.off",
           (("if not 0 < top_k < vocab:", "if top_k in (-1, 0) or top_k >= vocab:"),),
           "the same, seen through sample()", phrase="any other negative value"),
    Mutant("temperature_in_logits_dtype", "S0", (("row = row / p.temperature",
                                                  "row = row / torch.tensor(p.temperature, dtype=logits.dtype)"),),
           "divides by the temperature as a tensor of the logits' dtype (0.7 -> 0.69921875 in bf16)",
           phrase="0.7 rounded to bfloat16"),
    Mutant("top_p_cumsum_in_fp16", "S0", (("mass_before = torch.cumsum(probs, dim=-1) - probs",
                                           "mass_before = torch.cumsum(probs.half(), dim=-1).float() - probs"),),
           "sums the top-p mass in float16", phrase="its sums are not exact enough", wrong="not a precision problem"),
    Mutant("free_rewinds_instead_of_dropping", "I5", (("self._seeded.pop(req_id, None)",
                                                       "if req_id in self._seeded:\n"
                                                       "            self._seeded[req_id].manual_seed(self._seeded[req_id].initial_seed())"),),
           "free() re-seeds the request's generator instead of deleting it", phrase="free must delete it",
           wrong="initialise the generator with manual_seed"),
    Mutant("one_seeded_generator_for_all", "I5", (("generator = self._generator(req_id, p, logits.device)",
                                                   "generator = self._generator('one-for-all', p, logits.device)"),),
           "every seeded request draws from one generator (free is right, but frees nothing that is used)",
           phrase="shared between requests", wrong="free must drop the generator"),
    Mutant("penalty_on_probabilities", "E1.greedy", (("row = apply_repetition_penalty(row, prev_tokens[i], p.repetition_penalty)",
                                                      "row = torch.log(apply_repetition_penalty(torch.softmax(row, -1), "
                                                      "prev_tokens[i], p.repetition_penalty))"),),
           "penalises the probabilities instead of the logits", phrase="penalty on the probabilities", wrong="at all"),
    Mutant("top_p_keeps_ties_of_the_crossing_token", "E2.top_p",
           (('    return logits.masked_fill(remove, float("-inf"))                            # [V]',
             '    return logits.masked_fill(logits < logits.masked_fill(remove, float("inf")).min(), float("-inf"))'),),
           "keeps every logit tied with the last kept one", phrase="all 4 equal tokens stayed", wrong="not >"),
    Mutant("every_seed_is_zero", "E1.history", (("manual_seed(params.seed)", "manual_seed(0)"),),
           "seeds every request's generator with 0: all streams are one", phrase="the seed changes nothing",
           wrong="a shortcut skips the penalty"),
    Mutant("top_k_minus_one_crashes_sample", "I1", (("row = apply_top_k(row, p.top_k)",
                                                     "row = row.masked_fill(row < torch.topk(row, p.top_k).values[-1], "
                                                     "float('-inf'))"),),
           "sample() calls torch.topk even for top_k = -1: a peer with the default params crashes the batch",
           phrase="a lone request with the default params", wrong="the token is still one its own params allow"),
    Mutant("rows_stay_in_fp16", "I4", (("row = logits[i].float()", "row = logits[i].clone()"),),
           "computes in the logits' dtype: huge fp16 logits overflow", phrase="overflows to inf in float16",
           wrong="mind -inf, huge values"),
    Mutant("top_p_near_one_is_off", "E2.top_p", (("if not 0 < top_p < 1:", "if not 0 < top_p < 0.99:"),),
           "treats top_p >= 0.99 as off", phrase="only top_p = 1 means off"),
    Mutant("top_p_near_one_is_off_in_sample", "E2.off", (("if not 0 < top_p < 1:", "if not 0 < top_p < 0.99:"),),
           "the same, seen through sample()", phrase="fix E2.top_p first"),
    Mutant("history_cached_per_request", "E1.history",
           (("row = apply_repetition_penalty(row, prev_tokens[i], p.repetition_penalty)",
             "row = apply_repetition_penalty(row, self.__dict__.setdefault('_hist', {}).setdefault(req_id, "
             "list(prev_tokens[i])), p.repetition_penalty)"),),
           "keeps each request's first history instead of the one each call passes",
           phrase="kept something of the request's history"),
    # feedback v4: the first block names the root cause (one block per cause; wrong= is what an earlier grader said)
    Mutant("empty_history_crash_seen_by_e2_off", "E2.off", EMPTY_HISTORY_CRASHES,
           "torch.tensor([]) is float: an empty history crashes the penalty; E2.off must report the crash at the line that "
           "raised, not the top-k off rule", phrase="apply_repetition_penalty raised IndexError", wrong="top-k is on only"),
    Mutant("empty_history_crash_seen_by_e1_history", "E1.history", EMPTY_HISTORY_CRASHES,
           "the same crash, seen through sample() with uneven histories", phrase="apply_repetition_penalty raised IndexError"),
    Mutant("empty_history_crash_seen_by_i3", "I3", EMPTY_HISTORY_CRASHES,
           "the same crash, seen through greedy rows: not the division before the greedy test",
           phrase="apply_repetition_penalty raised IndexError", wrong="T = 0 crashes"),
    Mutant("empty_history_crash_seen_by_s1_5", "S1-5", EMPTY_HISTORY_CRASHES,
           "the same crash, seen by the order of the steps", phrase="apply_repetition_penalty raised IndexError"),
    Mutant("temperature_after_filters_seen_by_i6", "I6", TEMPERATURE_AFTER_FILTERS,
           "tempers after the filters: I6's draws must name the order of the steps, not only the frequencies",
           phrase="fix S1-5 first", wrong="6 standard deviations"),
    Mutant("temperature_after_filters_seen_by_s0", "S0", TEMPERATURE_AFTER_FILTERS,
           "the same, seen by S0's bf16/fp16 rows", phrase="fix S1-5 first", wrong="also gives"),
    Mutant("divide_before_greedy_seen_by_e1_greedy", "E1.greedy", DIVIDE_BEFORE_GREEDY,
           "divides before the greedy test: E1.greedy's block must name that step as the root (as next: does)",
           phrase="the cause is step 2, the greedy test: fix I3 first", wrong="the cause is an earlier step"),
    Mutant("divide_before_greedy_seen_by_i3_edges", "I3.edges", DIVIDE_BEFORE_GREEDY,
           "the same, seen by I3.edges' tied rows: the same root, not a cause of its own", phrase="fix I3 first",
           wrong="overflow to inf and tie"),
    Mutant("penalty_in_place_seen_by_i6", "I6", PENALTY_IN_PLACE,
           "the penalty edits its input in place: I6's changed logits come from E1.penalty's step, not from sample()",
           phrase="fix E1.penalty first", wrong="fix I2 first"),
    Mutant("top_k_in_place_seen_by_i2", "I2", (('return logits.masked_fill(logits < kth_value, float("-inf"))',
                                                'return logits.masked_fill_(logits < kth_value, float("-inf"))'),),
           "masks top-k in place: I2 names apply_top_k", phrase="apply_top_k changed the tensor it was given, in place"),
    Mutant("top_p_in_place_seen_by_i4", "I4", (('    return logits.masked_fill(remove, float("-inf"))                            # [V]',
                                                '    return logits.masked_fill_(remove, float("-inf"))'),),
           "masks top-p in place: every check that calls apply_top_p names the same step",
           phrase="apply_top_p changed the tensor it was given, in place"),
    Mutant("top_p_strict_boundary_names_rank", "E2.top_p", (("remove_sorted = mass_before >= top_p",
                                                            "remove_sorted = mass_before > top_p"),),
           "the strict boundary: the report says which token by rank and id", phrase="the token ranked 2 (equal values rank by id: id 1)",
           wrong="the mass before token 2"),
    Mutant("penalty_after_top_k_seen_by_e1_history", "E1.history", PENALTY_AFTER_TOP_K,
           "penalises after top-k: E1.history's top_k=1 rows must name the order of the steps", phrase="fix S1-5 first"),
]
