"""Caption generation: training templates and held-out evaluation templates, built from family nouns, attribute
phrases and shape-neutral filler words (sizes, colours, materials) that are spread evenly over all families so they
carry no family information."""
import random

import shapes as S

FILLERS = ["small", "big", "large", "little", "tiny", "huge", "simple", "nice", "cute", "cool", "classic", "old",
           "new", "toy", "cartoon", "stylized", "red", "blue", "green", "yellow", "white", "black", "brown", "gray",
           "grey", "pink", "orange", "purple", "golden", "silver", "wooden", "metal", "plastic", "shiny", "plain"]

TRAIN_TEMPLATES = [
    "{a} {adj} {noun}{ph}",
    "{a} {adj} {noun}{ph}",
    "{adj} {noun}{ph}",
    "a 3d model of {a} {adj} {noun}{ph}",
    "3d model of {a} {adj} {noun}{ph}",
    "the {adj} {noun}{ph}",
    "a render of {a} {adj} {noun}{ph}",
    "{a} {adj} {noun}{ph}, 3d",
    "an object: {a} {adj} {noun}{ph}",
    "{noun}",
    "{a} {noun}",
]

# phrasings never used for training (checked against the training pool as well)
EVAL_TEMPLATES = [
    "model of the {adj} {noun}{ph}",
    "{a} {adj} {noun}{ph} 3d model",
    "render of the {adj} {noun}{ph}",
    "3d {adj} {noun}{ph}",
]

VOWELS = "aeiou"


def article(word):
    return "an" if word[:1] in VOWELS else "a"


def _compatible(noun_cond, labels):
    return all(labels.get(k) == v for k, v in noun_cond.items())


def make_caption(fam, vals, rng, templates, p_mention=0.75, p_filler=0.35, mention_all=False):
    labels = fam.attr_labels(vals)
    nouns = [n for n, cond in fam.nouns if _compatible(cond, labels)]
    noun = rng.choice(nouns)
    adjs, phrases = [], []
    for a, v in zip(fam.attrs, vals):
        val = a.values[v]
        if not (mention_all or rng.random() < p_mention):
            continue
        if not val.adjs and not val.phrases:
            continue
        use_adj = val.adjs and (not val.phrases or rng.random() < 0.6)
        if use_adj:
            adjs.append(rng.choice(val.adjs))
        else:
            phrases.append(rng.choice(val.phrases))
    rng.shuffle(adjs)
    if rng.random() < p_filler:
        adjs.insert(rng.randrange(len(adjs) + 1), rng.choice(FILLERS))
    tpl = rng.choice(templates)
    if "{adj}" not in tpl and (adjs or phrases) and mention_all:
        tpl = templates[0]
    adj = " ".join(adjs)
    ph = ""
    if phrases:
        ph = " " + rng.choice([" and ", " "]).join(phrases)
    first = (adj.split(" ")[0] if adj else noun)
    text = tpl.format(a=article(first), adj=adj, noun=noun, ph=ph)
    return " ".join(text.split()).replace(" ,", ",")


def caption_pool(fam_idx, combo, n, seed, templates=TRAIN_TEMPLATES, mention_all=False):
    fam = S.FAMILIES[fam_idx]
    vals = fam.combo_to_attr(combo)
    rng = random.Random(seed * 7 + fam_idx * 1009 + combo * 97)
    return [make_caption(fam, vals, rng, templates, mention_all=mention_all) for _ in range(n)]


def all_training_captions(n_per_combo, seed):
    """{(fam_idx, combo): [captions]}"""
    out = {}
    for fi, fam in enumerate(S.FAMILIES):
        for c in range(fam.combos()):
            out[(fi, c)] = caption_pool(fi, c, n_per_combo, seed)
    return out


def eval_prompts(seed, per_combo=1, extra_plain=2, train_set=None, min_attr_prompts=0):
    """Held-out prompts: for each family and attribute combination `per_combo` prompts that mention every attribute
    (more where the family has few combinations, so that every family gets at least `min_attr_prompts` of them),
    plus `extra_plain` per family that mention nothing but the noun. Returns list of dicts."""
    out = []
    rng = random.Random(seed + 99)
    for fi, fam in enumerate(S.FAMILIES):
        n_c = max(per_combo, -(-min_attr_prompts // fam.combos()))
        seen = set()
        for c in range(fam.combos()):
            vals = fam.combo_to_attr(c)
            got = 0
            tries = 0
            while got < n_c and tries < 50:
                tries += 1
                t = make_caption(fam, vals, rng, EVAL_TEMPLATES, p_filler=0.3, mention_all=True)
                if train_set is not None and t in train_set:
                    continue
                if n_c > 1 and t in seen:   # repeated prompts would only count the same result twice
                    continue
                seen.add(t)
                out.append(dict(text=t, family=fi, combo=c, attrs=list(vals), with_attrs=True))
                got += 1
        plain_nouns = [n for n, cond in fam.nouns if not cond]
        for j in range(extra_plain):
            noun = plain_nouns[(j + 1) % len(plain_nouns)]
            t = rng.choice(["model of the {n}", "{a} {n} 3d model", "render of the {n}", "3d {n}"]).format(
                n=noun, a=article(noun))
            if train_set is not None and t in train_set:
                continue
            out.append(dict(text=t, family=fi, combo=-1, attrs=None, with_attrs=False))
    return out


def known_words(captions):
    import re
    words = set()
    for t in captions:
        for w in t.lower().replace(",", " ").replace(":", " ").split():
            w = w.strip(".;:!?")
            if not w:
                continue
            words.add(w)
            if "-" in w:
                words.update(p for p in w.split("-") if p)
    return sorted(words)
