"""Word-window features for any corpus of ``[form, ...]`` tokens.

Lower-cased word, 2- and 3-letter suffixes, first letter, shape class of the
first character, digit and hyphen flags, previous and next word: about 7
attributes per token. Used on UD English EWT (the GE and entropy
replications) and on BC2GM and EWT in the suite's corpora item.
"""

__all__ = ["token_features"]


def token_features(sentence):
    """Dict features of one sentence of [form] tokens."""
    words = [token[0] for token in sentence]
    lower = [w.lower() for w in words]
    out = []
    for i, w in enumerate(words):
        lw = lower[i]
        first = w[:1]
        shape = ("X" if first.isupper() else "x" if first.isalpha() else
                 "d" if first.isdigit() else "p")
        f = {"w": lw, "s2": lw[-2:], "s3": lw[-3:], "p1": lw[:1], "shape": shape,
             "w-1": lower[i - 1] if i else "<s>",
             "w+1": lower[i + 1] if i + 1 < len(words) else "</s>"}
        if any(c.isdigit() for c in w):
            f["digit"] = True
        if "-" in w:
            f["hyphen"] = True
        out.append(f)
    return out
