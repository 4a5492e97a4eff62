from wordcount import count_words, most_common


def test_case_and_punctuation():
    assert dict(count_words("The cat. the CAT!")) == {"the": 2, "cat": 2}


def test_commas_and_questions():
    assert dict(count_words("Yes, yes? No.")) == {"yes": 2, "no": 1}


def test_most_common():
    assert most_common("b a B, c b. A", 2) == ["b", "a"]
