"""第 11 章练习的检查：参考实现通过；常见的错误写法（只换第一处、从右往左、漏掉最后一个元素；
不乘频数、把块拼在一起数、平局取错）被抓住。"""
from collections import Counter

import numpy as np

from tfcourse.exercises import EXERCISES, check


def _hidden(exercise_id, seed=0):
    return EXERCISES[exercise_id].generate(np.random.default_rng(seed))


def test_references_pass_public_and_hidden_cases():
    for exercise_id in ("ch11.merge_pair", "ch11.best_pair"):
        ref = EXERCISES[exercise_id].reference
        assert check(exercise_id, ref).passed
        for seed in range(3):
            assert check(exercise_id, ref, cases=_hidden(exercise_id, seed)).passed


def _merge_first_only(ids, pair, new_id):
    ids = list(ids)
    for i in range(len(ids) - 1):
        if (ids[i], ids[i + 1]) == tuple(pair):
            return ids[:i] + [new_id] + ids[i + 2:]
    return ids


def _merge_right_to_left(ids, pair, new_id):
    out, i = [], len(ids) - 1
    while i >= 0:
        if i > 0 and (ids[i - 1], ids[i]) == tuple(pair):
            out.append(new_id)
            i -= 2
        else:
            out.append(ids[i])
            i -= 1
    return out[::-1]


def _merge_drops_last(ids, pair, new_id):
    out, i = [], 0
    while i < len(ids) - 1:
        if (ids[i], ids[i + 1]) == tuple(pair):
            out.append(new_id)
            i += 2
        else:
            out.append(ids[i])
            i += 1
    return out


def test_wrong_merges_fail():
    for wrong in (_merge_first_only, _merge_right_to_left, _merge_drops_last):
        assert not check("ch11.merge_pair", wrong).passed, wrong.__name__
        assert not check("ch11.merge_pair", wrong, cases=_hidden("ch11.merge_pair")).passed


def _counts(words, freqs, weighted=True):
    c = Counter()
    for w, f in zip(words, freqs):
        for p in zip(w, w[1:]):
            c[p] += f if weighted else 1
    return c


def test_wrong_best_pairs_fail():
    def unweighted(words, freqs):
        c = _counts(words, freqs, weighted=False)
        return min(c, key=lambda p: (-c[p], p))

    def across_chunks(words, freqs):
        flat = [x for w, f in zip(words, freqs) for _ in range(f) for x in w]
        c = Counter(zip(flat, flat[1:]))
        return min(c, key=lambda p: (-c[p], p))

    def first_seen(words, freqs):
        return _counts(words, freqs).most_common(1)[0][0]

    def largest_on_ties(words, freqs):
        c = _counts(words, freqs)
        return max(c, key=lambda p: (c[p], p))

    result = check("ch11.best_pair", unweighted)
    assert not result.passed and "数值不对" in " ".join(result.messages)
    for wrong in (across_chunks, first_seen, largest_on_ties):
        assert not check("ch11.best_pair", wrong).passed, wrong.__name__
