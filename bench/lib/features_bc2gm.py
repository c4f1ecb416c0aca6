"""Gene-mention (BC2GM) token features as sscrf feature dicts.

Shared by the BC2GM benchmarks. :func:`sentence_features` maps a sentence
(a list of token strings) to one feature dict per token; str values become
``name=value`` attributes, ``True`` values binary attributes (``False`` is
left out, i.e. absent).

Features of the token at position ``t`` (names as they appear in the dict):

======================  ====================================================
``w``                   the word
``lw``                  the word, lowercased
``p1`` .. ``p4``        prefixes of length 1-4 (only when the word is at
                        least that long)
``s1`` .. ``s4``        suffixes of length 1-4 (same rule)
``shape``               word shape: upper → ``X``, lower → ``x``, digit →
                        ``d``, any other character kept (``IL-2`` → ``XX-d``)
``cshape``              collapsed shape: runs of one shape character
                        collapsed to one (``IL-2`` → ``X-d``, ``Kinase`` → ``Xx``)
``has_digit``           some character is a digit
``all_caps``            every cased character is upper case and there is one
                        (``IL``, ``P53`` yes; ``p53``, ``-`` no)
``has_hyphen``          contains ``-``
``greek``               the lowercased word contains a Greek letter name
                        (alpha, beta, gamma, delta, epsilon, zeta, eta,
                        theta, iota, kappa, lambda, mu, nu, xi, omicron, pi,
                        rho, sigma, tau, upsilon, phi, chi, psi, omega) as a
                        whole word or a run of letters: ``alpha``,
                        ``TNF-alpha``, ``IFNgamma``; the short names (eta,
                        mu, nu, xi, pi, tau, chi, psi, rho, phi) only as the
                        whole word or a hyphen/digit-delimited part, so that
                        ``protein`` does not fire for ``pi``
``w[k]``, ``lw[k]``,    word, lowercase and shape of the token at offset
``shape[k]``            ``k`` ∈ {−2, −1, +1, +2}; nothing when the offset
                        leaves the sentence
``__BOS__``/``__EOS__`` first / last token of the sentence
======================  ====================================================

No bias attribute is added: the CRF's start/end weights and transitions
already model label frequencies.
"""

import re

__all__ = ["GREEK", "word_shape", "collapsed_shape", "token_features", "sentence_features",
           "corpus_features"]

#: Greek letter names, longest first.
GREEK = ("omicron", "upsilon", "epsilon", "lambda", "alpha", "gamma", "delta", "theta", "kappa",
         "sigma", "omega", "beta", "zeta", "iota", "eta", "tau", "chi", "psi", "rho", "phi",
         "mu", "nu", "xi", "pi")
_LONG = [g for g in GREEK if len(g) >= 4]
_SHORT = [g for g in GREEK if len(g) < 4]
# Long names anywhere; short names only delimited by start/end, '-', digits or '_'.
_GREEK_RE = re.compile("(?:%s)|(?:(?<![a-z])(?:%s)(?![a-z]))"
                       % ("|".join(_LONG), "|".join(_SHORT)))


def _shape_char(c):
    if c.isupper():
        return "X"
    if c.islower():
        return "x"
    if c.isdigit():
        return "d"
    return c


def word_shape(word):
    """``IL-2`` → ``XX-d``; letters without case (and other symbols) are kept."""
    return "".join(_shape_char(c) for c in word)


def collapsed_shape(word):
    """Word shape with runs of the same character collapsed: ``IL-22a`` → ``X-dx``."""
    out = []
    for c in word_shape(word):
        if not out or out[-1] != c:
            out.append(c)
    return "".join(out)


def token_features(word):
    """Features of one word taken alone (no context), as a dict."""
    lw = word.lower()
    f = {"w": word, "lw": lw, "shape": word_shape(word), "cshape": collapsed_shape(word)}
    for k in range(1, 5):
        if len(word) >= k:
            f[f"p{k}"] = word[:k]
            f[f"s{k}"] = word[-k:]
    if any(c.isdigit() for c in word):
        f["has_digit"] = True
    if any(c.isupper() for c in word) and not any(c.islower() for c in word):
        f["all_caps"] = True
    if "-" in word:
        f["has_hyphen"] = True
    if _GREEK_RE.search(lw):
        f["greek"] = True
    return f


def sentence_features(words):
    """One feature dict per token of ``words`` (a list of str).

    A BC2GM sentence read with :func:`sscrf.io.read_conll` is a list of
    one-column tokens; pass ``[tok[0] for tok in sentence]``.
    """
    n = len(words)
    own = [token_features(w) for w in words]
    out = []
    for t in range(n):
        f = dict(own[t])
        for k in (-2, -1, 1, 2):
            u = t + k
            if 0 <= u < n:
                o = own[u]
                f[f"w[{k}]"] = o["w"]
                f[f"lw[{k}]"] = o["lw"]
                f[f"shape[{k}]"] = o["shape"]
        out.append(f)
    if n:
        out[0]["__BOS__"] = True
        out[-1]["__EOS__"] = True
    return out


def corpus_features(sentences):
    """:func:`sentence_features` of each sentence of a ConllCorpus' ``tokens`` list."""
    return [sentence_features([tok[0] for tok in s]) for s in sentences]
